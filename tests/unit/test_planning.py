"""Planning the source partitions in the driver: the same partitions, ids and stamps
as one task at a time, with the cyclic garbage collector paused while a plan is built
(docs/benchmarks.md section 2)."""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from pathlib import Path

from curator.adapter import StageAdapter
from curator.execution import InlineExecutor
from curator.io.partitioning import FilePartitioningStage
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask, Task


def test_byte_range_plan_keeps_ids_names_and_stamps_per_partition(tmp_path: Path) -> None:
    """One file split into many ranges: each partition's id is its own hash, its dataset
    name the file's folder, its stamp the file's size and time, in its own list."""
    folder = tmp_path / "web"
    folder.mkdir()
    path = folder / "big.jsonl"
    path.write_bytes(b'{"text": "x"}\n' * 100)
    other = folder / "small.jsonl"
    other.write_bytes(b'{"text": "y"}\n')
    stage = FilePartitioningStage(file_paths=str(folder), blocksize=100)
    tasks = StageAdapter(stage, is_source=True).process_batch([EmptyTask()]).tasks
    st = os.stat(path)
    assert len(tasks) == 15  # 14 ranges of big.jsonl, then small.jsonl on its own
    ranges = [t for t in tasks if t.data == [str(path)]]
    assert [t.byte_range for t in ranges] == [(i, min(i + 100, 1400)) for i in range(0, 1400, 100)]
    for task in tasks:
        alone = FileGroupTask(data=list(task.data), _metadata={
            k: v for k, v in task._metadata.items() if k == "byte_range"})
        assert task.source_id == alone.get_deterministic_id()
        assert task.task_id == f"0_{task.source_id}"
        assert task.dataset_name == "web"
    assert all(t._metadata["planned"] == {str(path): [st.st_size, st.st_mtime_ns]}
               for t in ranges)
    stamps = [t._metadata["planned"][str(path)] for t in ranges]
    assert len({id(s) for s in stamps}) == len(stamps)  # not one list shared by all


@dataclass
class SeesCollector(ProcessingStage[EmptyTask, Task]):
    """A source stage that records whether the cyclic collector was on while it ran."""

    seen: list[bool]
    name: str = "sees_collector"

    def process(self, task: EmptyTask) -> list[Task]:
        self.seen.append(gc.isenabled())
        return [FileGroupTask(data=[f"/d/{i}.jsonl"]) for i in range(3)]


@dataclass
class Passes(ProcessingStage[Task, Task]):
    name: str = "passes"

    def process(self, task: Task) -> Task:
        return task


def test_collector_is_paused_while_planning_and_restored_after(tmp_path: Path) -> None:
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            seen: list[bool] = []
            result = Pipeline("gc", [SeesCollector(seen), Passes()]).run(
                executor=InlineExecutor(), checkpoint_path=tmp_path / str(enabled))
            assert seen == [False]
            assert len(result.tasks) == 3
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


def test_resume_skips_completed_sources_and_keeps_plan_order(tmp_path: Path) -> None:
    first = Pipeline("order", [SeesCollector([]), Passes()]).run(
        executor=InlineExecutor(), checkpoint_path=tmp_path)
    again = Pipeline("order", [SeesCollector([]), Passes()]).run(
        executor=InlineExecutor(), checkpoint_path=tmp_path)
    assert [t.source_id for t in first.tasks] == [
        FileGroupTask(data=[f"/d/{i}.jsonl"]).get_deterministic_id() for i in range(3)]
    assert (again.sources_skipped, again.sources_completed, again.tasks) == (3, 0, [])
