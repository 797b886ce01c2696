"""Lineage ids (scenario 18): ``0_<source>_0_1`` paths, positional slots, M->K, refusals."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

import pytest

from curator.adapter import CompletionEvent, StageAdapter
from curator.errors import CuratorError
from curator.execution import InlineExecutor
from curator.io import FilePartitioningStage
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask, NoneTask, Task
from curator_testing.jsonl import DocumentBatch, JsonlReaderStage
from tests.unit._support import Batched, Step, batch, source_tasks

HEX12 = "[0-9a-f]{12}"


@dataclass
class Record(ProcessingStage[DocumentBatch, DocumentBatch]):
    """Returns a new batch that remembers the id its input had."""

    name: str = "record"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        return DocumentBatch(data=task.data, _metadata={"input_id": task.task_id})


def test_four_stage_pipeline_with_a_fan_out(tmp_path) -> None:
    """``0`` -> ``0_<12hex>`` -> ``0_<12hex>_0`` -> ``0_<12hex>_0_<i>`` -> ``..._0``."""
    paths = []
    for f in range(3):
        path = tmp_path / f"f{f}.jsonl"
        path.write_text(json.dumps({"text": f"doc {f}"}) + "\n")
        paths.append(str(path))
    stages = [FilePartitioningStage(file_paths=str(tmp_path)), JsonlReaderStage(),
              Step(name="split", fanout=2), Record()]
    result = Pipeline("ids", stages).run(InlineExecutor())
    assert len(result.tasks) == 6
    expected_sources = {FileGroupTask(data=[p]).get_deterministic_id() for p in paths}
    assert {t.source_id for t in result.tasks} == expected_sources
    for task in result.tasks:
        sid = task.source_id
        assert re.fullmatch(rf"0_{HEX12}_0_[01]", task._metadata["input_id"])
        assert re.fullmatch(rf"0_{sid}_0_[01]_0", task.task_id)
    ids = [t.task_id for t in result.tasks]
    assert len(set(ids)) == len(ids)
    assert len({i.count("_") for i in ids}) == 1  # equal depth


def test_file_group_source_id_is_independent_of_path_order() -> None:
    """Scenario 18: ``["b","a"]`` and ``["a","b"]`` both get ``0_<same 12hex>``."""

    @dataclass
    class Groups(ProcessingStage[EmptyTask, FileGroupTask]):
        order: tuple[str, ...] = ("a", "b")

        def process(self, task: EmptyTask) -> list[FileGroupTask]:
            return [FileGroupTask(data=list(self.order))]

    adapter = StageAdapter(Groups(("b", "a")), is_source=True)
    [ba] = adapter.process_batch([EmptyTask()]).tasks
    [ab] = StageAdapter(Groups(("a", "b")), is_source=True).process_batch([EmptyTask()]).tasks
    assert ba.task_id == ab.task_id
    assert re.fullmatch(rf"0_{HEX12}", ab.task_id)
    assert ab.source_id == ab.task_id[2:]


def test_positional_filter_keeps_slots_aligned() -> None:
    """Scenario 18: [p0, p1, p2] -> [c0, None, c2] gives 0_0_0, 0_1_0, 0_2_0."""

    @dataclass
    class Filter(ProcessingStage[DocumentBatch, DocumentBatch]):
        batch_size: int = 3
        none: Task | None = None

        def process_batch(self, tasks: list[DocumentBatch]) -> list[Task | None]:
            return [DocumentBatch(data=tasks[0].data), self.none, DocumentBatch(data=tasks[2].data)]

    parents = source_tasks(3)
    assert [p.task_id for p in parents] == ["0_0", "0_1", "0_2"]
    result = StageAdapter(Filter()).process_batch(parents)
    assert [t.task_id for t in result.tasks] == ["0_0_0", "0_2_0"]
    assert [t.source_id for t in result.tasks] == ["0", "2"]
    assert result.events == [
        CompletionEvent("0_0", "0", ("0_0_0",)),
        CompletionEvent("0_1", "1", ()),
        CompletionEvent("0_2", "2", ("0_2_0",)),
    ]
    # the filtered slot itself is 0_1_0
    marker = NoneTask()
    StageAdapter(Filter(none=marker)).process_batch(source_tasks(3))
    assert marker.task_id == "0_1_0"


def test_returning_the_input_unchanged_extends_its_id() -> None:
    """Scenario 18: returning the input object turns ``0_5`` into ``0_5_0``."""
    task = source_tasks(6)[5]
    assert task.task_id == "0_5"
    result = StageAdapter(Step()).process_batch([task])
    assert result.tasks == [task] and result.tasks[0] is task
    assert task.task_id == "0_5_0"
    assert result.events == [CompletionEvent("0_5", "5", ("0_5_0",))]


def test_n_to_n_source_gets_the_deterministic_segment() -> None:
    """Scenario 18: user initial tasks ``0_i`` through a 1:1 source give ``0_i_<hash>``."""
    groups = [FileGroupTask(data=[f"/data/{name}.jsonl"]) for name in ("x", "y", "z")]
    hashes = [g.get_deterministic_id() for g in groups]
    result = Pipeline("p", [Step(name="source"), Step(name="sink")]).run(
        InlineExecutor(), initial_tasks=groups
    )
    assert sorted(t.task_id for t in result.tasks) == sorted(
        f"0_{i}_{h}_0" for i, h in enumerate(hashes)
    )
    assert sorted(t.source_id for t in result.tasks) == sorted(hashes)


def test_n_to_n_source_without_deterministic_ids_is_positional() -> None:
    tasks = [batch(i) for i in range(3)]
    for i, t in enumerate(tasks):
        t._task_id = f"0_{i}"  # as Pipeline.run assigns user initial tasks
    result = StageAdapter(Step(), is_source=True).process_batch(tasks)
    assert [t.source_id for t in result.tasks] == ["0", "1", "2"]
    assert [t.task_id for t in result.tasks] == ["0_0_0", "0_1_1", "0_2_2"]
    assert result.opened == [("0", "0_0_0"), ("1", "0_1_1"), ("2", "0_2_2")]


def test_m_to_k_ids_are_unique_random_and_warned_once_per_batch(caplog) -> None:
    """M->K: ``r<hex>`` ids, unique, no ``_``; exactly one warning per batch."""
    caplog.set_level(logging.WARNING, logger="curator.resumability")
    adapter = StageAdapter(Batched(k=4))
    ids: list[str] = []
    inputs = source_tasks(6)
    for i in range(0, 6, 2):
        ids += [t.task_id for t in adapter.process_batch(inputs[i : i + 2]).tasks]
    assert len(ids) == 12 and len(set(ids)) == 12
    assert all(re.fullmatch(r"r[0-9a-f]{32}", i) for i in ids)
    warnings = [r for r in caplog.records if "can't attribute" in r.getMessage()]
    assert len(warnings) == 3
    assert all("batched" in r.getMessage() for r in warnings)


def test_deterministic_id_with_an_underscore_is_refused() -> None:
    """The last ``_`` segment is the source id, so a deterministic id must not hold ``_``."""

    @dataclass
    class BadGroup(FileGroupTask):
        def get_deterministic_id(self) -> str:
            return "part_1"

    @dataclass
    class Source(ProcessingStage[EmptyTask, FileGroupTask]):
        def process(self, task: EmptyTask) -> list[FileGroupTask]:
            return [BadGroup(data=["a"])]

    with pytest.raises(CuratorError) as info:
        StageAdapter(Source(), is_source=True).process_batch([EmptyTask()])
    assert info.value.error_id == "invalid_pipeline"
    assert "part_1" in str(info.value)
    # outside the source stage the deterministic id is not used, so it is not refused
    result = StageAdapter(Step()).process_batch([BadGroup(data=["a"])])
    assert result.tasks[0].task_id == "0"
