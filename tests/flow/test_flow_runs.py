"""The whole flow on a small demo corpus: measure then apply (two runs), a policy path
(one apply run), a rerun that skips what is done, approval without the filter, and a
failing step (report written, error re-raised, exit 2)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.artifacts import file_digest
from curator.errors import CuratorError
from curator.flow.approval import approve_policy
from tests.flow._support import (
    APPROVE,
    THRESHOLDS,
    FlowCli,
    base_config,
    demo_corpus,
    read_json,
    statuses,
)
from tests.ingest._support import shard_records, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

DOCS = 240


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_corpus(tmp_path_factory.mktemp("flowruns") / "raw", docs=DOCS)


@pytest.fixture(scope="module")
def measured(raw: Path, tmp_path_factory: pytest.TempPathFactory,
             prefect_api: str) -> tuple[Path, dict[str, Any]]:
    """Run 1 of 2: ingest and profile."""
    from flows.pipeline_flow import curate_flow

    root = tmp_path_factory.mktemp("measured") / "out"
    report = curate_flow(base_config(raw, root))
    return root, report


def _mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _check_filtered(root: Path, policy: Path, ingested: int) -> dict[str, Any]:
    """The final artifacts: a complete manifest, a balanced ledger, the policy applied."""
    corpus = root / "filtered_jsonl"
    manifest = read_json(corpus / "run_manifest.json")
    ledger = read_json(corpus / "curation_ledger.json")
    assert manifest["producer"]["completed_at"]
    assert manifest["policy"]["status"] == "approved"
    assert manifest["policy"]["thresholds_applied"] == len(THRESHOLDS)
    assert manifest["policy"]["policy_digest"] == file_digest(policy)
    assert ledger["balanced"] is True and ledger["notes"]["completed"] is True
    assert ledger["n_input"] == ingested == manifest["input"]["row_count"]
    assert ledger["n_accounted"] == ledger["n_success"] + ledger["n_filtered"] + \
        ledger["n_failed"] + ledger["n_quarantined"] == ingested
    assert ledger["n_filtered"] > 0 and ledger["n_success"] == len(shard_records(corpus))
    return manifest


def test_two_runs_measure_then_approve_and_apply(
    raw: Path, measured: tuple[Path, dict[str, Any]], prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    root, first = measured
    assert first["status"] == "ok" and first["step_id"] == "curate/flow"
    assert statuses(first)["curate/ingest"] == "ok"
    assert statuses(first)["curate/profile"] == "ok"
    assert statuses(first)["curate/filter"] == "disabled"
    assert first["policy_promoted"] is False and first["policy_applied"] is False
    assert first["completed_at"] and first["started_at"]
    assert read_json(root / "flow_report.json") == first
    assert (root / "profile" / "candidate_policies.yaml").is_file()
    assert not (root / "policy").exists() and not (root / "filtered_jsonl").exists()
    ingest_report = read_json(root / "ingested" / "ingest_report.json")
    kept = len(shard_records(root / "ingested"))
    assert 0 < kept <= DOCS and ingest_report["completed_normally"]
    before = _mtimes(root / "ingested")

    # run 2: ingest still on (its artifacts are complete: skipped), profile off
    config = base_config(raw, root, profile=False, filt=True,
                         approve={**APPROVE, "date": "2026-01-05"})
    report = curate_flow(config)
    assert report["status"] == "ok", report.get("error")
    assert statuses(report) == {
        "curate/ingest": "skipped", "curate/profile": "disabled", "curate/filter": "ok",
        "curate/audit": "disabled", "curate/dedup": "disabled",
        "curate/decontamination": "disabled", "curate/subset": "disabled"}
    ingest_entry = next(s for s in report["steps"] if s["step_id"] == "curate/ingest")
    assert ingest_entry["passed"] is True and ingest_entry["notes"]
    assert _mtimes(root / "ingested") == before  # not rewritten
    policy = root / "policy" / "approved_policy.yaml"
    assert report["policy_promoted"] is True
    assert report["policy_applied"] is True
    assert report["policy_status"] == "approved"
    assert report["approved_policy"] == {"path": str(policy),
                                         "policy_digest": file_digest(policy)}
    doc = yaml.safe_load(policy.read_text())
    assert doc["approval"]["approver"] == APPROVE["approver"]
    assert doc["approval"]["evidence"] == APPROVE["evidence"]
    assert doc["approval"]["date"] == "2026-01-05"
    assert {t["signal"] for t in doc["thresholds"]} == set(THRESHOLDS)
    assert read_json(root / "flow_report.json") == report
    _check_filtered(root, policy, kept)

    # the same command again, on a later day (date: null = today): the same approval keeps
    # its date and bytes, so every step is done with this config and policy: nothing redone
    snapshot, policy_bytes = _mtimes(root / "filtered_jsonl"), policy.read_bytes()
    config["approve"]["date"] = None
    again = curate_flow(config)
    assert again["status"] == "ok"
    assert statuses(again)["curate/ingest"] == "skipped"
    assert statuses(again)["curate/filter"] == "skipped"
    assert again["policy_applied"] is True and again["policy_status"] == "approved"
    assert _mtimes(root / "filtered_jsonl") == snapshot
    assert _mtimes(root / "ingested") == before
    assert policy.read_bytes() == policy_bytes
    assert again["approved_policy"] == report["approved_policy"]


def test_one_apply_run_with_a_policy_path(
    raw: Path, measured: tuple[Path, dict[str, Any]], tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    measured_root, _ = measured
    root = tmp_path / "out"
    # approve the measured candidate elsewhere (as `curate approve` would) ...
    policy = tmp_path / "approved" / "approved_policy.yaml"
    approve_policy(measured_root / "profile" / "candidate_policies.yaml", policy,
                   THRESHOLDS, approver="Path Reviewer", evidence="read the summary")
    # ... and apply it in one run that also ingests (into another output_root)
    config = base_config(raw, root, profile=False, filt=True)
    config["steps"]["filter"]["heuristic_filters"] = {"approved_policy": str(policy)}
    report = curate_flow(config)
    assert report["status"] == "ok", report.get("error")
    assert statuses(report)["curate/ingest"] == "ok"
    assert statuses(report)["curate/filter"] == "ok"
    assert report["policy_promoted"] is False and "approved_policy" not in report
    assert report["policy_applied"] is True and report["policy_status"] == "approved"
    assert not (root / "policy").exists()
    _check_filtered(root, policy, len(shard_records(root / "ingested")))


def test_approve_block_without_the_filter_writes_the_policy(
    raw: Path, measured: tuple[Path, dict[str, Any]], tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    measured_root, _ = measured
    root = tmp_path / "out"
    shutil.copytree(measured_root / "profile", root / "profile")
    config = base_config(raw, root, ingest=False, profile=False, filt=False,
                         approve=APPROVE)
    config["steps"]["ingest"]["enabled"] = True  # something must be enabled
    report = curate_flow(config)
    assert any("not applied" in w for w in report["warnings"])
    policy = root / "policy" / "approved_policy.yaml"
    assert report["status"] == "ok"
    assert report["policy_promoted"] is True and report["policy_applied"] is False
    assert report["approved_policy"]["policy_digest"] == file_digest(policy)
    assert yaml.safe_load(policy.read_text())["approval"]["approver"] == APPROVE["approver"]


def test_a_failing_step_is_reported_then_reraised(
    raw: Path, measured: tuple[Path, dict[str, Any]], tmp_path: Path, prefect_api: str
) -> None:
    measured_root, _ = measured
    root = tmp_path / "out"
    # a policy approved for the ingested corpus, applied to the raw one: the filter
    # refuses it (approval_corpus_mismatch) after ingest has run
    policy = tmp_path / "approved_policy.yaml"
    approve_policy(measured_root / "profile" / "candidate_policies.yaml", policy,
                   THRESHOLDS, approver="R", evidence="E")
    config = base_config(raw / "*.jsonl", root, profile=False, filt=True)
    config["steps"]["ingest"]["enabled"] = False
    config["steps"]["filter"]["heuristic_filters"] = {"approved_policy": str(policy)}
    path = write_config(tmp_path / "flow.yaml", config)
    with FlowCli(path, tmp_path / "logs", "failing") as cli:
        code = cli.wait(180)
        err = cli.stderr()
    assert code == 2, err[-3000:]
    assert "approval_corpus_mismatch" in err
    report = read_json(root / "flow_report.json")
    assert report["status"] == "failed" and report["completed_at"]
    failed = [s for s in report["steps"] if s["status"] == "failed"]
    assert [s["step_id"] for s in failed] == ["curate/filter"]
    assert failed[0]["error"]["error_id"] == "approval_corpus_mismatch"
    assert failed[0]["passed"] is False
    assert report["error"]["error_id"] == "approval_corpus_mismatch"
    assert report["policy_applied"] is False
    assert statuses(report)["curate/ingest"] == "disabled"
    assert not (root / "filtered_jsonl" / ".curate_flow_step.json").exists()


def test_a_failing_step_in_process_raises_its_error(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    root = tmp_path / "out"
    config = base_config(raw, root)
    config["steps"]["profile"]["signals"] = ["no_such_signal"]
    with pytest.raises(CuratorError) as info:
        curate_flow(config)
    report = read_json(root / "flow_report.json")
    assert report["status"] == "failed"
    assert statuses(report)["curate/ingest"] == "ok"
    failed = next(s for s in report["steps"] if s["status"] == "failed")
    assert failed["step_id"] == "curate/profile"
    assert failed["error"]["error_id"] == info.value.error_id == report["error"]["error_id"]
    assert statuses(report).get("curate/filter") in (None, "disabled")


def test_a_raw_file_that_arrives_later_reruns_ingest_and_what_reads_it(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    """The nightly case: the same config over a folder that gained a file is not done."""
    from flows.pipeline_flow import curate_flow

    mine = tmp_path / "raw"
    shutil.copytree(raw, mine)
    root = tmp_path / "out"
    config = base_config(mine, root)
    assert statuses(curate_flow(config))["curate/profile"] == "ok"
    kept = len(shard_records(root / "ingested"))
    again = curate_flow(config)  # nothing new: both steps done
    assert statuses(again)["curate/ingest"] == statuses(again)["curate/profile"] == "skipped"
    profiled = _mtimes(root / "profile")

    more = demo_corpus(tmp_path / "more", docs=60, seed=99)
    shutil.copy(more / "segment-00.jsonl", mine / "arrived-later.jsonl")
    report = curate_flow(config)
    assert report["status"] == "ok", report.get("error")
    assert statuses(report)["curate/ingest"] == "ok"
    assert statuses(report)["curate/profile"] == "ok"  # its input changed too
    assert len(shard_records(root / "ingested")) > kept
    assert _mtimes(root / "profile") != profiled
