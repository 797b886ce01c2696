"""The adapter's bookkeeping: completion events per input slot (scenarios 5-11, 17).

Events are keyed on the *input slot* id; ``children`` are the outputs still pending
and ``delta == len(children) - 1`` is the reference's counter delta.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pytest

from curator.adapter import CompletionEvent, StageAdapter
from curator.checkpoint import CheckpointStore
from curator.completion import CompletionTracker
from curator.errors import CuratorError
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FailedTask, NoneTask, Task
from curator_testing.jsonl import DocumentBatch
from tests.unit._support import (
    Batched,
    Emit,
    Step,
    batch,
    completed_on_disk,
    read_log,
    run_adapter,
    source_tasks,
)

LOG = "curator.resumability"


@dataclass
class Mixed(ProcessingStage[DocumentBatch, DocumentBatch]):
    """One input fans out to a fixed mix of real tasks, ``None`` and ``FailedTask``."""

    kinds: tuple[str, ...] = ("real", "none", "failed")

    def process(self, task: DocumentBatch) -> list[Task | None]:
        make = {"real": lambda: DocumentBatch(data=task.data), "none": lambda: None,
                "failed": lambda: FailedTask(reason="x")}
        return [make[k]() for k in self.kinds]


# -- scenario 5: the 1:1 table -------------------------------------------------------

@pytest.mark.parametrize(
    ("is_sink", "behaviour", "pending", "delta"),
    [
        (False, {}, ("0_0_0",), 0),  # real task, non-sink
        (False, {"drop": ("0",)}, (), -1),  # NoneTask, non-sink
        (False, {"fail": ("0",)}, ("0_0_0",), 0),  # FailedTask, non-sink
        (True, {}, (), -1),  # real task, sink
        (True, {"drop": ("0",)}, (), -1),  # NoneTask, sink
        (True, {"fail": ("0",)}, ("0_0_0",), 0),  # FailedTask, sink
    ],
    ids=["real-nonsink", "none-nonsink", "failed-nonsink", "real-sink", "none-sink",
         "failed-sink"],
)
def test_scenario_05_one_to_one_deltas(is_sink, behaviour, pending, delta) -> None:
    """Scenario 5: real 0/-1, NoneTask -1/-1, FailedTask 0/0 (non-sink/sink)."""
    [task] = source_tasks(1)
    assert (task.task_id, task.source_id) == ("0_0", "0")
    result = run_adapter(Step(**behaviour), [task], is_sink=is_sink)
    assert result.events == [CompletionEvent("0_0", "0", pending)]
    assert result.events[0].delta == delta
    # sentinels never reach the next stage
    assert all(not isinstance(t, NoneTask | FailedTask) for t in result.tasks)
    expect_real = not behaviour
    assert [t.task_id for t in result.tasks] == (["0_0_0"] if expect_real else [])
    assert result.opened == []


# -- scenario 6: fan-out ------------------------------------------------------------

def test_scenario_06_fan_out_is_one_event_with_delta_plus_two() -> None:
    """Scenario 6: 1->3 at a non-sink is one event (keyed on the input slot), delta +2."""
    [task] = source_tasks(1)
    result = run_adapter(Step(fanout=3), [task])
    assert [t.task_id for t in result.tasks] == ["0_0_0", "0_0_1", "0_0_2"]
    assert all(t.source_id == "0" for t in result.tasks)
    assert result.events == [CompletionEvent("0_0", "0", ("0_0_0", "0_0_1", "0_0_2"))]
    assert result.events[0].delta == 2


def test_scenario_06_source_completes_after_the_third_sink_event(tmp_path) -> None:
    """Scenario 6: complete only after the third child is consumed; after two it replays."""
    [task] = source_tasks(1)
    store = CheckpointStore(tmp_path, writer_id="w-1")
    tracker = CompletionTracker(store)
    tracker.open("0", task.task_id)
    fan = run_adapter(Step(fanout=3), [task])
    assert tracker.apply(fan.events) == []
    sink = StageAdapter(Step(), is_sink=True)
    children = fan.tasks
    for child in children[:2]:
        assert tracker.apply(sink.process_batch([child]).events) == []
    assert not tracker.is_completed("0")
    # interrupted here: a fresh writer sees nothing, the whole source replays
    assert completed_on_disk(tmp_path) == frozenset()
    assert tracker.apply(sink.process_batch([children[2]]).events) == ["0"]
    store.close()
    assert completed_on_disk(tmp_path) == {"0"}


# -- scenarios 7 and 8: mixed fan-outs ----------------------------------------------

def test_scenario_07_mixed_fan_out_at_a_non_sink_never_completes() -> None:
    """Scenario 7: [real, None, Failed] gives net +1 and the source never completes."""
    [task] = source_tasks(1)
    result = run_adapter(Mixed(), [task])
    [event] = result.events
    assert event == CompletionEvent("0_0", "0", ("0_0_0", "0_0_2"))
    assert event.delta == 1
    assert [t.task_id for t in result.tasks] == ["0_0_0"]
    tracker = CompletionTracker()
    tracker.open("0", task.task_id)
    tracker.apply(result.events)
    sink = run_adapter(Step(), result.tasks, is_sink=True)
    assert tracker.apply(sink.events) == []
    assert not tracker.is_completed("0")
    assert tracker.in_flight == 1


def test_scenario_08_fan_out_at_the_sink_with_a_failure_stays_pending() -> None:
    """Scenario 8: [real, real, Failed] at the sink gives delta 0; the source stays pending."""
    [task] = source_tasks(1)
    result = run_adapter(Mixed(kinds=("real", "real", "failed")), [task], is_sink=True)
    [event] = result.events
    assert event == CompletionEvent("0_0", "0", ("0_0_2",))
    assert event.delta == 0
    tracker = CompletionTracker()
    tracker.open("0", task.task_id)
    assert tracker.apply(result.events) == []
    assert not tracker.is_completed("0")


def test_fan_out_at_the_sink_without_failures_completes() -> None:
    [task] = source_tasks(1)
    result = run_adapter(Mixed(kinds=("real", "real", "none")), [task], is_sink=True)
    assert result.events == [CompletionEvent("0_0", "0", ())]
    tracker = CompletionTracker()
    tracker.open("0", task.task_id)
    assert tracker.apply(result.events) == ["0"]


# -- scenario 9: an empty output list ------------------------------------------------

@pytest.mark.parametrize("is_sink", [False, True])
def test_scenario_09_empty_output_list_sends_nothing_and_the_source_reruns(is_sink) -> None:
    """Scenario 9: ``[]`` from a non-source stage: no event; the source stays pending."""
    [task] = source_tasks(1)
    result = run_adapter(Step(empty=("0",)), [task], is_sink=is_sink)
    assert result.tasks == []
    assert result.events == []
    tracker = CompletionTracker()
    tracker.open("0", task.task_id)
    assert tracker.apply(result.events) == []
    assert not tracker.is_completed("0")


# -- scenario 10: M -> K ---------------------------------------------------------------

def test_scenario_10_m_to_k_gets_random_ids_no_events_one_warning(caplog) -> None:
    """Scenario 10: 2 inputs -> 3 outputs: r-ids, unique, no '_', no events, one warning."""
    inputs = source_tasks(2)
    caplog.set_level(logging.WARNING, logger=LOG)
    result = run_adapter(Batched(k=3), inputs)
    ids = [t.task_id for t in result.tasks]
    assert len(ids) == 3 and len(set(ids)) == 3
    assert all(i.startswith("r") and "_" not in i for i in ids)
    assert all(t.source_id is None for t in result.tasks)
    assert result.events == []
    warnings = [r for r in caplog.records if "can't attribute" in r.getMessage()]
    assert len(warnings) == 1
    assert "3 outputs for 2 inputs" in warnings[0].getMessage()
    # the sources involved stay pending: they replay on the next run
    tracker = CompletionTracker()
    for t in inputs:
        tracker.open(t.source_id, t.task_id)
    assert tracker.apply(result.events) == []
    assert tracker.completed == frozenset()
    # a later stage cannot attribute these outputs either
    assert run_adapter(Step(), result.tasks, is_sink=True).events == []


def test_scenario_10_one_warning_per_ambiguous_batch(caplog) -> None:
    caplog.set_level(logging.WARNING, logger=LOG)
    adapter = StageAdapter(Batched(k=1))
    inputs = source_tasks(4)
    adapter.process_batch(inputs[:2])
    adapter.process_batch(inputs[2:])
    assert len([r for r in caplog.records if "can't attribute" in r.getMessage()]) == 2


# -- scenario 11: pre-source inputs --------------------------------------------------

def test_scenario_11_pre_source_inputs_send_no_events(caplog) -> None:
    """Scenario 11: inputs without a source id (stages before the source): no events."""
    caplog.set_level(logging.WARNING, logger=LOG)
    pre = run_adapter(Emit(n=3), [EmptyTask()])  # an ordinary stage, not the source
    assert [t.task_id for t in pre.tasks] == ["0_0", "0_1", "0_2"]
    assert all(t.source_id is None for t in pre.tasks)
    assert pre.events == [] and pre.opened == []
    for role in ({}, {"is_sink": True}):
        result = run_adapter(Step(fresh=True), pre.tasks, **role)
        assert result.events == []
        assert [t.task_id for t in result.tasks] == ["0_0_0", "0_1_0", "0_2_0"]
    # an ambiguous mapping before the source is not worth a warning either
    run_adapter(Batched(k=5), pre.tasks[:2])
    assert not [r for r in caplog.records if "can't attribute" in r.getMessage()]


def test_untracked_stage_after_an_explicit_sink_sends_no_events() -> None:
    """Stages after an explicit sink must not reopen sources the sink consumed."""
    tasks = source_tasks(2)
    result = run_adapter(Step(fanout=2), tasks[:1], tracked=False)
    assert result.events == []
    assert run_adapter(Step(drop=("1",)), tasks[1:], tracked=False).events == []


# -- the source stage -----------------------------------------------------------------

def test_source_stage_opens_one_pending_descendant_per_source() -> None:
    result = run_adapter(Emit(n=3), [EmptyTask()], is_source=True)
    assert result.opened == [("0", "0_0"), ("1", "0_1"), ("2", "0_2")]
    assert result.events == []
    assert [t.source_id for t in result.tasks] == ["0", "1", "2"]


def test_single_stage_source_is_also_sink_consumes_at_once() -> None:
    """Gap 4 (adapter): a stage that is source and sink resolves each source at once."""
    result = run_adapter(Emit(n=2), [EmptyTask()], is_source=True, is_sink=True)
    assert result.opened == [("0", "0_0"), ("1", "0_1")]
    assert result.events == [CompletionEvent("0_0", "0"), CompletionEvent("0_1", "1")]
    tracker = CompletionTracker()
    for sid, tid in result.opened:
        tracker.open(sid, tid)
    assert sorted(tracker.apply(result.events)) == ["0", "1"]
    assert tracker.in_flight == 0


@dataclass
class NoneSource(ProcessingStage[EmptyTask, DocumentBatch]):
    """A source whose ``process`` filters the root: one slot, ``None``."""

    name: str = "none_source"

    def process(self, task: EmptyTask) -> None:
        return None


@dataclass
class NoneBatchSource(ProcessingStage[EmptyTask, DocumentBatch]):
    """A source whose ``process_batch`` returns ``None`` instead of a list."""

    name: str = "none_batch_source"

    def process_batch(self, tasks: list[EmptyTask]) -> None:  # type: ignore[override]
        return None


@dataclass
class HoleSource(ProcessingStage[EmptyTask, DocumentBatch]):
    """A source fanning the root out to ``[batch 0, None, batch 2]``."""

    name: str = "hole_source"

    def process(self, task: EmptyTask) -> list[DocumentBatch | None]:
        return [batch(0), None, batch(2)]


@pytest.mark.parametrize("source", [NoneSource(), NoneBatchSource()],
                         ids=["process", "process_batch"])
def test_a_source_returning_none_plans_no_partition(tmp_path: Path, source) -> None:
    """``None`` is a slot filtered on purpose (docs/engine.md): no source partition
    is opened, nothing downstream runs, nothing is recorded, nothing is left pending; the
    run succeeds, and so does a rerun."""
    adapted = StageAdapter(source, is_source=True).process_batch([EmptyTask()])
    assert adapted.tasks == [] and adapted.opened == [] and adapted.events == []

    log = tmp_path / "step.log"
    for _ in range(2):
        result = Pipeline("p", [source, Step(log=str(log))]).run(checkpoint_path=tmp_path / "ck")
        assert (result.sources_total, result.sources_completed, result.sources_skipped) == (
            0, 0, 0)
        assert result.sources_pending == [] and result.tasks == [] and result.stats == {}
    assert read_log(log) == []
    assert completed_on_disk(tmp_path / "ck") == frozenset()


def test_a_none_slot_at_the_source_is_neither_a_partition_nor_completed(tmp_path: Path) -> None:
    """The ``None`` slot keeps its position (the others are sources ``0`` and ``2``,
    as without it), is never opened, and is not recorded complete, even when the source is
    also the sink (where opened sources are completed at once)."""
    adapted = StageAdapter(HoleSource(), is_source=True, is_sink=True).process_batch(
        [EmptyTask()])
    assert adapted.opened == [("0", "0_0"), ("2", "0_2")]
    assert sorted(e.source_id for e in adapted.events) == ["0", "2"]

    alone = Pipeline("p", [HoleSource()]).run(checkpoint_path=tmp_path / "alone")
    assert alone.sources_total == 2 and alone.sources_completed == 2
    assert [t.source_id for t in alone.tasks] == ["0", "2"]
    assert completed_on_disk(tmp_path / "alone") == {"0", "2"}

    log = tmp_path / "step.log"
    chained = Pipeline("p", [HoleSource(), Step(log=str(log))]).run(
        checkpoint_path=tmp_path / "chained")
    assert chained.sources_total == 2 and chained.sources_pending == []
    assert [r["source"] for r in read_log(log)] == ["0", "2"]
    assert completed_on_disk(tmp_path / "chained") == {"0", "2"}


@dataclass
class FailingSource(ProcessingStage[EmptyTask, DocumentBatch]):
    def process(self, task: EmptyTask) -> list[Task]:
        return [batch(0), FailedTask(reason="nope"), batch(2)]


def test_scenario_17_source_failed_task_raises_before_any_bookkeeping(tmp_path) -> None:
    """Scenario 17: a FailedTask from the source stage is refused (error id), nothing opened."""
    adapter = StageAdapter(FailingSource(), is_source=True)
    with pytest.raises(CuratorError) as info:
        adapter.process_batch([EmptyTask()])
    assert info.value.error_id == "source_stage_failed_task"
    assert "FailingSource" in str(info.value)
    # a failed slot below the source is fine: it keeps its source pending
    assert run_adapter(Step(fail=("0",)), source_tasks(1)).events[0].delta == 0


def test_adapter_times_the_stage_and_keeps_outputs_in_order() -> None:
    result = run_adapter(Step(fanout=2), source_tasks(1))
    assert result.seconds >= 0.0
    assert [t.to_arrow().to_pydict()["i"] for t in result.tasks] == [[0], [0]]
