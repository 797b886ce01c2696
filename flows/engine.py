"""Run a pipeline as a Prefect flow: a bounded number of Prefect task runs per pass.

The heavy work runs on the chosen executor (process pool or Ray) exactly as in
``Pipeline.run``, one unit per source partition; Prefect sees it. The partitions of
a pass are followed by at most ``CURATE_PREFECT_TASK_RUNS`` (default 256) Prefect task
runs: task run ``k`` follows the contiguous batch of partitions ``[k * size, (k + 1) *
size)`` in submission order, on a thread pool, so its duration and state are its
partitions' (a failed partition fails it). A pass of no more partitions than the bound
keeps one task run per partition, named ``<pass>-<source id>`` as before; a larger one
names each task run after its first partition and how many follow
(``<pass>-<source id>+<n>``). A Prefect task run costs the server ~24 KB of database
and the flow 50-90 ms; at 160,000 partitions one per partition was most of a day and
tens of GB (docs/engine.md, docs/benchmarks.md section 12).

The batch size needs the pass's partition count, which the wrapper learns from the
first :class:`~curator.pipeline.Progress` (``Progress.total``), relayed by
:func:`observe_progress` (the flows' progress hooks call it), or at the end of the pass
from what was submitted. Until then, submitted partitions wait for their task run;
the executor never waits for Prefect. The progress artifacts are updated at most once
a second and at the end (:mod:`flows.progress`), not per partition; the per-partition
detail is in the checkpoint and the step's own artifacts.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import os
import threading
import time
import uuid
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import (
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from prefect.futures import wait as wait_prefect
from prefect.task_runners import ThreadPoolTaskRunner

from curator.artifacts import readable_table
from curator.execution import Executor, InlineExecutor, UnitResult, WorkerChain
from curator.pipeline import Pipeline, PipelineResult, Progress
from curator.tasks import Task
from flows.prefect_logging import engine_logs_to_prefect

#: Environment variable: at most this many Prefect task runs per pass (default 256).
TASK_RUNS_ENV = "CURATE_PREFECT_TASK_RUNS"
DEFAULT_TASK_RUNS = 256
#: Seconds between two updates of a progress artifact (the last one is always sent).
PROGRESS_INTERVAL = 1.0

_BATCHES: dict[str, _Batch] = {}
_BATCHES_LOCK = threading.Lock()
_ACTIVE = threading.local()  # the wrapper whose pass runs in this (the driver's) thread


def task_run_bound() -> int:
    """The most Prefect task runs a pass makes: ``CURATE_PREFECT_TASK_RUNS`` or 256."""
    raw = os.environ.get(TASK_RUNS_ENV, "").strip()
    try:
        return max(1, int(raw)) if raw else DEFAULT_TASK_RUNS
    except ValueError:
        return DEFAULT_TASK_RUNS


class _Batch:
    """The partitions one task run follows, added as they are submitted."""

    def __init__(self) -> None:
        self._parts: collections.deque[tuple[str, cf.Future[UnitResult]]] = collections.deque()
        self._closed = False
        self._cond = threading.Condition()

    def add(self, source_id: str, future: cf.Future[UnitResult]) -> None:
        with self._cond:
            self._parts.append((source_id, future))
            self._cond.notify_all()

    def close(self) -> None:
        """No more partitions: the task run ends once those it has returned."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _next(self) -> tuple[str, cf.Future[UnitResult]] | None:
        with self._cond:
            while not self._parts and not self._closed:
                self._cond.wait()
            return self._parts.popleft() if self._parts else None

    def follow(self) -> dict[str, Any]:
        """Wait for every partition; raise the first failure (else a cancellation)."""
        first = last = ""
        done, items, workers = 0, 0, set()
        failed: list[tuple[str, BaseException]] = []
        while (part := self._next()) is not None:
            sid, future = part
            first, last = first or sid, sid
            try:
                unit = future.result()
            except BaseException as exc:  # a failure, or cancelled on a drain
                failed.append((sid, exc))
                continue
            done += 1
            items += int(sum(t.num_items for t in unit.tasks))
            workers.add(unit.worker)
        errors = [e for e in failed if not isinstance(e[1], cf.CancelledError)] or failed
        if done + len(failed) == 1:  # one partition: what its task run always returned
            if errors:
                raise errors[0][1]
            return {"source_id": first, "worker": unit.worker, "final_items": items}
        summary = {"partitions": done + len(failed), "completed": done, "first": first,
                   "last": last, "final_items": items, "workers": sorted(workers)}
        get_run_logger().info(
            "partitions %s..%s: %d of %d completed, %d items%s", first, last, done,
            done + len(failed), items,
            f"; {errors[0][0]} failed: {errors[0][1]}" if errors else "")
        if errors:
            raise errors[0][1]
        return summary


@task(cache_policy=NO_CACHE, persist_result=False, log_prints=False)
def source_partitions(key: str) -> dict[str, Any]:
    """Follow a batch of source partitions on the executor until they all return."""
    with _BATCHES_LOCK:
        batch = _BATCHES.pop(key)
    return batch.follow()


def observe_progress(progress: Progress) -> None:
    """Tell the wrapper running in this thread how many partitions its pass has."""
    wrapper = getattr(_ACTIVE, "executor", None)
    if wrapper is not None:
        wrapper.expect(progress.total)


class PrefectTaskExecutor(Executor):
    """Wraps an executor so each pass's partitions are followed by a bounded number of
    Prefect task runs (``max_task_runs``, default :func:`task_run_bound`)."""

    def __init__(self, inner: Executor, max_task_runs: int | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_task_runs = max(1, max_task_runs or task_run_bound())
        self._observers: list[PrefectFuture[Any]] = []
        self._prefix = "partition"
        self._reset()

    def _reset(self) -> None:
        self._unassigned: collections.deque[tuple[str, cf.Future[UnitResult]]] = (
            collections.deque())
        self._assigned = 0
        self._total = 0
        self._size = 0  # 0: not known yet
        self._batch: _Batch | None = None

    @property
    def capacity(self) -> int:
        return self.inner.capacity

    def start(self, chain: WorkerChain) -> None:
        # task runs are named after the pass (``audit-scan-<source>``): a step's passes
        # over the same partitions are told apart in the UI
        self._prefix = chain.name or "partition"
        self._reset()
        _ACTIVE.executor = self
        self.inner.start(chain)

    def submit(self, task: Task) -> cf.Future[UnitResult]:
        future = self.inner.submit(task)
        self._unassigned.append((task.source_id or "?", future))
        if self._size:
            self._assign()
        return future

    def expect(self, total: int) -> None:
        """The pass has ``total`` partitions: size the batches and start their task runs."""
        if not self._size and total > 0:
            self._total = max(total, self._assigned + len(self._unassigned))
            self._size = -(-self._total // self.max_task_runs)
            self._assign()

    def _assign(self) -> None:
        while self._unassigned:
            sid, future = self._unassigned.popleft()
            i, size = self._assigned, self._size
            if i % size == 0:
                self._open(sid, min(size, max(self._total - i, 1)))
            assert self._batch is not None
            self._batch.add(sid, future)
            self._assigned += 1
            if self._assigned % size == 0 or self._assigned >= self._total:
                self._batch.close()

    def _open(self, first: str, expected: int) -> None:
        if self._batch is not None:
            self._batch.close()
        self._batch = batch = _Batch()
        key = uuid.uuid4().hex
        with _BATCHES_LOCK:
            _BATCHES[key] = batch
        name = f"{self._prefix}-{first}" + (f"+{expected - 1}" if expected > 1 else "")
        self._observers.append(source_partitions.with_options(task_run_name=name).submit(key))

    def stop(self, abandon: bool = False) -> None:
        try:
            self.inner.stop(abandon=abandon)
        finally:
            if not abandon:  # partitions not yet in a task run get theirs now
                self.expect(self._assigned + len(self._unassigned))
            if self._batch is not None:
                self._batch.close()
            if not abandon:
                wait_prefect(self._observers)
            self._observers = []
            self._reset()
            _ACTIVE.executor = None

    def close(self) -> None:
        self.inner.close()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


class ProgressArtifact:
    """A Prefect progress artifact, updated at most every :data:`PROGRESS_INTERVAL`
    seconds and whenever it reaches 100%."""

    def __init__(self, key: str | None, description: str) -> None:
        # a phase's name may hold what a key may not (``holdout_index``)
        self.id = create_progress_artifact(progress=0.0, key=_artifact_key(key),
                                           description=description)
        self._sent = 0.0
        self._last = 0.0

    def update(self, percent: float, force: bool = False) -> None:
        now = time.monotonic()
        if percent == self._sent or not (
                force or percent >= 100.0 or now - self._last >= PROGRESS_INTERVAL):
            return
        update_progress_artifact(self.id, progress=percent)
        self._sent, self._last = percent, now


class _Opaque:
    """The flow's return value, which Prefect leaves alone: on return it walks a
    dataclass field by field looking for futures, 9 s for 100,000 partitions' tasks."""

    __slots__ = ("value",)

    def __init__(self, value: PipelineResult) -> None:
        self.value = value


def _pipeline_flow_body(
    pipeline: Pipeline,
    executor: Executor,
    checkpoint_path: str | None,
    artifact_key: str | None,
) -> _Opaque:
    progress = ProgressArtifact(artifact_key and f"{artifact_key}-progress",
                                f"{pipeline.name}: source partitions done")

    def on_progress(p: Progress) -> None:
        observe_progress(p)
        progress.update(100.0 * p.done / max(p.total, 1))

    with engine_logs_to_prefect():
        result = pipeline.run(
            executor=PrefectTaskExecutor(executor),
            checkpoint_path=checkpoint_path,
            on_progress=on_progress,
        )
    progress.update(100.0, force=True)
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
    return _Opaque(result)
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
    ).value


def _artifact_key(key: str | None) -> str | None:
    """Prefect artifact keys allow lowercase letters, digits and dashes only."""
    if key is None:
        return None
    cleaned = "".join(c if c.isalnum() else "-" for c in key.lower()).strip("-")
    return cleaned or None
