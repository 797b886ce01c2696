"""The adapter: the one place that runs a stage on a batch and does the bookkeeping.

Every executor calls :meth:`StageAdapter.process_batch`; none re-implements it.
In order, it

1. runs ``stage.process_batch``;
2. turns ``None`` results into :class:`NoneTask`;
3. assigns lineage ids (sentinels included) and carries the source id down;
4. refuses a :class:`FailedTask` from the source stage;
5. opens one pending descendant per new source partition (source stage);
6. reports, per input slot, which of its outputs are still pending
   (:class:`CompletionEvent`), unless the mapping is ambiguous (M->K);
7. strips sentinels.

Id rules (as in the reference):

- one input (fan-out, or a source reading the root): output ``i`` gets
  ``parent_<seg>``, ``seg`` = the task's deterministic id at a source stage, else ``i``;
- as many outputs as inputs: positional, ``parent_<seg>``, ``seg`` = deterministic
  id or the position ``i`` at a source stage, ``0`` elsewhere. (The reference uses
  ``0`` at a source too, which gives every source of an N->N source stage without
  deterministic ids the same source id ``0``: they share one completion record and
  one output name. The source stage sees all its inputs in one batch, so ``i`` is
  unique.);
- any other M->K: ``"r" + uuid4().hex``, no source id, one warning, and the sources
  involved stay pending (they replay on the next run).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from curator.errors import CuratorError
from curator.stages import ProcessingStage
from curator.tasks import FailedTask, NoneTask, SentinelTask, Task

log = logging.getLogger("curator.resumability")


@dataclass(frozen=True)
class CompletionEvent:
    """One input slot of one stage was resolved into the outputs still pending.

    ``task_id`` is the input slot's lineage id; ``children`` are the ids of its
    outputs that still have work ahead of them (real tasks before the sink, and
    failed slots, which never resolve in this run). ``delta`` is the change in the
    source's pending-descendant count, the reference's counter delta.
    """

    task_id: str
    source_id: str
    children: tuple[str, ...] = ()

    @property
    def delta(self) -> int:
        return len(self.children) - 1


@dataclass
class AdapterResult:
    tasks: list[Task]
    opened: list[tuple[str, str]] = field(default_factory=list)  # (source_id, task_id)
    events: list[CompletionEvent] = field(default_factory=list)
    seconds: float = 0.0


def _set_id(task: Task, parent: str, segment: str) -> None:
    task._task_id = f"{parent}_{segment}" if parent else segment


def _random_id() -> str:
    return "r" + uuid.uuid4().hex


@dataclass
class StageAdapter:
    """Runs one stage with its pipeline role.

    ``tracked`` is false for stages outside the source..sink span: stages before the
    source see no source ids, and stages after an explicit sink must not reopen
    sources the sink already consumed.
    """

    stage: ProcessingStage
    is_source: bool = False
    is_sink: bool = False
    tracked: bool = True

    def process_batch(self, inputs: Sequence[Task]) -> AdapterResult:
        inputs = list(inputs)
        # A stage may return its input object: lineage of the inputs is read first.
        parents = [(t._task_id, t._source_id) for t in inputs]
        start = time.perf_counter()
        raw = self.stage.process_batch(inputs)
        seconds = time.perf_counter() - start
        if raw is None:
            raw = []
        outputs: list[Task] = [NoneTask() if r is None else r for r in raw]

        groups = self._assign_ids(parents, outputs)

        result = AdapterResult(tasks=[], seconds=seconds)
        if self.is_source:  # one pass: a source stage may plan a million partitions
            kept: list[Task] = []
            opened = result.opened
            failed = False
            for out in outputs:
                if isinstance(out, SentinelTask):
                    failed = failed or isinstance(out, FailedTask)
                    continue
                kept.append(out)
                if out._source_id is not None:
                    opened.append((out._source_id, out._task_id))
            if failed:
                raise CuratorError(
                    "source_stage_failed_task",
                    f"Source stage {self.stage.stage_name} emitted FailedTask, which is not "
                    "supported.",
                )
            if self.is_sink:  # a single-stage pipeline: the source is consumed at once
                result.events.extend(
                    CompletionEvent(tid, sid) for sid, tid in result.opened
                )
            result.tasks = kept
            return result
        if self.tracked and groups is not None:
            for (parent_id, source_id), children in groups:
                if source_id is None:
                    continue  # pre-source inputs: nothing to attribute
                pending = tuple(
                    c.task_id
                    for c in children
                    if isinstance(c, FailedTask)
                    or (not self.is_sink and not isinstance(c, SentinelTask))
                )
                result.events.append(CompletionEvent(parent_id, source_id, pending))

        result.tasks = [o for o in outputs if not isinstance(o, SentinelTask)]
        return result

    def _assign_ids(
        self, parents: list[tuple[str, str | None]], outputs: list[Task]
    ) -> list[tuple[tuple[str, str | None], list[Task]]] | None:
        """Assign ids; return (parent, its outputs) pairs, or None for an ambiguous M->K."""
        m, k = len(parents), len(outputs)
        if m == 1:
            parent_id, parent_source = parents[0]
            prefix = f"{parent_id}_" if parent_id else ""  # as _set_id, once for all outputs
            if self.is_source:
                for i, out in enumerate(outputs):
                    seg = self._source_segment(out, i)
                    out._task_id = prefix + seg
                    out._source_id = seg
            else:
                for i, out in enumerate(outputs):
                    out._task_id = prefix + str(i)
                    out._source_id = parent_source
            return [(parents[0], outputs)] if k else []
        if m == k:
            for i, ((parent_id, parent_source), out) in enumerate(
                zip(parents, outputs, strict=True)
            ):
                seg = self._segment(out, str(i) if self.is_source else "0")
                _set_id(out, parent_id, seg)
                out._source_id = seg if self.is_source else parent_source
            return [(p, [o]) for p, o in zip(parents, outputs, strict=True)]
        for out in outputs:
            out._task_id = _random_id()
            out._source_id = None
        if self.tracked and (self.is_source or any(sid for _, sid in parents)):
            log.warning(
                "resumability: %s produced %d outputs for %d inputs; can't attribute "
                "sources, skipping counter update for this batch.",
                self.stage.stage_name, k, m,
            )
        return None

    def _segment(self, out: Task, default: str) -> str:
        return self._source_segment(out, default) if self.is_source else default

    @staticmethod
    def _source_segment(out: Task, default: str | int) -> str:
        """The source id of ``out``: its deterministic id, else ``default`` (a position)."""
        det = None if isinstance(out, SentinelTask) else out.get_deterministic_id()
        if det:
            if "_" in det:
                raise CuratorError(
                    "invalid_pipeline",
                    f"{type(out).__name__}.get_deterministic_id() returned {det!r}: "
                    "a source id must not contain '_'",
                )
            return det
        return str(default)
