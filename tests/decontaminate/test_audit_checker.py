"""The audit's checker of the step's artifacts catches a tampered output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.audit.decontamination import check_decontamination
from curator.audit.kinds import found
from curator.steps.audit import audit_kinds
from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from tests.steps._worlds import decontamination_world


@pytest.fixture
def run(tmp_path: Path) -> Path:
    train, holdout = decontamination_world(tmp_path / "w")
    out = tmp_path / "root" / "decontaminated"
    run_decontamination(DecontaminationConfig(
        train_glob=str(train), holdout_glob=str(holdout), output_dir=str(out), id_field="id",
        partition_size="64KB", execution={"executor": "inline"}))
    return out


def names(block) -> set[str]:
    return {f["name"] for f in block[1]}


def test_a_clean_run_passes(run: Path) -> None:
    block, findings = check_decontamination(run / "decontamination_report.json")
    assert findings == []
    assert block["output_is_input_minus_removed"] and block["holdout_unchanged"]
    assert block["removed_documents"] > 0
    assert block["input_documents"] == block["output_documents"] + block["removed_documents"]


def test_it_is_registered_for_a_flows_output_root(run: Path) -> None:
    kinds = {k.name: k for k in audit_kinds()}
    assert kinds["decontamination"].check is check_decontamination
    assert [(k.name, p) for k, p in found(run.parent, kinds.values())
            if k.name == "decontamination"] == [
        ("decontamination", run / "decontamination_report.json")]


def test_a_removed_document_put_back_is_caught(run: Path) -> None:
    removed = next((run / "removed").glob("*.jsonl"))
    row = json.loads(removed.read_text().splitlines()[0])
    shard = next(run.glob("part_*.jsonl"))
    with open(shard, "a", encoding="utf-8") as f:
        f.write(json.dumps(row["document"]) + "\n")
    found_ = names(check_decontamination(run / "decontamination_report.json"))
    assert {"decontamination_removed_id_in_output", "decontamination_shard_mismatch",
            "decontamination_counts_mismatch"} <= found_


def test_a_line_deleted_from_removed_is_caught(run: Path) -> None:
    removed = next((run / "removed").glob("*.jsonl"))
    lines = removed.read_text().splitlines()
    removed.write_text("".join(line + "\n" for line in lines[1:]))
    found_ = names(check_decontamination(run / "decontamination_report.json"))
    assert "decontamination_removed_id_not_listed" in found_


def test_a_modified_holdout_is_caught(run: Path) -> None:
    report = json.loads((run / "decontamination_report.json").read_text())
    holdout = Path(report["paths"]["holdout_files"][0])
    holdout.write_text(holdout.read_text().replace("a", "b", 1))
    found_ = names(check_decontamination(run / "decontamination_report.json"))
    assert found_ == {"decontamination_holdout_modified"}


def test_an_unreadable_report(tmp_path: Path) -> None:
    (tmp_path / "decontamination_report.json").write_text("{")
    block, findings = check_decontamination(tmp_path / "decontamination_report.json")
    assert block is None and findings[0]["name"] == "decontamination_report_unreadable"
