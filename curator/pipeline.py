"""The pipeline: stages in order, run on an executor, optionally checkpointed.

``run()`` is one straight line: build and validate the chain -> open the
checkpoint -> run the stages up to the source in this process -> drop source
partitions already complete -> hand the rest to the executor, one unit per
partition -> apply each unit's completion events as it returns -> merge the
statistics of every completed partition from disk.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from curator.adapter import StageAdapter
from curator.checkpoint import DEFAULT_MAP_SIZE, CheckpointStore
from curator.completion import CompletionTracker
from curator.errors import CuratorError
from curator.execution import Executor, InlineExecutor, UnitResult, WorkerChain
from curator.interrupts import Interrupts
from curator.logs import default_stderr_logging
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, Task

if TYPE_CHECKING:
    from curator.checkpoint_mirror import CheckpointMirror

log = logging.getLogger("curator.pipeline")

#: Units handed to an executor per slot of its capacity. Two keep every worker busy
#: while the driver records what returned (one durable commit per group), instead
#: of idling a worker for each commit.
IN_FLIGHT_PER_SLOT = 2

#: Partitions that returned are recorded together: at most every COMMIT_INTERVAL
#: seconds or COMMIT_MAX partitions, and at once at the end or on a drain. Their
#: output is already durable, so waiting can only make a crash replay them.
COMMIT_INTERVAL = 0.05
COMMIT_MAX = 256


@dataclass(frozen=True)
class Progress:
    """Sent to ``on_progress`` after each source partition returns."""

    done: int
    total: int
    source_id: str
    completed: bool
    items: int = 0
    stats: dict[str, float] = field(default_factory=dict)


@dataclass
class PipelineResult:
    """What a run did. ``stats`` covers every completed partition, earlier runs included."""

    tasks: list[Task]
    sources_total: int
    sources_skipped: int
    sources_completed: int
    sources_pending: list[str]
    stats: dict[str, float]
    checkpoint_file: Path | None = None
    skipped_stats: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    perf: dict[str, float] = field(default_factory=dict)

    def __iter__(self):  # convenient: ``for task in pipeline.run(...)``
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)


_GC_LOCK = threading.Lock()
_GC_PAUSES = [0, False]  # planners in progress, whether the collector was on before them


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a plan is built.

    A plan of a million partitions allocates several million container objects that
    all stay alive; the collector's full passes rescan every one of them, which was
    half the planning time (docs/benchmarks.md section 2). Reference counting still
    frees everything that is not in a cycle. Nested or concurrent plans (threads)
    share one pause; the collector's previous state is restored after the last.
    """
    with _GC_LOCK:
        if _GC_PAUSES[0] == 0:
            _GC_PAUSES[1] = gc.isenabled()
            gc.disable()
        _GC_PAUSES[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSES[0] -= 1
            if _GC_PAUSES[0] == 0 and _GC_PAUSES[1]:
                gc.enable()


def _split_completed(
    sources: list[Task], completed: AbstractSet[str]
) -> tuple[list[Task], list[str]]:
    """The source partitions still to run, and the ids of those already complete
    (one pass, in plan order: it runs over every planned partition)."""
    pending: list[Task] = []
    skipped: list[str] = []
    for task in sources:
        sid = task._source_id or ""
        if sid in completed:
            skipped.append(sid)
        else:
            pending.append(task)
    return pending, skipped


def merge_stats(per_source: Iterable[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for stats in per_source:
        for key, value in stats.items():
            total[key] = total.get(key, 0) + value
    return dict(sorted(total.items()))


class Pipeline:
    """An ordered list of stages."""

    def __init__(
        self, name: str, stages: list[ProcessingStage] | None = None, description: str = ""
    ) -> None:
        self.name = name
        self.description = description
        self.stages: list[ProcessingStage] = list(stages or [])

    def add_stage(self, stage: ProcessingStage) -> Pipeline:
        self.stages.append(stage)
        return self

    # -- build --------------------------------------------------------------------
    def build(self) -> tuple[list[ProcessingStage], int, int]:
        """Validate the stages' source and sink marks; return the stages and their indices."""
        stages = list(self.stages)
        if not stages:
            raise CuratorError("invalid_pipeline", f"pipeline {self.name!r} has no stages")
        sources = [i for i, s in enumerate(stages) if s.is_source_stage]
        sinks = [i for i, s in enumerate(stages) if s.is_sink_stage]
        if len(sources) > 1 or len(sinks) > 1:
            which = "source" if len(sources) > 1 else "sink"
            names = [stages[i].stage_name for i in (sources if which == "source" else sinks)]
            raise CuratorError(
                "invalid_pipeline", f"more than one stage is marked as the {which}: {names}"
            )
        source = sources[0] if sources else 0
        sink = sinks[0] if sinks else len(stages) - 1
        if sink < source:
            raise CuratorError(
                "invalid_pipeline",
                f"the sink {stages[sink].stage_name} comes before the source "
                f"{stages[source].stage_name}",
            )
        return stages, source, sink

    # -- run ----------------------------------------------------------------------
    def run(
        self,
        executor: Executor | None = None,
        initial_tasks: list[Task] | None = None,
        checkpoint_path: str | os.PathLike[str] | None = None,
        *,
        map_size: int = DEFAULT_MAP_SIZE,
        writer_id: str | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        checkpoint_mirror: CheckpointMirror | None = None,
    ) -> PipelineResult:
        """Run the pipeline; see the module docstring and ``docs/engine.md``.

        ``checkpoint_mirror`` mirrors the checkpoint (a local directory under its
        ``local_root``) to object storage: ``docs/storage.md``.

        When nobody has configured logging, the engine's INFO lines (partitions pending
        and skipped, the end-of-run summary) go to stderr for the run: see
        :mod:`curator.logs`.
        """
        with default_stderr_logging():
            return self._run_logged(executor, initial_tasks, checkpoint_path, map_size,
                                    writer_id, on_progress, checkpoint_mirror)

    def _run_logged(
        self,
        executor: Executor | None,
        initial_tasks: list[Task] | None,
        checkpoint_path: str | os.PathLike[str] | None,
        map_size: int,
        writer_id: str | None,
        on_progress: Callable[[Progress], None] | None,
        mirror: CheckpointMirror | None = None,
    ) -> PipelineResult:
        started = time.perf_counter()
        stages, src, sink = self.build()
        if checkpoint_path is not None:
            refused = [s.stage_name for s in stages if not s.is_resumable]
            if refused:
                raise CuratorError(
                    "non_resumable_stage",
                    f"pipeline {self.name!r} is run with checkpoint_path but these stages "
                    f"are not resumable: {', '.join(refused)}. Run without checkpoint_path.",
                )
        executor = executor or InlineExecutor()
        adapters = [
            StageAdapter(s, is_source=i == src, is_sink=i == sink, tracked=src <= i <= sink)
            for i, s in enumerate(stages)
        ]
        store = (
            CheckpointStore(checkpoint_path, writer_id=writer_id, map_size=map_size,
                            mirror=mirror)
            if checkpoint_path is not None
            else None
        )
        try:
            return self._run(executor, adapters, src, initial_tasks, store, on_progress, started)
        finally:
            if store is not None:
                store.close()

    def _run(
        self,
        executor: Executor,
        adapters: list[StageAdapter],
        src: int,
        initial_tasks: list[Task] | None,
        store: CheckpointStore | None,
        on_progress: Callable[[Progress], None] | None,
        started: float,
    ) -> PipelineResult:
        tracker = CompletionTracker(store)
        consumed_at_source = adapters[src].is_sink
        with _gc_paused():
            # a copy only when planning itself completes sources (the source is the sink)
            already = tracker.completed if consumed_at_source else tracker.completed_live
            sources = self._plan_sources(adapters[: src + 1], initial_tasks, tracker)
            pending, skipped_ids = _split_completed(sources, already)
        total = len(sources)
        skipped = len(skipped_ids)
        pending_planned = pending
        if store is not None:
            log.info(
                "%s: %d source partitions: %d pending, %d skipped as complete (checkpoint %s)",
                self.name, len(sources), len(pending), skipped, store.root,
            )
        else:
            log.info("%s: %d source partitions", self.name, len(sources))

        results: list[Task] = []
        this_run: dict[str, dict[str, float]] = {}
        if consumed_at_source:  # completed in _plan_sources; later stages are untracked
            this_run = {t.source_id or "": {} for t in pending}
            if len(adapters) == src + 1:
                results, pending = list(pending), []
        perf: dict[str, float] = {}
        failures: list[tuple[str, BaseException]] = []
        unfinished: list[str] = []
        done = 0
        chain = WorkerChain.from_adapters(uuid.uuid4().hex, adapters[src + 1 :], self.name)
        queue = list(reversed(pending))
        inflight: dict[cf.Future[UnitResult], Task] = {}
        abandon = False
        buffered: list[tuple[str, UnitResult]] = []
        last_commit = time.monotonic()

        def since() -> float:
            return time.monotonic() - last_commit

        def record(returned: list[tuple[str, UnitResult]]) -> None:
            """Apply what returned, with one durable commit for all of it."""
            nonlocal done
            newly = set() if consumed_at_source or not returned else set(tracker.apply(
                [e for _, unit in returned for e in unit.events],
                {sid: unit.stats for sid, unit in returned},
            ))
            for sid, unit in returned:
                completed = consumed_at_source or sid in newly
                if sid in newly:
                    this_run[sid] = unit.stats
                elif not completed:
                    tracker.release(sid)
                    unfinished.append(sid)
                results.extend(unit.tasks)
                for name, secs in unit.perf.items():
                    perf[name] = perf.get(name, 0.0) + secs
                done += 1
                if on_progress is not None:
                    on_progress(
                        Progress(done, len(pending), sid, completed,
                                 sum(t.num_items for t in unit.tasks), unit.stats)
                    )

        with Interrupts.draining() as interrupts:  # signals: stop starting, then abandon
            executor.start(chain)
            try:
                while queue or inflight:
                    while queue and len(inflight) < IN_FLIGHT_PER_SLOT * executor.capacity and not (
                        interrupts.received or failures
                    ):
                        task = queue.pop()
                        if not consumed_at_source:
                            tracker.open(task.source_id or "", task.task_id)
                        inflight[executor.submit(task)] = task
                    if not inflight:
                        break
                    wait = 0.2 if not buffered else max(0.0, COMMIT_INTERVAL - since())
                    finished, _ = cf.wait(inflight, timeout=wait, return_when=cf.FIRST_COMPLETED)
                    for future in [f for f in inflight if f in finished]:  # submission order
                        sid = inflight.pop(future).source_id or ""
                        try:
                            buffered.append((sid, future.result()))
                        except BaseException as exc:
                            log.error("%s: source partition %s failed: %s", self.name, sid, exc)
                            failures.append((sid, exc))
                            tracker.release(sid)
                            unfinished.append(sid)
                    if buffered and (
                        since() >= COMMIT_INTERVAL or len(buffered) >= COMMIT_MAX
                        or not (queue or inflight) or interrupts.received or failures
                    ):
                        record(buffered)
                        buffered = []
                        last_commit = time.monotonic()
                    if (interrupts.received or failures) and inflight:
                        self._cancel_waiting(inflight, tracker, unfinished)
                    if interrupts.count >= 2:
                        abandon = True
                        break
                record(buffered)  # outputs in place are recorded, even when abandoning
            finally:
                executor.stop(abandon=abandon)

        # stable: plan order. Results come only from pending sources, whose plan order
        # is theirs in ``pending`` (a subsequence of ``sources``): no pass over all.
        order = {t.source_id: i for i, t in enumerate(pending_planned)}
        results.sort(key=lambda t: order.get(t.source_id, len(order)))
        unfinished.extend(t.source_id or "" for t in queue)
        unfinished.extend(t.source_id or "" for t in inflight.values())
        per_source = store.refreshed_stats() if store else this_run
        stats = merge_stats(per_source.values())
        skipped_stats = merge_stats(per_source[s] for s in skipped_ids if s in per_source)
        result = PipelineResult(
            tasks=results,
            sources_total=total,
            sources_skipped=skipped,
            sources_completed=len(this_run),
            sources_pending=sorted(unfinished),
            stats=stats,
            checkpoint_file=store.path if store else None,
            skipped_stats=skipped_stats,
            seconds=time.perf_counter() - started,
            perf=perf,
        )
        log.log(
            logging.WARNING if interrupts.received or failures else logging.INFO,
            "%s: %s: %d source partitions completed in this run, %d skipped as complete, "
            "%d failed, %d left pending, %.1fs",
            self.name, "stopped" if interrupts.received or failures else "finished",
            result.sources_completed, skipped, len(failures),
            len(result.sources_pending) - len(failures), result.seconds,
        )
        self._raise_if_stopped(interrupts.received, failures, result, store)
        return result

    @staticmethod
    def _cancel_waiting(
        inflight: dict[cf.Future[UnitResult], Task],
        tracker: CompletionTracker,
        unfinished: list[str],
    ) -> None:
        """On a drain, partitions still queued (not yet started) are not waited for."""
        for future in [f for f in inflight if f.cancel()]:
            sid = inflight.pop(future).source_id or ""
            tracker.release(sid)
            unfinished.append(sid)

    def _plan_sources(
        self,
        adapters: list[StageAdapter],
        initial_tasks: list[Task] | None,
        tracker: CompletionTracker,
    ) -> list[Task]:
        """Run the stages up to and including the source here, in the driver.

        Returns the source partitions. When the source stage is also the sink, the
        partitions it consumed are completed here (sources already complete are
        left alone).
        """
        if initial_tasks is None:
            tasks: list[Task] = [EmptyTask()]
        else:
            tasks = list(initial_tasks)
            for i, task in enumerate(tasks):  # positional root ids, deliberately not hashed
                task._task_id = f"0_{i}"
        for adapter in adapters:
            adapter.stage.setup()
            try:
                size = len(tasks) if adapter.is_source else max(1, adapter.stage.batch_size)
                out: list[Task] = []
                for i in range(0, len(tasks), max(size, 1)):
                    result = adapter.process_batch(tasks[i : i + size])
                    out.extend(result.tasks)
                    if adapter.is_sink:  # consumed at the source
                        fresh = {sid for sid, _ in result.opened if not tracker.is_completed(sid)}
                        for sid, tid in result.opened:
                            if sid in fresh:
                                tracker.open(sid, tid)
                        tracker.apply(
                            (e for e in result.events if e.source_id in fresh),
                            {sid: {} for sid in fresh},
                        )
                tasks = out
            finally:
                adapter.stage.teardown()
        return tasks

    def _raise_if_stopped(
        self,
        signum: int | None,
        failures: list[tuple[str, BaseException]],
        result: PipelineResult,
        store: CheckpointStore | None,
    ) -> None:
        resume = (
            f"Rerun with the same checkpoint_path ({store.root}) to resume; completed "
            "partitions are skipped."
            if store
            else "Run with checkpoint_path to make the run resumable."
        )
        if signum is not None:
            name = signal.Signals(signum).name
            raise CuratorError(
                f"interrupted_{name.lower()}",
                f"{self.name} was interrupted by {name}: {result.sources_completed} source "
                f"partitions completed in this run, {len(result.sources_pending)} not. {resume}",
                result=result,
            )
        if failures:
            sid, exc = failures[0]
            raise CuratorError(
                "partition_failed",
                f"{self.name}: {len(failures)} source partition(s) failed, first {sid}: "
                f"{type(exc).__name__}: {exc}. {resume}",
                result=result,
            ) from exc
