"""The executor interface and the work a worker does for one source partition.

A run plans its source partitions in the driver, then hands each one to an
executor as a *unit*: the worker takes the partition through every stage after
the source (read -> stages -> write), depth first, and returns its completion
events, its statistics and its final tasks. The driver applies the events to the
completion tracker. Executors only decide where units run; they all call
:func:`run_unit`, which calls the one adapter.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import contextlib
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import cloudpickle

from curator.adapter import CompletionEvent, StageAdapter
from curator.io import shared
from curator.io.partitioning import check_planned
from curator.io.shared import SharedArea
from curator.stages import current_stats
from curator.tasks import Task


@dataclass
class UnitResult:
    """What a worker returns for one source partition."""

    source_id: str
    events: list[CompletionEvent]
    tasks: list[Task]
    stats: dict[str, float]
    perf: dict[str, float] = field(default_factory=dict)  # seconds per stage
    worker: str = ""


@dataclass
class WorkerChain:
    """The stages after the source, shipped once to every worker as pickled bytes."""

    token: str
    blob: bytes
    name: str = ""  # the pipeline's name (``audit-scan``): what an observer calls its units
    #: the step's output area on object storage (its local copy and URL), if any
    area: SharedArea | None = None

    @classmethod
    def from_adapters(cls, token: str, adapters: list[StageAdapter],
                      name: str = "") -> WorkerChain:
        for adapter in adapters:
            _pickle_by_value_if_local(type(adapter.stage))
        return cls(token=token, blob=cloudpickle.dumps(adapters), name=name,
                   area=shared.current())


_PACKAGES = ("curator", "executors", "flows")


def _pickle_by_value_if_local(cls: type) -> None:
    """Ship stage classes from scripts and test modules by value.

    A worker (a spawned process, a Ray worker on another node) can import installed
    packages but not the user's script or test file, so classes defined there are
    pickled with their code.
    """
    module = sys.modules.get(cls.__module__)
    if module is None or cls.__module__ == "__main__":
        return  # cloudpickle already ships __main__ by value
    if cls.__module__.split(".")[0] in _PACKAGES:
        return
    path = getattr(module, "__file__", "") or ""
    if "site-packages" in path or "dist-packages" in path or path.startswith(sys.base_prefix):
        return
    cloudpickle.register_pickle_by_value(module)


_CHAINS: dict[str, list[StageAdapter]] = {}
_ATEXIT = False


def _chain_for(chain: WorkerChain) -> list[StageAdapter]:
    """Unpickle and set up a chain once per worker process.

    A worker keeps only the chain of the run it is serving: a pool or a Ray worker
    that outlives a run tears the previous run's stages down when the next begins.
    """
    adapters = _CHAINS.get(chain.token)
    if adapters is None:
        for token in list(_CHAINS):
            release_chain(token)
        adapters = cloudpickle.loads(chain.blob)
        for adapter in adapters:
            adapter.stage.setup()
        _CHAINS[chain.token] = adapters
        global _ATEXIT
        if not _ATEXIT:
            atexit.register(_teardown_all)
            _ATEXIT = True
    return adapters


def _teardown_all() -> None:
    for adapters in _CHAINS.values():
        for adapter in adapters:
            with contextlib.suppress(Exception):  # best effort at process exit
                adapter.stage.teardown()
    _CHAINS.clear()


def release_chain(token: str) -> None:
    adapters = _CHAINS.pop(token, None)
    for adapter in adapters or []:
        adapter.stage.teardown()


def run_unit(chain: WorkerChain, task: Task, worker: str = "") -> UnitResult:
    """Take one source partition through the chain, depth first."""
    adapters = _chain_for(chain)
    events: list[CompletionEvent] = []
    final: list[Task] = []
    stats: dict[str, float] = {}
    perf: dict[str, float] = {}

    def push(level: int, tasks: list[Task]) -> None:
        if level == len(adapters):
            final.extend(tasks)
            return
        adapter = adapters[level]
        name = adapter.stage.stage_name
        size = max(1, adapter.stage.batch_size)
        for i in range(0, len(tasks), size):
            batch = tasks[i : i + size]
            stats[f"{name}.items_in"] = stats.get(f"{name}.items_in", 0) + sum(
                t.num_items for t in batch
            )
            result = adapter.process_batch(batch)
            stats[f"{name}.items_out"] = stats.get(f"{name}.items_out", 0) + sum(
                t.num_items for t in result.tasks
            )
            perf[name] = perf.get(name, 0.0) + result.seconds
            events.extend(result.events)
            push(level + 1, result.tasks)

    token = current_stats.set(stats)
    try:
        with shared.unit(chain.area):
            check_planned(task)  # input_changed: a file removed or rewritten since planning
            push(0, [task])
    finally:
        current_stats.reset(token)
    return UnitResult(
        source_id=task.source_id or "", events=events, tasks=final, stats=stats, perf=perf,
        worker=worker,
    )


class Executor(ABC):
    """Where units run. One interface; a local process pool and Ray implement it."""

    name: str = "executor"

    @property
    @abstractmethod
    def capacity(self) -> int:
        """How many units may be in flight at once."""

    @abstractmethod
    def start(self, chain: WorkerChain) -> None:
        """Prepare workers for a run of ``chain``."""

    @abstractmethod
    def submit(self, task: Task) -> cf.Future[UnitResult]:
        """Start one unit; the future resolves to its :class:`UnitResult`."""

    @abstractmethod
    def stop(self, abandon: bool = False) -> None:
        """End a run; ``abandon`` stops units still running without waiting.

        Workers may be kept for the next run (the phases of one step); :meth:`close`
        releases them.
        """

    def close(self) -> None:  # noqa: B027 - optional: an executor may hold nothing
        """Release the workers (a process pool, a Ray instance this executor started)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "capacity": self.capacity}


class InlineExecutor(Executor):
    """Runs units one after another in the calling process (tests, debugging)."""

    name = "inline"

    def __init__(self) -> None:
        self._chain: WorkerChain | None = None

    @property
    def capacity(self) -> int:
        return 1

    def start(self, chain: WorkerChain) -> None:
        self._chain = chain

    def submit(self, task: Task) -> cf.Future[UnitResult]:
        assert self._chain is not None, "start() first"
        future: cf.Future[UnitResult] = cf.Future()
        try:
            future.set_result(run_unit(self._chain, task, worker="inline"))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def stop(self, abandon: bool = False) -> None:
        if self._chain is not None:
            release_chain(self._chain.token)
        self._chain = None
