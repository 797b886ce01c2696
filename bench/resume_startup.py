"""Resume start-up: from Pipeline.run() to the first new source partition starting.

A checkpoint directory holds 100,000 completed source ids in 10 writer files
(written with CheckpointStore, writer_id ``w0``..``w9``, ``mark_completed`` in
batches of 1,000 ids with small statistics dicts). A source stage emits 100,010
small source tasks whose deterministic ids are those 100,000 plus 10 new ones; the
next stage writes ``time.perf_counter()`` (system-wide monotonic clock, comparable
across processes on Linux) to a file when a partition starts. The figure is the
first of those stamps minus the stamp taken just before ``Pipeline.run``.

Every repetition resumes from a fresh copy of the checkpoint directory. Reported:
the median start-up with InlineExecutor (the framework alone) and with
LocalExecutor(workers=2) (plus spawning the worker processes), the same start-up
without a checkpoint (the run is stopped at its first partition) for comparison,
the whole resumed run, and a breakdown: opening the store (reading the union of
the 10 files), emitting and id-stamping the 100,010 source tasks, filtering the
completed ones (these two with the garbage collector paused, as the engine plans),
and - not part of the start-up - reading every source's statistics at the end of
the run (``refreshed_stats``).

Target (project issue): < 2 s.

    .venv/bin/python bench/resume_startup.py
    .venv/bin/python bench/resume_startup.py --completed 1000000 --writers 20
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import _common as C

from curator.adapter import StageAdapter
from curator.checkpoint import CheckpointStore
from curator.completion import CompletionTracker
from curator.errors import CuratorError
from curator.execution import InlineExecutor
from curator.pipeline import Pipeline, _gc_paused, _split_completed
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, Task
from executors import LocalExecutor

NAME = "resume_startup"
TARGET_S = 2.0


@dataclass
class IdTask(Task[str]):
    """A tiny source task whose source id is its payload."""

    data: str = ""

    def get_deterministic_id(self) -> str:
        return self.data


@dataclass
class IdSource(ProcessingStage[EmptyTask, IdTask]):
    """Emits ``count`` source tasks ``s0000000``, ``s0000001``, ..."""

    count: int = 0
    name: str = "id_source"

    def process(self, task: EmptyTask) -> list[IdTask]:
        return [IdTask(dataset_name="bench", data=source_id(i)) for i in range(self.count)]


@dataclass
class StampStart(ProcessingStage[IdTask, IdTask]):
    """Appends ``time.perf_counter()`` to ``stamp_file`` when a partition starts."""

    stamp_file: str = ""
    fail: bool = False  # stop the run at its first partition (the no-checkpoint baseline)
    name: str = "stamp_start"

    def process(self, task: IdTask) -> IdTask:
        with open(self.stamp_file, "a") as f:
            f.write(f"{time.perf_counter()!r}\n")
        if self.fail:
            raise RuntimeError("stop here: baseline measured")
        return task


def source_id(i: int) -> str:
    return f"s{i:07d}"


def make_checkpoint(path: Path, completed: int, writers: int, batch: int) -> float:
    start = time.perf_counter()
    stores = [CheckpointStore(path, writer_id=f"w{i}") for i in range(writers)]
    try:
        for b, first in enumerate(range(0, completed, batch)):
            ids = range(first, min(first + batch, completed))
            stores[b % writers].mark_completed(
                {source_id(i): {"id_source.items_out": 1, "stamp_start.items_in": 1,
                                "stamp_start.items_out": 1} for i in ids}
            )
    finally:
        for store in stores:
            store.close()
    return time.perf_counter() - start


def first_stamp(path: Path) -> float:
    return min(float(line) for line in path.read_text().split())


def timed_run(kind: str, workers: int, ckpt_src: Path | None, work: Path, total: int,
              new: int) -> dict[str, float]:
    stamps = work / "stamps.txt"
    stamps.unlink(missing_ok=True)
    ckpt = None
    if ckpt_src is not None:
        ckpt = work / "ckpt"
        shutil.rmtree(ckpt, ignore_errors=True)
        shutil.copytree(ckpt_src, ckpt)
    pipeline = Pipeline("resume-startup", [IdSource(count=total),
                                           StampStart(stamp_file=str(stamps), fail=ckpt is None)])
    executor = LocalExecutor(workers=workers) if kind == "local" else InlineExecutor()
    start = time.perf_counter()
    try:
        result = pipeline.run(executor=executor, checkpoint_path=ckpt)
    except CuratorError as exc:
        if ckpt is not None or exc.error_id != "partition_failed":
            raise
        result = None
    finally:
        end = time.perf_counter()
        executor.close()  # the pool outlives run() (kept for a next run); not timed
    out = {"to_first_partition_s": first_stamp(stamps) - start, "whole_run_s": end - start}
    if result is not None:
        assert result.sources_completed == new, (result.sources_completed, new)
        assert result.sources_skipped == total - new
    return out


def breakdown(ckpt_src: Path, work: Path, total: int) -> dict[str, float]:
    """The pieces of the start-up, timed one by one in this process."""
    ckpt = work / "ckpt"
    shutil.rmtree(ckpt, ignore_errors=True)
    shutil.copytree(ckpt_src, ckpt)
    t0 = time.perf_counter()
    store = CheckpointStore(ckpt, writer_id="breakdown")
    t1 = time.perf_counter()
    tracker = CompletionTracker(store)
    t2 = time.perf_counter()
    with _gc_paused():  # as Pipeline._run plans
        result = StageAdapter(IdSource(count=total), is_source=True).process_batch([EmptyTask()])
        t3 = time.perf_counter()
        pending, _ = _split_completed(result.tasks, tracker.completed_live)
        t4 = time.perf_counter()
    store.refreshed_stats()  # what a run does at its end, after the last partition
    t5 = time.perf_counter()
    store.close()
    return {"store_open_s": t1 - t0, "tracker_init_s": t2 - t1, "source_emit_and_ids_s": t3 - t2,
            "filter_completed_s": t4 - t3, "stats_at_end_s": t5 - t4, "pending": len(pending),
            "store_files": len(list((ckpt / ".nemo_curator_metadata").glob("*.mdb"))) - 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--completed", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=10)
    parser.add_argument("--writers", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1000, help="ids per mark_completed")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--executors", default="inline,local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quiet-wait", type=float, default=60,
                        help="wait up to this many seconds for other CPU load to settle")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("curator").setLevel(logging.CRITICAL)  # the baseline's planned failure
    total = args.completed + args.new

    C.wait_for_quiet(args.quiet_wait)
    rows, results = [], {}
    with C.temp_dir(NAME, keep=args.keep) as tmp:
        prepared = tmp / "prepared"
        build_s = make_checkpoint(prepared, args.completed, args.writers, args.batch)
        meta = prepared / ".nemo_curator_metadata"
        disk = sum(os.stat(p).st_blocks * 512 for p in meta.glob("*.mdb"))
        print(f"checkpoint: {args.completed:,} ids in {args.writers} files, {disk / 1e6:.1f} MB "
              f"on disk (built in {build_s:.1f}s)")
        parts = [breakdown(prepared, tmp, total) for _ in range(args.reps)]
        split = {k: C.median([p[k] for p in parts]) for k in parts[0]}
        for kind in args.executors.split(","):
            label = kind if kind == "inline" else f"local(workers={args.workers})"
            timed_run(kind, args.workers, prepared, tmp, total, args.new)  # warm-up
            resumed = [timed_run(kind, args.workers, prepared, tmp, total, args.new)
                       for _ in range(args.reps)]
            base = [timed_run(kind, args.workers, None, tmp, total, args.new)
                    for _ in range(args.reps)]
            first = C.median([r["to_first_partition_s"] for r in resumed])
            results[kind] = {
                "executor": label,
                "to_first_partition_s": [r["to_first_partition_s"] for r in resumed],
                "median_to_first_partition_s": first,
                "median_whole_run_s": C.median([r["whole_run_s"] for r in resumed]),
                "median_no_checkpoint_to_first_partition_s":
                    C.median([r["to_first_partition_s"] for r in base]),
                "target_met": first < TARGET_S,
            }
            r = results[kind]
            rows.append([label, first, r["median_no_checkpoint_to_first_partition_s"],
                         first - r["median_no_checkpoint_to_first_partition_s"],
                         r["median_whole_run_s"], "yes" if r["target_met"] else "NO"])

    print(f"\n{total:,} source tasks, {args.completed:,} complete, {args.new} new; "
          f"medians of {args.reps}")
    C.print_table(["executor", "to 1st new s", "no-ckpt s", "resume cost s", "whole run s",
                   "< 2 s?"], rows)
    print("\nbreakdown (in-process, medians): "
          + ", ".join(f"{k} {v:.3f}" for k, v in split.items() if k.endswith("_s")))
    C.write_result(NAME, {
        "target": "resume start-up (run start to first new partition) < 2 s",
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "checkpoint_build_s": build_s,
        "checkpoint_bytes_on_disk": disk,
        "breakdown_medians": split,
        "results": results,
    }, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
