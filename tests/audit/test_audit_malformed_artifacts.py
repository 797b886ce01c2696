"""The audit on a run manifest or a ledger of the wrong shape (issues 25 and 29, items
4, 7 and 8): each is a finding naming the file and the field, never a traceback, and
never a PASSED verdict. The ledger and the manifest are parsed through their models
(curator.models: counts are JSON integers, blocks their type)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator.steps.audit import AuditConfig, run_audit

ROWS = [{"id": f"d{i}", "text": f"document {i}"} for i in range(3)]
LEDGER = {"schema_version": 1, "stage": "curate/filter", "source": "in/*.jsonl",
          "n_input": 3, "n_success": 3, "n_filtered": 0, "n_failed": 0, "n_quarantined": 0,
          "n_accounted": 3, "balanced": True, "filtered_by_reason": {}, "failed_units": [],
          "quarantined_units": [], "notes": {}}


def _audit(tmp: Path, manifest: Any = None, ledger: Any = None) -> dict[str, Any]:
    target = tmp / "target"
    target.mkdir()
    (target / "part_0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    keys: dict[str, Any] = {}
    if manifest is not None:
        (tmp / "run_manifest.json").write_text(
            manifest if isinstance(manifest, str) else json.dumps(manifest))
        keys["declared_manifest"] = str(tmp / "run_manifest.json")
    if ledger is not None:
        (tmp / "curation_ledger.json").write_text(
            ledger if isinstance(ledger, str) else json.dumps(ledger))
        keys["ledger_glob"] = str(tmp / "curation_ledger.json")
    cfg = AuditConfig(target_glob=str(target), output_dir=str(tmp / "out"), mode="integrity",
                      execution={"executor": "inline"}, **keys)
    with pytest.raises(CuratorError) as info:
        run_audit(cfg)
    assert info.value.error_id == "audit_findings", info.value
    return json.loads((tmp / "out" / "audit_report.json").read_text())


def _messages(report: dict[str, Any], name: str) -> list[str]:
    return [f["message"] for f in report["findings"] if f["name"] == name]


@pytest.mark.parametrize("value", ['"3"', "3.0", "3.9", "true", "null", "NaN", "Infinity",
                                   '"abc"', "1e400"])
def test_a_ledger_count_that_is_no_integer_is_a_finding(tmp_path: Path, value: str) -> None:
    text = json.dumps({**LEDGER, "n_input": "@"}).replace('"@"', value)
    report = _audit(tmp_path, ledger=text)
    assert not report["passed"]
    assert any("curation_ledger.json: n_input: " in m
               for m in _messages(report, "ledger_unreadable")), report["findings"]


@pytest.mark.parametrize(("block", "field"), [
    ({"filtered_by_reason": {"language": "2"}}, "filtered_by_reason.language"),
    ({"failed_units": [{"unit": "u", "records": 1.5}]}, "failed_units[0].records"),
    ({"quarantined_units": 5}, "quarantined_units")])
def test_a_ledger_block_of_the_wrong_type_is_a_finding(tmp_path: Path, block: dict[str, Any],
                                                        field: str) -> None:
    report = _audit(tmp_path, ledger={**LEDGER, **block})
    assert any(f"curation_ledger.json: {field}: " in m
               for m in _messages(report, "ledger_unreadable")), report["findings"]


@pytest.mark.parametrize(("manifest", "field"), [
    ({"producer": 5}, "producer"),
    ({"output": 5}, "output"),
    ({"output": {"row_count": "3", "file_count": 1}}, "output.row_count"),
    ({"output": {"shards": [{"name": "part_0.jsonl", "rows": True}]}}, "output.shards[0].rows"),
    ({"declared": {"filtered": {"language": 1.5}}}, "declared.filtered.language"),
    ({"policy": {"policy_digest": 7}}, "policy.policy_digest")])
def test_a_manifest_of_the_wrong_shape_is_a_finding(tmp_path: Path, manifest: dict[str, Any],
                                                     field: str) -> None:
    report = _audit(tmp_path, manifest={"schema_version": 1, **manifest})
    assert not report["passed"]
    assert any(f"run_manifest.json: {field}: " in m
               for m in _messages(report, "manifest_unreadable")), report["findings"]


def _decontamination_report(tmp: Path, **change: Any) -> Path:
    out, train = tmp / "out", tmp / "train.jsonl"
    out.mkdir()
    train.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    report = {"schema_version": 1, "producer": {"completed_at": "2026-01-01T00:00:00Z"},
              "paths": {"output_dir": str(out), "removed_dir": str(out / "removed"),
                        "id_field": "id", "text_field": "text", "train_files": [str(train)],
                        "holdout_files": []},
              "result": {"train_documents_in": 3}, **change}
    path = out / "decontamination_report.json"
    path.write_text(json.dumps(report))
    return path


@pytest.mark.parametrize(("change", "field"), [
    ({"result": "17 removed"}, "result"), ({"splits": {"holdout": []}}, "splits.holdout"),
    ({"output": {"shards": 5}}, "output.shards"), ({"paths": {"train_files": "x"}},
                                                   "paths.train_files")])
def test_a_decontamination_report_of_the_wrong_shape_is_a_finding(
        tmp_path: Path, change: dict[str, Any], field: str) -> None:
    from curator.audit.decontamination import check_decontamination

    block, findings = check_decontamination(_decontamination_report(tmp_path, **change))
    assert block is None
    assert [f["name"] for f in findings] == ["decontamination_report_unreadable"]
    assert f"decontamination_report.json: {field}: " in findings[0]["message"]


@pytest.mark.parametrize(("change", "field"), [
    ({"tiers": 5}, "tiers"), ({"tiers": [{"budget": "10"}]}, "tiers[0].budget"),
    ({"tokenizer": "cl100k_base"}, "tokenizer"), ({"producer": []}, "producer")])
def test_a_subset_report_of_the_wrong_shape_is_a_finding(
        tmp_path: Path, change: dict[str, Any], field: str) -> None:
    from curator.audit.subset import check_subset

    path = tmp_path / "subset_report.json"
    path.write_text(json.dumps({"schema_version": 1, "unit": "words", "tiers": [],
                                "producer": {"completed_at": "2026-01-01T00:00:00Z"},
                                **change}))
    block, findings = check_subset(path)
    assert block is None
    assert [f["name"] for f in findings] == ["subset_report_unreadable"]
    assert f"subset_report.json: {field}: " in findings[0]["message"]
