"""``curate audit`` with ``output_root``: every step that ran under a flow's output root.

The filter's artifacts are found where the flow put them (``flow_plan.json``, else the
default layout) and fill the keys the config leaves unset; each later step's artifact
found there goes to its kind's checker (:mod:`curator.audit.kinds`), whose findings
fail the audit like the filter's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import curator.audit.kinds as kinds
import curator.steps.audit as audit_step
from curator.audit.checks import Block, finding
from curator.errors import CuratorError
from curator.steps.audit import AuditConfig, run_audit
from tests.filter._support import approve, corpus_records, profile_candidate, run, write_shards


@pytest.fixture(scope="module")
def flow_root(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A flow's output root as the flow lays it out: the filter's input, policy and
    output, and the ``flow_plan.json`` that says where each is."""
    root = tmp_path_factory.mktemp("root")
    inp = write_shards(root / "ingested", corpus_records(300, seed=5), shards=2)
    policy = approve(profile_candidate(inp, root / "profile"),
                     root / "policy" / "approved_policy.yaml")
    out = root / "kept"  # not the default filtered_jsonl: the plan must be read
    run(inp, out, policy, partition_size="30KB")
    plan = {"schema_version": 1, "output_root": str(root), "steps": [
        {"key": "filter", "enabled": True, "config": {
            "input_glob": str(inp), "output_dir": str(out), "id_field": "id",
            "emit_manifest": "run_manifest.json", "emit_ledger": "curation_ledger.json",
            "heuristic_filters": {"approved_policy": str(policy)}}}]}
    (root / "flow_plan.json").write_text(json.dumps(plan))
    return {"root": root, "inp": inp, "out": out, "policy": policy}


def audit_root(root: Path, out: Path, **keys: Any) -> tuple[dict[str, Any], CuratorError | None]:
    cfg = {"output_root": str(root), "output_dir": str(out),
           "execution": {"executor": "inline"}, **keys}
    try:
        return run_audit(AuditConfig(**cfg)), None
    except CuratorError as exc:
        if not (out / "audit_report.json").is_file():
            raise
        return json.loads((out / "audit_report.json").read_text()), exc


def toy_check(path: Path) -> Block:
    """A checker of a toy artifact: it claims a count, the shard beside it has rows."""
    claimed = json.loads(path.read_text())["rows"]
    actual = len((path.parent / "rows.jsonl").read_text().splitlines())
    findings = [] if claimed == actual else [finding(
        "toy_count_mismatch", f"claims {claimed} rows, {actual} on disk")]
    return {"claimed": claimed, "actual": actual}, findings


@pytest.fixture
def toy_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_step, "audit_kinds", lambda: (
        kinds.ArtifactKind("toy", "toy_report.json", toy_check),))


def write_toy(folder: Path, claimed: int, rows: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "toy_report.json").write_text(json.dumps({"rows": claimed}))
    (folder / "rows.jsonl").write_text("".join(f'{{"i": {i}}}\n' for i in range(rows)))


def test_the_filter_output_is_found_where_the_flow_plan_says(flow_root: dict[str, Any],
                                                             tmp_path: Path) -> None:
    report, error = audit_root(flow_root["root"], tmp_path / "audit", mode="all",
                               comparison_fields=["id", "text"])
    assert error is None and report["passed"]
    shards = sorted(flow_root["out"].glob("*.jsonl"))
    rows = sum(len(p.read_text().splitlines()) for p in shards)
    assert report["target"]["file_count"] == len(shards) > 0
    assert report["target"]["row_count"] == rows
    # the manifest, found through the plan, claims what is on disk
    assert report["completeness"]["claimed"]
    assert report["completeness"]["declared_rows"] == report["completeness"]["actual_rows"] \
        == rows
    assert report["attribution"]["available"]  # the ledger too
    assert report["policy"]["file"] == str(flow_root["policy"])
    assert report["containment"]["contained"] and report["containment"]["verifiable"]
    assert "steps" not in report  # no later step ran there


def test_a_key_the_config_sets_wins_over_the_root(flow_root: dict[str, Any],
                                                  tmp_path: Path) -> None:
    report, _ = audit_root(flow_root["root"], tmp_path / "audit", declared_manifest=None)
    assert not report["completeness"]["claimed"]  # explicitly none: not taken from root


def test_tampering_under_the_root_is_found(flow_root: dict[str, Any], tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(flow_root["root"], root)
    plan = json.loads((root / "flow_plan.json").read_text())
    plan["steps"][0]["config"].update(
        input_glob=str(root / "ingested"), output_dir=str(root / "kept"),
        heuristic_filters={"approved_policy": str(root / "policy/approved_policy.yaml")})
    (root / "flow_plan.json").write_text(json.dumps(plan))
    manifest = json.loads((root / "kept/run_manifest.json").read_text())
    manifest["rejected_dir"] = str(root / "kept/rejected")
    (root / "kept/run_manifest.json").write_text(json.dumps(manifest))
    shard = sorted((root / "kept").glob("*.jsonl"))[0]
    lines = shard.read_text().splitlines(keepends=True)
    shard.write_text("".join(lines[1:]))  # one row gone, still valid JSONL
    report, error = audit_root(root, tmp_path / "audit")
    assert error is not None and error.error_id == "audit_findings"
    assert "manifest_mismatch" in {f["name"] for f in report["findings"]}


def test_each_later_step_artifact_goes_to_its_checker(flow_root: dict[str, Any],
                                                      tmp_path: Path, toy_kind: None) -> None:
    root = tmp_path / "root"
    shutil.copytree(flow_root["root"], root)
    write_toy(root / "toy", claimed=3, rows=3)
    report, error = audit_root(root, tmp_path / "audit")
    assert error is None and report["passed"]
    assert report["steps"]["toy"]["claimed"] == report["steps"]["toy"]["actual"] == 3
    assert report["steps"]["toy"]["artifact"] == str(root / "toy/toy_report.json")
    assert report["target"]["file_count"] > 0  # and the filter's output still audited
    summary = (tmp_path / "audit/audit_summary.md").read_text()
    assert "| toy |" in summary
    from curator.audit.report import render
    from curator.models import AuditReport

    assert "later steps: toy" in render(AuditReport.model_validate(report)).summary

    write_toy(root / "toy", claimed=3, rows=2)  # the artifact no longer matches the disk
    report, error = audit_root(root, tmp_path / "audit")
    assert error is not None and error.error_id == "audit_findings" and error.exit_code == 1
    assert [f["name"] for f in report["findings"]] == ["toy_count_mismatch"]
    assert report["findings"][0]["step"] == "toy"
    assert report["steps"]["toy"]["findings"] == ["toy_count_mismatch"]


def test_a_root_with_only_later_steps(tmp_path: Path, toy_kind: None) -> None:
    write_toy(tmp_path / "root/toy", claimed=2, rows=2)
    report, error = audit_root(tmp_path / "root", tmp_path / "audit")
    assert error is None and report["passed"] and report["target"]["file_count"] == 0
    assert report["steps"]["toy"]["actual"] == 2


def test_a_root_with_nothing_to_audit_is_refused_and_writes_nothing(tmp_path: Path,
                                                                    toy_kind: None) -> None:
    (tmp_path / "root").mkdir()
    with pytest.raises(CuratorError) as err:
        audit_root(tmp_path / "root", tmp_path / "audit")
    assert err.value.error_id == "nothing_to_audit" and err.value.exit_code == 2
    assert not (tmp_path / "audit").exists()
    with pytest.raises(CuratorError) as err:
        audit_root(tmp_path / "absent", tmp_path / "audit")
    assert err.value.error_id == "output_root_not_found"
    (tmp_path / "root/flow_plan.json").write_text("{not json")
    with pytest.raises(CuratorError) as err:
        audit_root(tmp_path / "root", tmp_path / "audit")
    assert err.value.error_id == "flow_plan_unreadable"


def test_neither_a_target_nor_a_root_is_a_config_problem(tmp_path: Path) -> None:
    with pytest.raises(CuratorError) as err:
        run_audit(AuditConfig(output_dir=str(tmp_path / "a")))
    assert err.value.error_id == "audit_needs_a_target" and err.value.exit_code == 2
