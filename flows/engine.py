"""Run a pipeline as a Prefect flow: one Prefect task run per source partition.

The heavy work runs on the chosen executor (process pool or Ray) exactly as in
``Pipeline.run``; Prefect sees it. Each source partition is a Prefect task run on a
thread pool that follows the partition's future on the executor, so the UI shows
one task run per partition with its real duration and state, while a partition
costs Prefect a thread-pool task run (~10 ms here) instead of a process-pool or
Ray task run (85-100 ms, plus 6-17 s of runner start-up; see docs/engine.md).
A progress artifact is updated as partitions return, and a table artifact
summarises the run.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import threading
import uuid
from typing import Any

from prefect import flow, task
from prefect.artifacts import (
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.futures import wait as wait_prefect
from prefect.task_runners import ThreadPoolTaskRunner

from curator.artifacts import readable_table
from curator.execution import Executor, InlineExecutor, UnitResult, WorkerChain
from curator.pipeline import Pipeline, PipelineResult, Progress
from curator.tasks import Task
from flows.prefect_logging import engine_logs_to_prefect

_PENDING: dict[str, cf.Future[UnitResult]] = {}
_PENDING_LOCK = threading.Lock()


@task(cache_policy=NO_CACHE, persist_result=False, log_prints=False)
def source_partition(key: str, source_id: str) -> dict[str, Any]:
    """Follow one source partition on the executor until it returns."""
    with _PENDING_LOCK:
        future = _PENDING.pop(key)
    unit = future.result()  # a failed partition fails this task run
    items = int(sum(t.num_items for t in unit.tasks))
    return {"source_id": source_id, "worker": unit.worker, "final_items": items}


class PrefectTaskExecutor(Executor):
    """Wraps an executor so each submitted partition is also a Prefect task run."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.name = inner.name
        self._observers: list[Any] = []
        self._prefix = "partition"

    @property
    def capacity(self) -> int:
        return self.inner.capacity

    def start(self, chain: WorkerChain) -> None:
        # task runs are named after the pass (``audit-scan-<source>``): a step's passes
        # over the same partitions are told apart in the UI
        self._prefix = chain.name or "partition"
        self.inner.start(chain)

    def submit(self, task: Task) -> cf.Future[UnitResult]:
        future = self.inner.submit(task)
        key = uuid.uuid4().hex
        with _PENDING_LOCK:
            _PENDING[key] = future
        sid = task.source_id or "?"
        self._observers.append(
            source_partition.with_options(task_run_name=f"{self._prefix}-{sid}").submit(key, sid)
        )
        return future

    def stop(self, abandon: bool = False) -> None:
        try:
            self.inner.stop(abandon=abandon)
        finally:
            if not abandon:
                wait_prefect(self._observers)
            self._observers = []

    def close(self) -> None:
        self.inner.close()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def _pipeline_flow_body(
    pipeline: Pipeline,
    executor: Executor,
    checkpoint_path: str | None,
    artifact_key: str | None,
) -> PipelineResult:
    progress_id = create_progress_artifact(
        progress=0.0,
        key=artifact_key and f"{artifact_key}-progress",
        description=f"{pipeline.name}: source partitions done",
    )

    def on_progress(p: Progress) -> None:
        update_progress_artifact(progress_id, progress=100.0 * p.done / max(p.total, 1))

    with engine_logs_to_prefect():
        result = pipeline.run(
            executor=PrefectTaskExecutor(executor),
            checkpoint_path=checkpoint_path,
            on_progress=on_progress,
        )
    update_progress_artifact(progress_id, progress=100.0)
    create_table_artifact(
        key=artifact_key and f"{artifact_key}-summary",
        table=readable_table([
            {"metric": "source partitions", "value": result.sources_total},
            {"metric": "skipped (already complete)", "value": result.sources_skipped},
            {"metric": "completed in this run", "value": result.sources_completed},
            {"metric": "pending (will replay)", "value": len(result.sources_pending)},
            *({"metric": k, "value": v} for k, v in result.stats.items()),
        ]),
        description=f"{pipeline.name}: run summary",
    )
    return result


def run_pipeline_flow(
    pipeline: Pipeline,
    executor: Executor | None = None,
    checkpoint_path: str | os.PathLike[str] | None = None,
    *,
    flow_name: str | None = None,
    artifact_key: str | None = None,
) -> PipelineResult:
    """Run ``pipeline`` inside a Prefect flow run on ``executor``.

    Returns the same :class:`PipelineResult` as ``Pipeline.run``; raises the same
    errors (the flow run is then marked failed).
    """
    executor = executor or InlineExecutor()
    pipeline_flow = flow(
        _pipeline_flow_body,
        name=flow_name or f"pipeline-{pipeline.name}",
        task_runner=ThreadPoolTaskRunner(max_workers=executor.capacity + 2),
        validate_parameters=False,
        persist_result=False,
    )
    return pipeline_flow(
        pipeline,
        executor,
        os.fspath(checkpoint_path) if checkpoint_path is not None else None,
        _artifact_key(artifact_key),
    )


def _artifact_key(key: str | None) -> str | None:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    if key is None:
        return None
    cleaned = "".join(c if c.isalnum() else "-" for c in key.lower()).strip("-")
    return cleaned or None
