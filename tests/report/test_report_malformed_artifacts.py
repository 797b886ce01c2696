"""``curate report`` on artifacts of the wrong shape (issue 29, item 8): every case is
an error id or a line naming the file and the field, never a traceback.

Each root is written by hand: a complete-looking artifact with one field retyped (or
removed, or NaN/Infinity). A malformed step artifact is listed on the page as
``artifact_invalid`` with its field (the rest of the page is still written); a
malformed ``flow_plan.json`` or ``flow_report.json`` is ``artifact_invalid``, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.cli import app

PRODUCER = {"step_id": "curate/x", "started_at": "2026-01-01T00:00:00Z",
            "completed_at": "2026-01-01T00:00:01Z", "seconds": 1.0}


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def _report(root: Path) -> Any:
    return CliRunner().invoke(app, ["report", str(root)])


#: (step artifact under the root, its text, the field the page must name)
STEP_CASES = {
    "producer_not_an_object": ("ingested/ingest_report.json",
                               {"schema_version": 2, "producer": 5}, "producer"),
    "error_not_an_object": ("ingested/ingest_report.json",
                            {"schema_version": 2, "producer": {}, "error": "boom"}, "error"),
    "decontamination_result_a_string": (
        "decontaminated/decontamination_report.json",
        {"schema_version": 1, "producer": PRODUCER, "result": "17 removed",
         "splits": {"train": {"documents": 3}}}, "result"),
    "audit_findings_a_number": ("audit/audit_report.json",
                                {"schema_version": 1, "producer": PRODUCER, "passed": False,
                                 "findings": 5}, "findings"),
    "subset_total_tokens_infinite": (
        "subset/subset_report.json",
        '{"schema_version": 1, "producer": {"completed_at": "2026-01-01T00:00:01Z"}, '
        '"unit": "tokens", "corpus": {"documents": 3, "total_tokens": Infinity}, '
        '"tiers": []}', "corpus.total_tokens"),
    "ingest_count_nan": ("ingested/ingest_report.json",
                         '{"schema_version": 2, "producer": {"completed_at": "x"}, '
                         '"documents_seen": NaN, "documents_accepted": 1, '
                         '"rejections_by_reason": {}}', "documents_seen"),
    "filter_rows_a_string": ("filtered_jsonl/run_manifest.json",
                             {"schema_version": 1, "producer": PRODUCER,
                              "input": {"row_count": "300"}, "output": {"row_count": 3},
                              "declared": {"filtered": {}}, "policy": {}}, "input.row_count"),
    "subset_tier_budget_deleted": ("subset/subset_report.json",
                                   {"schema_version": 1, "producer": PRODUCER,
                                    "corpus": {"documents": 3, "total_tokens": 9},
                                    "tiers": [{"document_count": 1}]}, "tiers[0].budget"),
}


@pytest.mark.parametrize("case", sorted(STEP_CASES))
def test_a_malformed_step_artifact_is_named_on_the_page(tmp_path: Path, case: str) -> None:
    rel, data, field = STEP_CASES[case]
    root = tmp_path / "root"
    _write(root / rel, data)
    result = _report(root)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    page = (root / "report.html").read_text(encoding="utf-8")
    assert "artifact_invalid" in page
    assert f"{rel.split('/')[-1]}: {field}" in page.replace("\\", "/")


FLOW_CASES = {
    "plan_steps_a_number": ("flow_plan.json", {"schema_version": 1, "steps": 5}, "steps"),
    "plan_step_config_a_list": ("flow_plan.json",
                                {"steps": [{"key": "ingest", "config": [1]}]},
                                "steps[0].config"),
    "report_steps_a_string": ("flow_report.json", {"status": "ok", "steps": "all"}, "steps"),
    "report_error_a_string": ("flow_report.json", {"status": "failed", "error": "boom"},
                              "error"),
}


@pytest.mark.parametrize("case", sorted(FLOW_CASES))
def test_a_malformed_flow_file_is_artifact_invalid(tmp_path: Path, case: str) -> None:
    name, data, field = FLOW_CASES[case]
    root = tmp_path / "root"
    _write(root / name, data)
    (root / "ingested").mkdir()
    result = _report(root)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    assert "artifact_invalid" in result.output
    assert f"{name}: {field}" in result.output


def test_a_report_html_that_is_a_directory_is_report_unwritable(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "report.html").mkdir(parents=True)
    result = _report(root)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "report_unwritable" in result.output and "report.html" in result.output
