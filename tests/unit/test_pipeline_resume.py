"""Runs over one checkpoint directory with the real Pipeline and InlineExecutor.

Scenarios 1-4 (two runs), 6, 9, 10 and 17 at run level, 19 (guards); gaps 1, 4, 8.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from curator.checkpoint import METADATA_DIRNAME, read_checkpoint_file
from curator.errors import CuratorError
from curator.execution import InlineExecutor
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FailedTask, Task
from curator_testing.jsonl import DocumentBatch, JsonlWriter, jsonl_reader
from tests.unit._support import (
    Batched,
    Emit,
    Step,
    batch,
    completed_on_disk,
    out_sources,
    read_log,
)


def run(stages, ckpt, writer, **kwargs):
    return Pipeline("test", stages).run(
        InlineExecutor(), checkpoint_path=ckpt, writer_id=writer, **kwargs
    )


def seen(log: Path) -> list[str]:
    return sorted(r["source"] for r in read_log(log))


# -- scenarios 1-4: two runs over one directory ----------------------------------------

def test_scenario_01_failed_then_retried(tmp_path) -> None:
    """Scenario 1: the sink fails source 1; run 2 passes only 1 downstream."""
    ck, log1, log2 = tmp_path / "ck", tmp_path / "run1.log", tmp_path / "run2.log"
    first = run([Emit(n=3), Step(fail=("1",), log=str(log1))], ck, "host-1")
    assert out_sources(first.tasks) == ["0", "2"]
    assert first.sources_pending == ["1"]
    assert (first.sources_completed, first.sources_skipped) == (2, 0)
    assert completed_on_disk(ck) == {"0", "2"}
    assert seen(log1) == ["0", "1", "2"]

    second = run([Emit(n=3), Step(log=str(log2))], ck, "host-2")
    assert seen(log2) == ["1"]
    assert out_sources(second.tasks) == ["1"]
    assert (second.sources_completed, second.sources_skipped) == (1, 2)
    assert second.sources_pending == []
    assert completed_on_disk(ck) == {"0", "1", "2"}


def test_scenario_02_fully_completed_rerun_emits_nothing(tmp_path) -> None:
    """Scenario 2: after a complete run, run 2 processes and emits nothing."""
    ck, log = tmp_path / "ck", tmp_path / "run.log"
    first = run([Emit(n=3), Step(), Step(name="sink")], ck, "host-1")
    assert len(first.tasks) == 3
    second = run([Emit(n=3), Step(log=str(log)), Step(name="sink")], ck, "host-2")
    assert second.tasks == []
    assert read_log(log) == []
    assert (second.sources_total, second.sources_skipped, second.sources_completed) == (3, 3, 0)
    assert read_checkpoint_file(ck / METADATA_DIRNAME / "host-2.mdb")[0] == set()


def test_scenario_03_sink_returning_a_new_object_completes(tmp_path) -> None:
    """Scenario 3: the sink returns a new object; all sources complete, nothing reruns."""
    ck, log = tmp_path / "ck", tmp_path / "run2.log"
    first = run([Emit(n=3), Step(fresh=True)], ck, "host-1")
    assert out_sources(first.tasks) == ["0", "1", "2"]
    assert [t.task_id for t in first.tasks] == ["0_0_0", "0_1_0", "0_2_0"]
    assert completed_on_disk(ck) == {"0", "1", "2"}
    second = run([Emit(n=3), Step(fresh=True, log=str(log))], ck, "host-2")
    assert second.tasks == [] and read_log(log) == []


def test_scenario_04_sink_filter_completes_the_filtered_source(tmp_path) -> None:
    """Scenario 4: the sink returns None for source 1: output [0, 2], all complete."""
    ck, log = tmp_path / "ck", tmp_path / "run2.log"
    first = run([Emit(n=3), Step(drop=("1",))], ck, "host-1")
    assert out_sources(first.tasks) == ["0", "2"]
    assert first.sources_pending == []
    assert completed_on_disk(ck) == {"0", "1", "2"}
    second = run([Emit(n=3), Step(log=str(log))], ck, "host-2")
    assert second.tasks == [] and read_log(log) == []


def test_rerun_with_the_same_writer_id_reuses_its_file(tmp_path) -> None:
    ck = tmp_path / "ck"
    run([Emit(n=3), Step(fail=("2",))], ck, None)
    second = run([Emit(n=3), Step()], ck, None)
    assert out_sources(second.tasks) == ["2"]
    assert len(list((ck / METADATA_DIRNAME).glob("*.mdb"))) == 1
    assert completed_on_disk(ck) == {"0", "1", "2"}


# -- scenario 6 at run level: a crash below a fan-out ---------------------------------

def test_scenario_06_interrupted_fan_out_replays_the_whole_source(tmp_path) -> None:
    """Scenario 6: the sink dies on the third child of source 1; all three replay."""
    ck, log1, log2 = tmp_path / "ck", tmp_path / "run1.log", tmp_path / "run2.log"
    stages = [Emit(n=2), Step(name="fan", fanout=3), Step(name="sink", crash=("1", 2),
                                                             log=str(log1))]
    with pytest.raises(CuratorError) as info:
        run(stages, ck, "host-1")
    assert info.value.error_id == "partition_failed"
    partial = info.value.details["result"]
    assert partial.sources_pending == ["1"]
    assert completed_on_disk(ck) == {"0"}
    assert seen(log1) == ["0", "0", "0", "1", "1", "1"]

    second = run([Emit(n=2), Step(name="fan", fanout=3), Step(name="sink", log=str(log2))],
                 ck, "host-2")
    assert seen(log2) == ["1", "1", "1"]
    assert sorted(t.task_id for t in second.tasks) == ["0_1_0_0", "0_1_1_0", "0_1_2_0"]
    assert completed_on_disk(ck) == {"0", "1"}


# -- scenarios 9 and 10 at run level ---------------------------------------------------

def test_scenario_09_empty_list_leaves_the_source_pending(tmp_path) -> None:
    """Scenario 9: ``[]`` from a non-source stage: the source is not recorded, it reruns."""
    ck, log = tmp_path / "ck", tmp_path / "run2.log"
    first = run([Emit(n=3), Step(empty=("2",)), Step(name="sink")], ck, "host-1")
    assert first.sources_pending == ["2"]
    assert completed_on_disk(ck) == {"0", "1"}
    run([Emit(n=3), Step(log=str(log)), Step(name="sink")], ck, "host-2")
    assert seen(log) == ["2"]


def test_scenario_10_m_to_k_sources_rerun(tmp_path) -> None:
    """Scenario 10: an ambiguous M->K below a fan-out leaves the source pending."""
    ck = tmp_path / "ck"
    first = run([Emit(n=2), Step(name="fan", fanout=2), Batched(k=3), Step(name="sink")],
                ck, "host-1")
    assert first.sources_pending == ["0", "1"]
    assert all(t.task_id.startswith("r") for t in first.tasks)
    assert completed_on_disk(ck) == frozenset()


# -- scenario 17 at run level -----------------------------------------------------------

@dataclass
class FailingSource(ProcessingStage[EmptyTask, DocumentBatch]):
    def process(self, task: EmptyTask) -> list[Task]:
        return [batch(0), FailedTask(reason="nope")]


def test_scenario_17_source_failed_task_aborts_before_any_bookkeeping(tmp_path) -> None:
    """Scenario 17: the run is refused and nothing is recorded."""
    ck = tmp_path / "ck"
    with pytest.raises(CuratorError) as info:
        run([FailingSource(), Step()], ck, "host-1")
    assert info.value.error_id == "source_stage_failed_task"
    assert read_checkpoint_file(ck / METADATA_DIRNAME / "host-1.mdb")[0] == set()


# -- scenario 19: guards ------------------------------------------------------------------

class NotResumable(Step):
    is_resumable = False


class MarkedSource(Step):
    is_source_stage = True


class MarkedSink(Step):
    is_sink_stage = True


def test_scenario_19_non_resumable_stage_is_refused_with_a_checkpoint(tmp_path) -> None:
    """Scenario 19: a non-resumable stage with checkpoint_path raises non_resumable_stage."""
    with pytest.raises(CuratorError) as info:
        run([Emit(), NotResumable(name="shuffle")], tmp_path / "ck", "host-1")
    assert info.value.error_id == "non_resumable_stage"
    assert "shuffle" in str(info.value)
    assert not (tmp_path / "ck").exists()  # refused before touching the checkpoint
    # without a checkpoint it runs
    assert len(Pipeline("p", [Emit(), NotResumable()]).run(InlineExecutor())) == 3


@pytest.mark.parametrize(
    "stages",
    [
        [MarkedSource(name="a"), MarkedSource(name="b")],
        [Emit(), MarkedSink(name="a"), MarkedSink(name="b")],
        [Emit(), MarkedSink(name="early"), MarkedSource(name="late")],
        [],
    ],
    ids=["two-sources", "two-sinks", "sink-before-source", "no-stages"],
)
def test_scenario_19_invalid_roles_are_refused(stages) -> None:
    """Scenario 19: two marked sources (or sinks) raise invalid_pipeline."""
    with pytest.raises(CuratorError) as info:
        Pipeline("p", stages).run(InlineExecutor())
    assert info.value.error_id == "invalid_pipeline"


def test_roles_default_to_first_and_last_stage() -> None:
    _, src, sink = Pipeline("p", [Emit(), Step(), Step()]).build()
    assert (src, sink) == (0, 2)
    _, src, sink = Pipeline("p", [Emit(), MarkedSource(), MarkedSink(), Step()]).build()
    assert (src, sink) == (1, 2)


def test_explicit_source_and_sink_mid_pipeline(tmp_path) -> None:
    """Stages before the source and after the sink are outside the bookkeeping."""
    ck, log = tmp_path / "ck", tmp_path / "after.log"
    stages = [Emit(n=2), MarkedSource(name="src"), MarkedSink(name="sink"),
              Step(name="after", fanout=2, log=str(log))]
    first = run(stages, ck, "host-1")
    assert len(first.tasks) == 4
    assert first.sources_pending == []
    assert completed_on_disk(ck) == {"0", "1"}
    assert len(read_log(log)) == 2
    second = run(stages, ck, "host-2")
    assert second.tasks == [] and len(read_log(log)) == 2


# -- gap 1: no Ray ---------------------------------------------------------------------------

def test_gap1_checkpointed_run_needs_no_ray(tmp_path) -> None:
    """Gap 1: a checkpointed run works with no RAY_ADDRESS and without importing ray."""
    script = f"""
import json, os, sys
os.environ.pop("RAY_ADDRESS", None)
from curator.execution import InlineExecutor
from curator.pipeline import Pipeline
from tests.unit._support import Emit, Step
r = Pipeline("p", [Emit(n=3), Step()]).run(InlineExecutor(), checkpoint_path={str(tmp_path)!r})
print(json.dumps({{"n": len(r.tasks), "ray": "ray" in sys.modules,
                  "prefect": "prefect" in sys.modules}}))
"""
    env = {k: v for k, v in __import__("os").environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(Path(__file__).parents[2]))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "n": 3, "ray": False, "prefect": False}
    assert completed_on_disk(tmp_path) == {"0", "1", "2"}


# -- gap 4: a single-stage pipeline ----------------------------------------------------

def test_gap4_single_stage_pipeline_completes(tmp_path) -> None:
    """Gap 4: the source is also the sink; its sources complete (never in the reference)."""
    ck = tmp_path / "ck"
    first = run([Emit(n=3)], ck, "host-1")
    assert out_sources(first.tasks) == ["0", "1", "2"]
    assert completed_on_disk(ck) == {"0", "1", "2"}
    second = run([Emit(n=3)], ck, "host-2")
    # nothing new is recorded: the rerun added no completion of its own
    assert read_checkpoint_file(ck / METADATA_DIRNAME / "host-2.mdb")[0] == set()
    assert second.sources_pending == []
    assert completed_on_disk(ck) == {"0", "1", "2"}


def test_gap4_single_stage_rerun_reports_everything_skipped(tmp_path) -> None:
    ck = tmp_path / "ck"
    first = run([Emit(n=3)], ck, "host-1")
    assert first.sources_completed == 3
    second = run([Emit(n=3)], ck, "host-2")
    assert second.tasks == []
    assert (second.sources_skipped, second.sources_completed) == (3, 0)


# -- gap 8: statistics after a resume -------------------------------------------------

def _corpus(root: Path, files: int = 4, rows: int = 5) -> Path:
    src = root / "in"
    src.mkdir()
    for f in range(files):
        with open(src / f"part{f}.jsonl", "w") as fh:
            for r in range(rows + f):
                fh.write(json.dumps({"id": f * 100 + r, "text": "x" * (r + 1)}) + "\n")
    return src


def _io_stages(src: Path, out: Path, fail: tuple[str, ...] = ()) -> list[ProcessingStage]:
    return [*jsonl_reader(str(src)), Step(name="check", fail=fail),
            JsonlWriter(path=str(out))]


def test_gap8_stats_after_a_resume_cover_every_completed_source(tmp_path) -> None:
    """Gap 8: run 1 completes some sources and fails others; run 2's stats cover all."""
    src = _corpus(tmp_path)
    reference = run(_io_stages(src, tmp_path / "out-ref"), tmp_path / "ck-ref", "ref-1")
    assert reference.stats["jsonl_writer.rows_written"] == 5 + 6 + 7 + 8
    assert reference.stats["check.seen"] == 4
    assert reference.stats["jsonl_writer.items_in"] == 26

    # which partitions to fail: the sources of two of the four files
    sids = sorted(t.source_id for t in reference.tasks)
    failing = tuple(sids[:2])
    ck, out = tmp_path / "ck", tmp_path / "out"
    first = run(_io_stages(src, out, fail=failing), ck, "host-1")
    assert sorted(first.sources_pending) == sorted(failing)
    assert first.stats != reference.stats  # covers only the two completed sources
    second = run(_io_stages(src, out), ck, "host-2")
    assert second.sources_skipped == 2 and second.sources_completed == 2
    assert second.stats == reference.stats
    # and the same without a checkpoint
    plain = Pipeline("p", _io_stages(src, tmp_path / "out-plain")).run(InlineExecutor())
    assert plain.stats == reference.stats


# -- N->N source stages without deterministic ids -------------------------------------

def test_n_to_n_source_without_deterministic_ids_keeps_sources_apart(tmp_path) -> None:
    """User initial tasks through a 1:1 source: distinct source ids, outputs and records.

    With the reference's ``seg = 0`` every source got id ``0``: one shared completion
    record (a failed partition could be skipped as complete) and one output file.
    """
    ck, out = tmp_path / "ck", tmp_path / "out"
    initial = [batch(i) for i in range(3)]
    stages = [Step(name="src", fail=()), Step(name="check", fail=("1",)),
              JsonlWriter(path=str(out))]
    first = run(stages, ck, "host-1", initial_tasks=initial)
    assert sorted(t.source_id for t in first.tasks) == ["0", "2"]
    assert first.sources_pending == ["1"]
    assert completed_on_disk(ck) == {"0", "2"}
    assert len(list(out.glob("*.jsonl"))) == 2
    stages[1] = Step(name="check")
    second = run(stages, ck, "host-2", initial_tasks=[batch(i) for i in range(3)])
    assert [t.source_id for t in second.tasks] == ["1"]
    rows = sorted(json.loads(line)["i"] for p in out.glob("*.jsonl")
                  for line in p.read_text().splitlines())
    assert rows == [0, 1, 2]


class EmitSink(Emit):
    is_sink_stage = True


def test_stages_after_a_source_that_is_the_explicit_sink_still_run() -> None:
    result = Pipeline("p", [EmitSink(n=2), Step(name="after", fanout=2)]).run(InlineExecutor())
    assert len(result.tasks) == 4
