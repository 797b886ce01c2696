"""The engine refuses a unit whose input files changed since they were planned
(``input_changed``): a stage that reads its partition checks nothing itself
(:func:`curator.io.partitioning.check_planned`, called by ``run_unit``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.execution import InlineExecutor
from curator.io.partitioning import stamp_inputs
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask


@dataclass
class PlanThenChange(ProcessingStage[EmptyTask, FileGroupTask]):
    """Plans one partition of ``path``, then does ``change`` to the file, as a user or
    another process might between the plan and the unit."""

    path: str
    change: str
    name: str = "plan_then_change"
    is_source_stage: bool = True

    def process(self, task: EmptyTask) -> list[FileGroupTask]:
        planned = stamp_inputs(FileGroupTask(dataset_name="t", data=[self.path]))
        path = Path(self.path)
        if self.change == "append":
            path.write_bytes(path.read_bytes() + b'{"text": "late"}\n')
        elif self.change == "touch":
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        elif self.change == "remove":
            path.unlink()
        return [planned]


@dataclass
class CountLines(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Reads its partition without any check of its own."""

    name: str = "count_lines"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        lines = sum(Path(p).read_bytes().count(b"\n") for p in task.data if Path(p).exists())
        self.stat_update("lines", lines)
        return task


def _run(path: Path, change: str):
    pipeline = Pipeline(name="stamps")
    pipeline.add_stage(PlanThenChange(str(path), change))
    pipeline.add_stage(CountLines())
    return pipeline.run(executor=InlineExecutor())


@pytest.mark.parametrize("change", ["append", "touch", "remove"])
def test_a_file_changed_after_planning_is_input_changed(tmp_path: Path, change: str) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"text": "one"}\n')
    with pytest.raises(CuratorError) as err:
        _run(path, change)
    # the pipeline fails the partition with the unit's error in its message (a step maps
    # it to its own error id: the filter's input_changed, ingest's partition_failed)
    assert err.value.error_id == "partition_failed"
    assert "[input_changed]" in str(err.value), err.value


def test_an_unchanged_file_runs(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"text": "one"}\n{"text": "two"}\n')
    result = _run(path, "none")
    assert result.stats["count_lines.lines"] == 2
