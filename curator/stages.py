"""Stages: the units of work a pipeline chains together."""

from __future__ import annotations

import math
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from curator.errors import CuratorError
from curator.tasks import EmptyTask, FileGroupTask, Task

#: The counters of the source partition being processed, set by the runner.
current_stats: ContextVar[dict[str, float] | None] = ContextVar("current_stats", default=None)

X = TypeVar("X", bound=Task)
Y = TypeVar("Y", bound=Task)


@dataclass(frozen=True)
class Resources:
    """What a stage needs while it runs: CPUs, GPUs (both may be fractional) and memory.

    ``memory`` is in bytes; 0 reserves none. The Ray backend reserves, for the Ray task
    that takes a source partition through the stages after the source, the largest of
    each figure over those stages (:meth:`largest`). The process pool does not use it:
    its ``workers`` decides how many partitions run at once. See ``docs/engine.md``.
    """

    cpus: float = 1.0
    gpus: float = 0.0
    memory: int = 0

    def __post_init__(self) -> None:
        for key in ("cpus", "gpus", "memory"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                0 <= value < math.inf
            ):
                raise CuratorError("invalid_resources",
                                   f"Resources.{key} must be a finite number >= 0, got {value!r}")

    @classmethod
    def largest(cls, each: Iterable[Resources]) -> Resources:
        """The requirement of a chain of stages: the largest of each figure.

        A chain of no stages needs what a stage needs by default.
        """
        items = list(each)
        if not items:
            return cls()
        return cls(cpus=max(r.cpus for r in items), gpus=max(r.gpus for r in items),
                   memory=max(r.memory for r in items))


class ProcessingStage(Generic[X, Y]):
    """A step of a pipeline.

    Implement :meth:`process` (one task in, a task / ``None`` / a list of tasks out),
    or override :meth:`process_batch` for batch-wise work; an overridden
    ``process_batch`` must return one task or ``None`` per input, in order.

    Class attributes a stage may override:

    - ``name``: shown in logs and statistics.
    - ``is_source_stage`` / ``is_sink_stage``: at most one stage of a pipeline may be
      marked each way; unmarked, the first stage is the source and the last the sink.
    - ``is_resumable``: ``False`` for stages that cannot be replayed per source
      partition; a checkpointed run refuses them.
    - ``batch_size``: how many tasks :meth:`process_batch` receives at once.
    - ``resources``: what the stage needs while it runs (:class:`Resources`); honoured
      by the Ray backend.
    """

    name: str = ""
    is_source_stage: bool = False
    is_sink_stage: bool = False
    is_resumable: bool = True
    batch_size: int = 1
    resources: Resources = Resources()

    @property
    def stage_name(self) -> str:
        return self.name or type(self).__name__

    def process(self, task: X) -> Y | list[Y] | None:
        raise NotImplementedError(
            f"{self.stage_name} implements neither process() nor process_batch()"
        )

    def process_batch(self, tasks: list[X]) -> list[Y | None]:
        """Default: :meth:`process` per input; a list result is flattened (fan-out)."""
        out: list[Any] = []
        for task in tasks:
            result = self.process(task)
            if isinstance(result, list):
                out.extend(result)
            else:
                out.append(result)
        return out

    def setup(self) -> None:
        """Called once per worker process before the first task (load a model, etc.)."""

    def teardown(self) -> None:
        """Called once per worker process after the last task."""

    def stat_update(self, key: str, value: float = 1) -> None:
        """Add ``value`` to a named counter of this stage.

        Counters are returned per source partition, persisted with its completion
        record when the run is checkpointed, and merged from disk at the end, so a
        resumed run's statistics cover every completed source partition.
        """
        stats = current_stats.get()
        if stats is not None:
            full = f"{self.stage_name}.{key}"
            stats[full] = stats.get(full, 0) + value


@dataclass
class OneUnit(ProcessingStage[EmptyTask, FileGroupTask]):
    """The source stage of a phase with one unit, named by ``files`` (its checkpoint
    key): work that must be one sequential pass (one writer of one object, one digest
    over sorted input) done on a worker, not in the driver."""

    files: list[str]
    name: str = "one_unit"

    def process(self, task: EmptyTask) -> list[FileGroupTask]:
        return [FileGroupTask(data=list(self.files), _metadata={"one_unit": True})]
