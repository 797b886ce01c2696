"""A ledger count of the wrong type in a whole-root audit (issue 29, items 4 and 7).

``n_input`` of ``3000.9`` or ``"3000"`` once gave PASSED; NaN, Infinity, null or
``"abc"`` a traceback with exit 1 and the work files left behind. The ledger is read
through :class:`curator.models.CurationLedger` (its counts strict integers >= 0): each is
a ``ledger_unreadable`` finding naming the ledger and the field, the verdict FAILED
(exit 1), no traceback, the work files removed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from curator import models
from curator.models import CurationLedger
from tests.audit._roots import build_root, copy_root


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_root(tmp_path_factory.mktemp("ledger") / "root")


@pytest.mark.parametrize("value", ["3000.9", '"3000"', "NaN", "Infinity", "null", '"abc"',
                                   "-5"])
def test_a_wrong_typed_n_input_is_a_finding(original: Path, tmp_path: Path,
                                            value: str) -> None:
    from flows.cli import app

    root = copy_root(original, tmp_path / "root")
    ledger = root / "filtered_jsonl" / "curation_ledger.json"
    data = json.loads(ledger.read_text())
    ledger.write_text(json.dumps({**data, "n_input": "@"}).replace('"@"', value))
    out = tmp_path / "audit"
    result = CliRunner().invoke(app, ["audit", "--set", f"output_root={root}",
                                      "--set", f"output_dir={out}"])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert "Traceback" not in result.output and "audit_findings" in result.output
    report = json.loads((out / "audit_report.json").read_text())
    assert report["passed"] is False and report["producer"]["completed_at"]
    found = [f["message"] for f in report["findings"] if f["name"] == "ledger_unreadable"]
    assert any(f"{ledger}: n_input: " in m for m in found), report["findings"]
    assert not report["attribution"]["available"]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # the work dir is gone


@pytest.mark.parametrize("field", ["n_success", "n_filtered", "n_failed", "n_quarantined",
                                   "n_accounted"])
def test_every_count_is_a_non_negative_integer(field: str) -> None:
    good = {"stage": "curate/filter", "source": "in", "n_input": 0, "n_success": 0,
            "n_filtered": 0, "n_failed": 0, "n_quarantined": 0, "n_accounted": 0,
            "balanced": True, "filtered_by_reason": {}, "failed_units": [],
            "quarantined_units": [], "notes": {}}
    assert models.build(CurationLedger, good)["n_input"] == 0  # the writer's check
    for bad in (-1, 1.0, "1", True):
        with pytest.raises(ValidationError):
            models.build(CurationLedger, {**good, field: bad})
    with pytest.raises(ValidationError):
        models.build(CurationLedger, {**good, "filtered_by_reason": {"language": -2}})
    with pytest.raises(ValidationError):
        models.build(CurationLedger, {**good, "failed_units": [{"unit": "u", "records": -1}]})
