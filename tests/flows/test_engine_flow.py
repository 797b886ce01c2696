"""The Prefect building block, against a real local Prefect API server."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator_testing.jsonl import DocumentBatch, JsonlWriter, jsonl_reader
from executors import LocalExecutor


@dataclass
class Upper(ProcessingStage[DocumentBatch, DocumentBatch]):
    name: str = "upper"
    fail_on: str = ""

    def process(self, task: DocumentBatch) -> DocumentBatch:
        df = task.to_polars()
        if self.fail_on and df["text"].str.contains(self.fail_on).any():
            raise RuntimeError(f"cannot process {self.fail_on}")
        import polars as pl

        self.stat_update("docs", df.height)
        return DocumentBatch(data=df.with_columns(pl.col("text").str.to_uppercase()))


def _corpus(folder: Path, files: int = 4) -> Path:
    folder.mkdir(parents=True)
    for f in range(files):
        lines = [json.dumps({"id": f"{f}-{d}", "text": f"file {f} doc {d}"}) for d in range(5)]
        (folder / f"in-{f}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _pipeline(inp: Path, out: Path, fail_on: str = "") -> Pipeline:
    return Pipeline(name="flow-test", stages=[
        *jsonl_reader(str(inp), files_per_partition=1),
        Upper(fail_on=fail_on),
        JsonlWriter(path=str(out)),
    ])


async def _runs(flow_name: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
    )

    async with get_client() as client:
        flow_runs = await client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name]))
        )
        out = []
        for fr in sorted(flow_runs, key=lambda r: r.start_time or r.created):
            task_runs = await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[fr.id]))
            )
            artifacts = await client.read_artifacts(  # this run's: the server pages at 200
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[fr.id]))
            )
            out.append((fr, task_runs, artifacts))
        return out


def _wait_for_task_runs(flow_name: str, expected: list[int], timeout: float = 60.0):
    """The server records task runs asynchronously: poll until the counts settle."""
    deadline = time.monotonic() + timeout
    while True:
        runs = asyncio.run(_runs(flow_name))
        counts = [len([t for t in trs if t.name.startswith("flow-test-")]) for _, trs, _ in runs]
        finals = all(t.state and t.state.is_final() for _, trs, _ in runs for t in trs)
        if (counts == expected and finals) or time.monotonic() > deadline:
            return runs
        time.sleep(0.5)


def test_flow_runs_each_partition_as_a_task_run_and_resumes(prefect_api, tmp_path):
    """Fewer partitions than the bound on task runs: one task run each, as always."""
    from flows.engine import run_pipeline_flow

    inp = _corpus(tmp_path / "in")
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    name = f"engine-{uuid.uuid4().hex[:8]}"

    first = run_pipeline_flow(
        _pipeline(inp, out), LocalExecutor(workers=2), ckpt, flow_name=name, artifact_key=name
    )
    assert first.sources_completed == 4 and first.stats["upper.docs"] == 20
    direct = _pipeline(inp, tmp_path / "direct").run(executor=LocalExecutor(workers=2))
    assert sorted(p.name for p in out.iterdir()) == sorted(
        p.name for p in (tmp_path / "direct").iterdir()
    )
    for f in out.iterdir():
        assert f.read_bytes() == (tmp_path / "direct" / f.name).read_bytes()
    assert direct.stats["upper.docs"] == 20

    second = run_pipeline_flow(
        _pipeline(inp, out), LocalExecutor(workers=2), ckpt, flow_name=name, artifact_key=name
    )
    assert second.sources_skipped == 4 and second.sources_completed == 0
    assert second.stats == first.stats  # merged from the checkpoint on disk

    runs = _wait_for_task_runs(name, [4, 0])
    (fr1, trs1, arts1), (fr2, _trs2, _arts2) = runs
    assert fr1.state.is_completed() and fr2.state.is_completed()
    parts = sorted(t.name for t in trs1 if t.name.startswith("flow-test-"))
    assert parts == sorted(f"flow-test-{p.stem}" for p in out.iterdir())  # pipeline-source
    assert all(t.state.is_completed() for t in trs1)
    progress = [a for a in arts1 if a.type == "progress"]
    assert progress and progress[0].data == pytest.approx(100.0)
    assert any(a.type == "table" for a in arts1)


def test_a_failing_partition_fails_its_task_run_and_the_flow(prefect_api, tmp_path):
    from flows.engine import run_pipeline_flow

    inp = _corpus(tmp_path / "in")
    name = f"engine-fail-{uuid.uuid4().hex[:8]}"
    with pytest.raises(CuratorError) as info:
        run_pipeline_flow(
            _pipeline(inp, tmp_path / "out", fail_on="file 2"),
            LocalExecutor(workers=2),
            tmp_path / "ckpt",
            flow_name=name,
        )
    assert info.value.error_id == "partition_failed"
    runs = _wait_for_task_runs(name, [4])
    (fr, trs, _), = runs
    assert fr.state.is_failed()
    failed = [t for t in trs if t.state.is_failed()]
    assert len(failed) == 1
    # the three healthy partitions were recorded: a rerun without the fault does only one
    rerun = _pipeline(inp, tmp_path / "out").run(checkpoint_path=tmp_path / "ckpt")
    assert (rerun.sources_skipped, rerun.sources_completed) == (3, 1)


@pytest.mark.slow
def test_flow_on_ray(prefect_api, ray_local, tmp_path):
    from executors import RayExecutor
    from flows.engine import run_pipeline_flow

    inp = _corpus(tmp_path / "in")
    name = f"engine-ray-{uuid.uuid4().hex[:8]}"
    result = run_pipeline_flow(
        _pipeline(inp, tmp_path / "out"), RayExecutor(), tmp_path / "ckpt", flow_name=name
    )
    assert result.sources_completed == 4
    runs = _wait_for_task_runs(name, [4])
    assert all(t.state.is_completed() for _, trs, _ in runs for t in trs)


def _batch_size(name: str) -> int:
    """How many partitions a task run named ``<pass>-<first source id>[+<n more>]`` follows."""
    more = name.rpartition("+")[2]
    return 1 + int(more) if "+" in name and more.isdigit() else 1


def test_partitions_are_batched_into_at_most_the_bound_of_task_runs(
        prefect_api, tmp_path, monkeypatch):
    """Bound 3, 10 partitions: 3 task runs (4, 4 and 2 partitions in plan order) cover
    all 10; the progress artifact reaches 100. Then a failing partition fails its
    batch's task run, and the flow with the engine's error."""
    from flows.engine import TASK_RUNS_ENV, run_pipeline_flow

    monkeypatch.setenv(TASK_RUNS_ENV, "3")
    inp = _corpus(tmp_path / "in", files=10)
    out = tmp_path / "out"
    name = f"engine-batch-{uuid.uuid4().hex[:8]}"
    result = run_pipeline_flow(_pipeline(inp, out), LocalExecutor(workers=2),
                               tmp_path / "ckpt", flow_name=name, artifact_key=name)
    assert result.sources_completed == 10 and result.stats["upper.docs"] == 50
    (fr, trs, arts), = _wait_for_task_runs(name, [3])
    assert fr.state.is_completed() and all(t.state.is_completed() for t in trs)
    batches = sorted((t for t in trs if t.name.startswith("flow-test-")),
                     key=lambda t: t.start_time)
    assert [_batch_size(t.name) for t in batches] == [4, 4, 2]
    stems = {p.stem for p in out.iterdir()}
    firsts = {t.name.removeprefix("flow-test-").rpartition("+")[0] for t in batches}
    assert len(stems) == 10 and firsts <= stems and len(firsts) == 3
    progress = [a for a in arts if a.type == "progress"]
    assert progress and progress[0].data == pytest.approx(100.0)

    failing = f"engine-batch-fail-{uuid.uuid4().hex[:8]}"
    with pytest.raises(CuratorError) as info:
        run_pipeline_flow(_pipeline(inp, tmp_path / "out2", fail_on="file 5"),
                          LocalExecutor(workers=2), tmp_path / "ckpt2", flow_name=failing)
    assert info.value.error_id == "partition_failed"
    assert "cannot process file 5" in str(info.value)
    deadline = time.monotonic() + 60
    while True:
        (fr, trs, _), = asyncio.run(_runs(failing))
        parts = [t for t in trs if t.name.startswith("flow-test-")]
        settled = parts and all(t.state and t.state.is_final() for t in parts)
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert fr.state.is_failed()
    assert 2 <= len(parts) <= 3  # the run stops submitting after the failure
    failed = [t for t in parts if t.state.is_failed()]
    assert len(failed) == 1 and _batch_size(failed[0].name) == 4
    assert "cannot process file 5" in (failed[0].state.message or "")
