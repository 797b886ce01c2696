"""``curate status`` on artifacts of the wrong shape (issue 29, item 8): a malformed
``flow_plan.json`` or ``flow_report.json`` is ``artifact_invalid`` (exit 2) naming
the file and the field; a malformed step artifact makes that step ``failed`` with
``artifact_invalid`` naming its file and field. Never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.cli import app


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _status(root: Path, *more: str) -> Any:
    return CliRunner().invoke(app, ["status", str(root), *more])


ROOT_CASES = {
    "plan_steps_a_number": ("flow_plan.json", {"schema_version": 1, "steps": 5}, "steps"),
    "plan_problems_strings": ("flow_plan.json", {"steps": [], "problems": ["bad"]},
                              "problems[0]"),
    "plan_dry_run_a_list": ("flow_plan.json", {"steps": [], "dry_run": [1]}, "dry_run"),
    "report_steps_a_number": ("flow_report.json", {"status": "ok", "steps": 5}, "steps"),
    "report_error_a_string": ("flow_report.json", {"status": "failed", "error": "x"},
                              "error"),
}


@pytest.mark.parametrize("case", sorted(ROOT_CASES))
def test_a_malformed_flow_file_is_artifact_invalid(tmp_path: Path, case: str) -> None:
    name, data, field = ROOT_CASES[case]
    root = tmp_path / "root"
    _write(root / name, data)
    if name == "flow_report.json":
        _write(root / "flow_plan.json", {"schema_version": 1, "steps": []})
    result = _status(root)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "artifact_invalid" in result.output
    assert f"{name}: {field}" in result.output


STEP_CASES = {
    "error_a_string": ({"schema_version": 2, "producer": {}, "error": "boom"}, "error"),
    "producer_a_number": ({"schema_version": 2, "producer": 5}, "producer"),
    "completed_at_a_list": ({"producer": {"completed_at": ["x"]}}, "producer.completed_at"),
}


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("case", sorted(STEP_CASES))
def test_a_malformed_step_artifact_is_a_failed_step(tmp_path: Path, case: str,
                                                     as_json: bool) -> None:
    data, field = STEP_CASES[case]
    root = tmp_path / "root"
    _write(root / "flow_plan.json", {"schema_version": 1, "steps": [
        {"key": "ingest", "step_id": "curate/ingest", "enabled": True, "config": {}}]})
    _write(root / "ingested" / "ingest_report.json", data)
    result = _status(root, *(["--json"] if as_json else []))
    assert result.exit_code == 0, result.output
    assert result.exception is None, result.exception
    if as_json:
        ingest = next(s for s in json.loads(result.output)["steps"] if s["key"] == "ingest")
        assert ingest["state"] == "failed"
        assert ingest["error"]["error_id"] == "artifact_invalid"
        assert f"ingest_report.json: {field}" in ingest["error"]["message"]
    else:
        line = next(x for x in result.output.splitlines() if x.strip().startswith("ingest"))
        assert "failed" in line and "[artifact_invalid]" in line
        assert f"ingest_report.json: {field}" in line
