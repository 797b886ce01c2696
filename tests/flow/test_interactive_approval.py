"""Interactive approval: the flow pauses after profiling until a person submits
thresholds, approver and evidence as run input; submitted here programmatically to a
real paused run on the session's Prefect server."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.artifacts import file_digest
from tests.flow._support import (
    THRESHOLDS,
    FlowCli,
    base_config,
    demo_corpus,
    read_json,
    statuses,
)
from tests.ingest._support import shard_records, write_config
from tests.prefect_support import latest_artifact

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


async def _paused_runs(name: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    async with get_client() as client:
        return await client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[name])),
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(
                type=FlowRunFilterStateType(any_=[StateType.PAUSED]))))


async def _flow_run(flow_run_id: Any) -> Any:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return await client.read_flow_run(flow_run_id)


def _wait_paused(cli: FlowCli, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        assert cli.poll() is None, "the flow ended instead of pausing\n" + cli.stderr()[-3000:]
        runs = asyncio.run(_paused_runs("curate-flow"))
        if runs:
            assert len(runs) == 1
            return runs[0]
        assert time.monotonic() < deadline, "no paused run\n" + cli.stderr()[-3000:]
        time.sleep(0.5)


def test_interactive_approval_via_run_input(tmp_path: Path, prefect_api: str) -> None:
    from prefect.flow_runs import resume_flow_run

    raw = demo_corpus(tmp_path / "raw", docs=240)
    root = tmp_path / "out"
    config = base_config(raw, root, filt=True,
                         approve={"interactive": True, "timeout_seconds": 120})
    path = write_config(tmp_path / "flow.yaml", config)
    given: dict[str, Any] = {
        "thresholds": {"boilerplate_hits": 3, "repeating_duplicate_ngrams": 0.507937,
                       "stopword_ratio": THRESHOLDS["stopword_ratio"]},
        "approver": "Interactive Reviewer",
        "evidence": "read profile_summary.md in the UI",
        "method": "manual",
    }
    with FlowCli(path, tmp_path / "logs", "interactive") as cli:
        run = _wait_paused(cli, 180)
        # paused after profiling, before anything was approved or filtered
        assert (root / "profile" / "profile_report.json").is_file()
        assert not (root / "policy").exists() and not (root / "filtered_jsonl").exists()
        request = latest_artifact("approval-request")
        assert request is not None and request.flow_run_id == run.id
        assert request.data == (root / "profile" / "profile_summary.md").read_text()
        resume_flow_run(run.id, run_input=given)
        code = cli.wait(180)
        assert code == 0, cli.stderr()[-3000:]
    assert asyncio.run(_flow_run(run.id)).state.is_completed()

    report = read_json(root / "flow_report.json")
    assert report["status"] == "ok", report.get("error")
    assert statuses(report)["curate/ingest"] == "ok"
    assert statuses(report)["curate/profile"] == "ok"
    assert statuses(report)["curate/filter"] == "ok"
    policy = root / "policy" / "approved_policy.yaml"
    doc = yaml.safe_load(policy.read_text())
    assert doc["approval"]["approver"] == given["approver"]
    assert doc["approval"]["evidence"] == given["evidence"]
    assert doc["approval"]["method"] == "manual"
    bounds = {t["signal"]: t for t in doc["thresholds"]}
    assert set(bounds) == set(given["thresholds"])
    assert bounds["boilerplate_hits"]["max"] == 3
    assert bounds["stopword_ratio"]["min"] == THRESHOLDS["stopword_ratio"]
    assert report["policy_promoted"] is True and report["policy_applied"] is True
    assert report["policy_status"] == "approved"
    assert report["approved_policy"]["policy_digest"] == file_digest(policy)
    manifest = read_json(root / "filtered_jsonl" / "run_manifest.json")
    assert manifest["policy"]["policy_digest"] == file_digest(policy)
    assert manifest["policy"]["thresholds_applied"] == len(given["thresholds"])
    assert manifest["producer"]["completed_at"]
    ledger = read_json(root / "filtered_jsonl" / "curation_ledger.json")
    assert ledger["balanced"] is True
    assert ledger["n_input"] == len(shard_records(root / "ingested"))
    assert ledger["filtered_by_reason"].get("boilerplate_hits", 0) > 0


def test_no_input_before_the_timeout_fails_the_run(tmp_path: Path, prefect_api: str) -> None:
    raw = demo_corpus(tmp_path / "raw", docs=60)
    root = tmp_path / "out"
    config = base_config(raw, root, filt=True,
                         approve={"interactive": True, "timeout_seconds": 3})
    path = write_config(tmp_path / "flow.yaml", config)
    with FlowCli(path, tmp_path / "logs", "timeout") as cli:
        code = cli.wait(180)
        err = cli.stderr()
    assert code == 2, err[-3000:]
    assert "approval_timeout" in err
    report = read_json(root / "flow_report.json")
    assert report["status"] == "failed"
    assert report["error"]["error_id"] == "approval_timeout"
    assert statuses(report)["curate/profile"] == "ok"
    assert statuses(report)["curate/filter"] == "failed"
    assert report["policy_promoted"] is False
    assert not (root / "policy").exists() and not (root / "filtered_jsonl").exists()
