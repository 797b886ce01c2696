"""``ingest_flow`` against the real Prefect API server of the ``prefect_api`` fixture."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from curator.errors import CuratorError
from tests.ingest._support import read_report, shard_records, write_records

pytestmark = pytest.mark.slow


async def _artifacts(flow_run_id: UUID) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async with get_client() as client:
        return await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )


def _corpus(folder: Path) -> None:
    for f in range(3):
        write_records(folder / f"in-{f}.jsonl",
                      [{"text": f"file {f} doc {d}", "url": f"u/{f}/{d}"} for d in range(20)])
    with (folder / "in-1.jsonl").open("a") as f:  # an unparsable line and a duplicate
        f.write('{"text": "cut\n{"text": "file 0 doc 3", "url": "u/0/3"}\n')


def test_ingest_flow_returns_the_report_and_publishes_artifacts(
    tmp_path: Path, prefect_api: str
) -> None:
    from flows.steps import ingest_flow

    _corpus(tmp_path / "in")
    config = {"input": str(tmp_path / "in"), "output_dir": str(tmp_path / "out"),
              "on_duplicate": "drop", "partition_size": 700, "shard_size": 25,
              "execution": {"executor": "inline"}}
    state = ingest_flow(config, return_state=True)
    assert state.is_completed(), state
    report = state.result()
    assert report == read_report(tmp_path / "out")
    assert report["completed_normally"] is True
    assert report["documents_seen"] == 62
    assert report["rejections_by_reason"] == {"duplicate_id": 1, "unparsable_line": 1}
    assert len(shard_records(tmp_path / "out")) == 60
    assert report["partitions"]["parse"] > 1

    arts = asyncio.run(_artifacts(state.state_details.flow_run_id))
    [md] = [a for a in arts if a.key == "ingest-report"]
    assert md.type == "markdown"
    assert "# Ingest report (complete)" in md.data
    assert "documents seen: 62, accepted: 60, rejected: 2" in md.data
    assert "| duplicate_id | 1 |" in md.data
    progress = [a for a in arts if a.type == "progress"]
    # parse, duplicates (by bucket of ids), rejections (one unit: a copy was dropped)
    # and shards
    assert len(progress) == 4
    assert {a.description for a in progress} == {
        "ingest parse: source partitions done", "ingest duplicates: source partitions done",
        "ingest rejections: source partitions done", "ingest shards: source partitions done"}
    assert all(a.data == pytest.approx(100.0) for a in progress)


def test_ingest_flow_with_overrides_and_a_yaml_path(tmp_path: Path, prefect_api: str) -> None:
    from flows.steps import ingest_flow

    _corpus(tmp_path / "in")
    cfg = tmp_path / "ingest.yaml"
    cfg.write_text(f"input: {tmp_path / 'in'}\noutput_dir: {tmp_path / 'out'}\n"
                   "execution: {executor: inline}\n")
    report = ingest_flow(str(cfg), ["on_duplicate=suffix", "source=flow"])
    assert report["on_duplicate"] == "suffix"
    assert {d["source"] for d in shard_records(tmp_path / "out")} == {"flow"}
    assert report["documents_accepted"] == 61


def test_a_failed_ingest_flow_fails_and_still_publishes_the_report(
    tmp_path: Path, prefect_api: str
) -> None:
    from flows.steps import ingest_flow

    _corpus(tmp_path / "in")
    config = {"input": str(tmp_path / "in"), "output_dir": str(tmp_path / "out"),
              "execution": {"executor": "inline"}}
    state = ingest_flow(config, return_state=True)
    assert state.is_failed()
    with pytest.raises(CuratorError) as info:
        state.result()
    assert info.value.error_id == "duplicate_documents"
    assert read_report(tmp_path / "out")["error"]["error_id"] == "duplicate_documents"
    arts = asyncio.run(_artifacts(state.state_details.flow_run_id))
    [md] = [a for a in arts if a.key == "ingest-report"]
    assert "# Ingest report (FAILED)" in md.data
    assert "`duplicate_documents`" in md.data


def test_dotted_overrides_merge_into_a_config_mapping(tmp_path: Path, prefect_api: str) -> None:
    """``execution.workers=1`` adds to the mapping's execution block, not replaces it: the
    checkpoint_path set there is used (a refused run leaves its checkpoint to resume)."""
    from flows.steps import ingest_flow

    _corpus(tmp_path / "in")
    ckpt = tmp_path / "ckpt"
    config = {"input": str(tmp_path / "in"), "output_dir": str(tmp_path / "out"),
              "execution": {"executor": "inline", "checkpoint_path": str(ckpt)}}
    with pytest.raises(CuratorError) as info:
        ingest_flow(config, ["execution.workers=1"])
    assert info.value.error_id == "duplicate_documents"
    assert list((ckpt / "ingest" / "parse").glob("*/*.mdb"))
    # the same config resumes: the parse phase is not redone (and refuses again)
    with pytest.raises(CuratorError):
        ingest_flow(config, ["execution.workers=1"])
    # another config (drop) never resumes the first one's partial results
    report = ingest_flow(config, ["on_duplicate=drop", "execution.workers=1"])
    assert report["partitions"]["skipped_resumed"] == 0 and report["was_resumed"] is False
    assert report["documents_accepted"] == 60
