"""The completion tracker on a real checkpoint store (scenarios 12-14, gaps 5 and 6)."""

from __future__ import annotations

import itertools
import logging

import pytest

from curator.adapter import CompletionEvent, StageAdapter
from curator.checkpoint import CheckpointStore, read_checkpoint_files
from curator.completion import CompletionTracker
from tests.unit._support import Step, completed_on_disk, source_tasks

LOG = "curator.resumability"


def E(task_id: str, source: str, *children: str) -> CompletionEvent:
    return CompletionEvent(task_id, source, tuple(children))


@pytest.fixture
def store(tmp_path):
    s = CheckpointStore(tmp_path / "ckpt", writer_id="w-1")
    yield s
    s.close()


def on_disk(store: CheckpointStore) -> set[str]:
    """What this writer's own file holds, read back by another process."""
    result = read_checkpoint_files([store.path])[store.path]
    assert not isinstance(result, BaseException), result
    return result[0]


# -- scenario 12: idempotency and rewrite -------------------------------------------

def test_scenario_12_a_duplicate_event_counts_once(store) -> None:
    """Scenario 12: the same event twice (a retry) counts once."""
    tracker = CompletionTracker(store)
    tracker.open("0", "0_0")
    fan = E("0_0", "0", "0_0_0", "0_0_1")
    assert tracker.apply([fan, fan]) == []
    assert tracker.apply([fan]) == []  # a retry in a later call
    assert tracker.apply([E("0_0_0", "0")]) == []
    assert tracker.apply([E("0_0_0", "0")]) == []  # counted once: 0_0_1 still pending
    assert not tracker.is_completed("0")
    assert tracker.apply([E("0_0_1", "0")]) == ["0"]
    assert on_disk(store) == {"0"}


def test_scenario_12_a_changed_event_for_the_same_slot_replaces_the_old(store) -> None:
    """Scenario 12: delta 0 then -1 for the same slot (latest wins) completes the source."""
    tracker = CompletionTracker(store)
    tracker.open("0", "0_0")
    first = E("0_0", "0", "0_0_0")  # delta 0: one child pending
    assert first.delta == 0
    assert tracker.apply([first]) == []
    rewrite = E("0_0", "0")  # delta -1: the slot is fully resolved after all
    assert tracker.apply([rewrite]) == ["0"]
    assert tracker.completed == {"0"}
    assert on_disk(store) == {"0"}


def test_scenario_12_rewrite_in_one_call_and_nothing_raises(store) -> None:
    tracker = CompletionTracker(store)
    tracker.open("0", "0_0")
    assert tracker.apply([E("0_0", "0", "a", "b"), E("0_0", "0", "a"), E("a", "0")]) == ["0"]
    # unknown sources and negative counts are tolerated, never raise
    assert tracker.apply([E("x_1", "never-opened")]) == []
    assert not tracker.is_completed("never-opened")


# -- scenario 13: anomaly after completion -------------------------------------------

@pytest.mark.parametrize(
    "late",
    [E("0_0_9", "0"), E("0_0", "0", "0_0_0")],
    ids=["new-task", "changed-event-for-existing-task"],
)
def test_scenario_13_update_after_completion_uncompletes(tmp_path, caplog, late) -> None:
    """Scenario 13: one warning ("Removing ... completed set"); gone from memory and disk."""
    ckpt = tmp_path / "ckpt"
    store = CheckpointStore(ckpt, writer_id="w-1")
    tracker = CompletionTracker(store)
    tracker.open("0", "0_0")
    tracker.open("1", "0_1")
    assert tracker.apply([E("0_0", "0"), E("0_1", "1")]) == ["0", "1"]
    assert on_disk(store) == {"0", "1"}
    caplog.set_level(logging.WARNING, logger=LOG)
    tracker.apply([late])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "Removing" in warnings[0] and "completed set" in warnings[0]
    assert not tracker.is_completed("0")
    assert tracker.is_completed("1")
    assert on_disk(store) == {"1"}
    store.close()
    reopened = CheckpointStore(ckpt, writer_id="w-2")
    assert reopened.completed == {"1"}
    reopened.close()


# -- scenario 14: durability ---------------------------------------------------------

def test_scenario_14_pending_sources_leave_nothing_on_disk(tmp_path) -> None:
    """Scenario 14: events that never balance leave nothing on disk."""
    ckpt = tmp_path / "ckpt"
    store = CheckpointStore(ckpt, writer_id="w-1")
    tracker = CompletionTracker(store)
    tracker.open("0", "0_0")
    tracker.apply([E("0_0", "0", "0_0_0", "0_0_1"), E("0_0_0", "0")])
    tracker.open("1", "0_1")
    tracker.apply([E("0_1", "1", "0_1_0")])
    assert on_disk(store) == set()
    store.close()
    assert completed_on_disk(ckpt) == frozenset()


def test_scenario_14_plus_one_then_minus_one_persists(tmp_path) -> None:
    """Scenario 14: +1 (open) then -1 persists ``{"0"}``, durably, with its stats."""
    ckpt = tmp_path / "ckpt"
    store = CheckpointStore(ckpt, writer_id="w-1")
    tracker = CompletionTracker(store)
    tracker.open("0", "0_0")
    assert tracker.apply([E("0_0", "0")], {"0": {"rows": 7}}) == ["0"]
    store.close()
    fresh = CheckpointStore(ckpt, writer_id="w-2")
    assert fresh.completed == {"0"}
    assert fresh.stats() == {"0": {"rows": 7}}
    fresh.close()


def test_several_sources_completed_by_one_call_are_one_commit(store) -> None:
    tracker = CompletionTracker(store)
    for i in range(5):
        tracker.open(str(i), f"0_{i}")
    done = tracker.apply([E(f"0_{i}", str(i)) for i in range(5)])
    assert sorted(done) == ["0", "1", "2", "3", "4"]
    assert on_disk(store) == {"0", "1", "2", "3", "4"}


# -- gap 5: order independence -------------------------------------------------------

def _tree_events() -> list[CompletionEvent]:
    """A source 's' (task 0_s) through a fan-out of 2, one child fanning out again."""
    return [
        E("0_s", "s", "0_s_0", "0_s_1"),  # fan-out stage: +1
        E("0_s_0", "s", "0_s_0_0", "0_s_0_1"),  # second fan-out: +1
        E("0_s_1", "s", "0_s_1_0"),  # 1:1
        E("0_s_0_0", "s"),  # sink
        E("0_s_0_1", "s"),  # sink
        E("0_s_1_0", "s"),  # sink
    ]


def test_gap5_child_before_parent_fan_out_does_not_persist_early(store) -> None:
    """Gap 5: a child's -1 applied before its parent's +2 must not complete the source."""
    tracker = CompletionTracker(store)
    tracker.open("s", "0_s")
    children_first = [E("0_s_0", "s"), E("0_s_1", "s")]
    for event in children_first:
        assert tracker.apply([event]) == []
        assert not tracker.is_completed("s")
        assert on_disk(store) == set()
    # the reference would have persisted here (+1 -1 = 0); now the parent arrives
    assert tracker.apply([E("0_s", "s", "0_s_0", "0_s_1")]) == ["s"]
    assert on_disk(store) == {"s"}


def test_gap5_every_order_completes_exactly_at_the_last_event(tmp_path) -> None:
    """Gap 5: all 720 orders of a 6-event tree; complete only after the last one, once."""
    events = _tree_events()
    store = CheckpointStore(tmp_path / "ckpt", writer_id="w-1")
    tracker = CompletionTracker(store)
    orders = list(itertools.permutations(events))
    for n, order in enumerate(orders):
        sid = f"s{n}"
        tracker.open(sid, "0_s")
        for i, event in enumerate(order):
            renamed = CompletionEvent(event.task_id, sid, event.children)
            done = tracker.apply([renamed])
            if i < len(order) - 1:
                assert done == [], (n, i)
                assert not tracker.is_completed(sid)
            else:
                assert done == [sid]
        assert tracker.in_flight == 0
    store.close()
    reopened = CheckpointStore(tmp_path / "ckpt", writer_id="w-2")
    assert reopened.completed == {f"s{n}" for n in range(len(orders))}
    reopened.close()


def test_gap5_open_order_with_real_adapters_reversed(store) -> None:
    """Gap 5 with real adapter events: sink events first, fan-out last, in separate calls."""
    [task] = source_tasks(1)
    tracker = CompletionTracker(store)
    tracker.open(task.source_id, task.task_id)
    fan = StageAdapter(Step(fanout=3)).process_batch([task])
    sink = StageAdapter(Step(), is_sink=True)
    sink_events = [e for child in fan.tasks for e in sink.process_batch([child]).events]
    for event in reversed(sink_events):
        assert tracker.apply([event]) == []
    assert on_disk(store) == set()
    assert tracker.apply(fan.events) == ["0"]


# -- gap 6: bounded state --------------------------------------------------------------

def test_gap6_state_is_dropped_when_sources_complete(store) -> None:
    """Gap 6: no per-task state survives completion; in_flight returns to 0."""
    tracker = CompletionTracker(store)
    for i in range(200):
        sid = f"src{i}"
        tracker.open(sid, f"0_{i}")
        tracker.apply([E(f"0_{i}", sid, f"0_{i}_0", f"0_{i}_1")])
        assert tracker.in_flight == 1
        tracker.apply([E(f"0_{i}_0", sid), E(f"0_{i}_1", sid)])
        assert tracker.in_flight == 0
    assert tracker._inflight == {}
    assert len(tracker.completed) == 200
    # nothing else in the tracker holds per-task ids
    held = {k: v for k, v in vars(tracker).items() if k not in ("store", "_completed")}
    assert held == {"_inflight": {}}


def test_gap6_release_drops_an_unfinished_source(store) -> None:
    tracker = CompletionTracker(store)
    tracker.open("a", "0_a")
    tracker.apply([E("0_a", "a", "0_a_0", "0_a_1"), E("0_a_0", "a")])
    tracker.open("b", "0_b")
    assert tracker.in_flight == 2
    tracker.release("a")
    assert tracker.in_flight == 1
    assert "a" not in tracker._inflight
    assert not tracker.is_completed("a")
    tracker.release("a")  # releasing twice is harmless
    assert tracker.apply([E("0_b", "b")]) == ["b"]
    assert tracker.in_flight == 0
    assert on_disk(store) == {"b"}


def test_tracker_starts_from_what_the_store_read(tmp_path) -> None:
    ckpt = tmp_path / "ckpt"
    with CheckpointStore(ckpt, writer_id="w-1") as first:
        first.mark_completed({"x": None})
    with CheckpointStore(ckpt, writer_id="w-2") as second:
        tracker = CompletionTracker(second)
        assert tracker.is_completed("x")
        assert tracker.completed == {"x"}
        assert tracker.in_flight == 0
