"""The audit in ``curate flow``: derived from the filter's config, ``audit_passed`` in
``flow_report.json``; findings fail the flow visibly with a complete report."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.errors import CuratorError
from tests.flow._support import APPROVE, base_config, demo_corpus, read_json, statuses

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def test_the_audit_in_a_flow(tmp_path: Path, prefect_api: str) -> None:
    from flows.pipeline_flow import curate_flow

    raw = demo_corpus(tmp_path / "raw", docs=240)
    root = tmp_path / "root"
    curate_flow(base_config(raw, root))  # run 1: ingest and profile
    config = base_config(raw, root, profile=False, filt=True, approve=APPROVE)
    config["steps"]["audit"] = {"enabled": True, "mode": "all",
                                "comparison_fields": ["id", "text"]}
    report = curate_flow(config)
    assert report["status"] == "ok", report.get("error")
    assert statuses(report)["curate/audit"] == "ok" and report["audit_passed"] is True
    audit = read_json(root / "audit" / "audit_report.json")
    corpus = root / "filtered_jsonl"
    assert audit["passed"] and audit["target"]["glob"] == str(corpus)
    assert audit["accounting"]["by_id"] and audit["policy"]["agrees"]
    assert audit["containment"]["contained"]
    assert [s["made"] for s in audit["strengths"]] == [True, True, True, True]
    assert {s["name"] for s in audit["target"]["shards"]} == \
        {p.name for p in corpus.glob("part_*.jsonl")}

    # the ledger is edited: the target is unchanged, but the audit depends on the ledger
    ledger = corpus / "curation_ledger.json"
    original = ledger.read_bytes()
    ledger.write_text(original.decode().replace('"n_input": ', '"n_input": 1', 1))
    with pytest.raises(CuratorError) as info:
        curate_flow(config)
    assert info.value.error_id == "audit_findings"
    assert "ledger_imbalanced" in {f["name"] for f in read_json(
        root / "audit" / "audit_report.json")["findings"]}
    ledger.write_bytes(original)
    assert curate_flow(config)["audit_passed"] is True

    # `curate audit` on the flow's output root, no config file: the same verdict, the
    # filter's artifacts found through flow_plan.json
    from typer.testing import CliRunner

    from flows.cli import app

    result = CliRunner().invoke(app, ["audit", "--set", f"output_root={root}", "--set",
                                      f"output_dir={tmp_path / 'whole'}"])
    assert result.exit_code == 0, result.output
    whole = read_json(tmp_path / "whole" / "audit_report.json")
    assert whole["passed"] and whole["target"]["glob"] == str(corpus)
    assert whole["completeness"]["claimed"] and whole["accounting"]["by_id"]

    # a shard loses a row: the filter is done (skipped), the audit runs again and fails
    shard = sorted(corpus.glob("part_*.jsonl"))[0]
    shard.write_bytes(b"".join(x + b"\n" for x in shard.read_bytes().splitlines()[1:]))
    with pytest.raises(CuratorError) as info:
        curate_flow(config)
    assert info.value.error_id == "audit_findings" and info.value.exit_code == 1
    flow_report = read_json(root / "flow_report.json")
    assert flow_report["status"] == "failed" and flow_report["audit_passed"] is False
    assert statuses(flow_report)["curate/filter"] == "skipped"
    entry = next(s for s in flow_report["steps"] if s["step_id"] == "curate/audit")
    assert entry["status"] == "failed" and entry["error"]["error_id"] == "audit_findings"
    audit = read_json(root / "audit" / "audit_report.json")
    assert audit["producer"]["completed_at"] and audit["passed"] is False
    assert "shard_rows_mismatch" in {f["name"] for f in audit["findings"]}


def test_the_plan_derives_the_audit_from_the_filter(tmp_path: Path) -> None:
    from curator.flow.plan import load_flow_config, plan_flow

    raw = demo_corpus(tmp_path / "raw", docs=60)
    root = tmp_path / "root"
    config = base_config(raw, root, ingest=False, profile=False, filt=True)
    config["steps"]["filter"]["id_field"] = "url"
    config["steps"]["audit"] = {"enabled": True}
    plan = plan_flow(load_flow_config(config))
    audit = plan.step("audit").config
    corpus = root / "filtered_jsonl"
    assert audit["target_glob"] == str(corpus) and audit["digest_root"] == str(corpus)
    assert audit["declared_manifest"] == str(corpus / "run_manifest.json")
    assert audit["ledger_glob"] == str(corpus / "curation_ledger.json")
    assert audit["reference_glob"] == str(raw) and audit["id_field"] == "url"
    assert audit["output_dir"] == str(root / "audit")

    # the filter off and nothing on disk: the audit has nothing to read
    config["steps"]["filter"]["enabled"] = False
    plan = plan_flow(load_flow_config(config))
    assert "missing_upstream_artifact" in {i for i, _ in plan.problems}
    assert "declared_manifest" not in plan.step("audit").config
    assert any("audit has no manifest" in w for w in plan.warnings)
