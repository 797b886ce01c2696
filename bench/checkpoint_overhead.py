"""Checkpoint overhead: the same pipeline with and without ``checkpoint_path``.

jsonl_reader(files_per_partition=1) -> a light polars stage -> JsonlWriter (the generic
stages of curator_testing.jsonl) over many small files (one source partition per file),
on LocalExecutor(workers=2) and on InlineExecutor. Runs alternate with/without so drift
hits both alike; every run gets a fresh output directory and (when checkpointed) a fresh
checkpoint directory. Reports the median wall time of each variant, the ratio of the
medians, the median of the per-repetition ratios, and where the checkpoint's time goes
in the driver (the durable commits, how many partitions shared one commit, and the
end-of-run statistics merge).

Two side measurements: the durable commit alone with 1, 10 and 100 sources per
commit, and the writers' cost per partition when the output directory already
holds many files (``--dir-sizes``; the writers used to list the whole directory
for every partition, which made a run quadratic in its partition count).

Target (project issue): checkpoint overhead < 2% of wall time.

    .venv/bin/python bench/checkpoint_overhead.py                  # full: 1,000 partitions
    .venv/bin/python bench/checkpoint_overhead.py --files 200 --reps 3 --dir-sizes 0,10000
"""

from __future__ import annotations

import argparse
import functools
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import _common as C
import polars as pl

from curator.checkpoint import CheckpointStore
from curator.execution import InlineExecutor
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator_testing.jsonl import DocumentBatch, JsonlWriter, jsonl_reader
from executors import LocalExecutor

NAME = "checkpoint_overhead"
TARGET = 0.02


@dataclass
class LightStats(ProcessingStage[DocumentBatch, DocumentBatch]):
    """A light columnar step: character and word counts per document."""

    name: str = "light_stats"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        df = task.to_polars().with_columns(
            n_chars=pl.col("text").str.len_chars(),
            n_words=pl.col("text").str.count_matches(" ") + 1,
        )
        self.stat_update("docs", df.height)
        return DocumentBatch(dataset_name=task.dataset_name, data=df,
                             _metadata=dict(task._metadata))


class DriverClock:
    """Wraps CheckpointStore methods (in this process only) to time what the driver spends."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        for name in ("__init__", "mark_completed", "refreshed_stats", "close"):
            setattr(CheckpointStore, name, self._wrap(name, getattr(CheckpointStore, name)))

    def _wrap(self, name, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
                self.calls[name] = self.calls.get(name, 0) + 1
        return timed

    def reset(self) -> None:
        self.seconds, self.calls = {}, {}


def build(inp: Path, out: Path) -> Pipeline:
    return Pipeline(
        name="checkpoint-overhead",
        stages=[
            *jsonl_reader(str(inp), files_per_partition=1),
            LightStats(),
            JsonlWriter(path=str(out)),
        ],
    )


def make_executor(kind: str, workers: int):
    return LocalExecutor(workers=workers) if kind == "local" else InlineExecutor()


def label(kind: str, workers: int) -> str:
    return kind if kind == "inline" else f"local(workers={workers})"


def one_run(kind: str, workers: int, inp: Path, work: Path, checkpoint: bool,
            clock: DriverClock) -> dict[str, float]:
    out = C.fresh(work / "out")
    ckpt = C.fresh(work / "ckpt") if checkpoint else None
    clock.reset()
    executor = make_executor(kind, workers)
    try:
        start = time.perf_counter()
        result = build(inp, out).run(executor=executor, checkpoint_path=ckpt)
        wall = time.perf_counter() - start
    finally:
        executor.close()  # the pool outlives run() (kept for a next run); not timed
    assert result.sources_completed == result.sources_total, result.sources_pending
    return {
        "wall_s": wall,
        "commit_s": clock.seconds.get("mark_completed", 0.0),
        "commits": clock.calls.get("mark_completed", 0),
        "open_s": clock.seconds.get("__init__", 0.0),
        "merge_s": clock.seconds.get("refreshed_stats", 0.0),
        "partitions": result.sources_total,
    }


def commit_batching(tmp: Path, sources: int, batches: tuple[int, ...]) -> dict[str, float]:
    """The durable commit alone: ms per source when ``k`` sources share one commit."""
    out: dict[str, float] = {}
    stats = {"jsonl_reader.items_in": 1, "light_stats.docs": 8, "jsonl_writer.rows_written": 8}
    for k in batches:
        store = CheckpointStore(C.fresh(tmp / f"batch-{k}"), writer_id="bench")
        ids = [f"{i:012x}" for i in range(sources)]
        start = time.perf_counter()
        for i in range(0, sources, k):
            store.mark_completed({sid: stats for sid in ids[i : i + k]})
        out[str(k)] = (time.perf_counter() - start) / sources * 1e3
        store.close()
    return out


def writer_dir_scaling(inp: Path, tmp: Path, sizes: list[int], partitions: int, reps: int
                       ) -> dict[str, dict[str, float]]:
    """ms per partition written into an output directory already holding N other files.

    The same ``partitions`` input files each time (inline, no checkpoint), interleaved
    over the sizes; a directory listing per write would grow with N, one per run not.
    """
    src = C.fresh(tmp / "scaling-input")
    for path in sorted(inp.glob("*.jsonl"))[:partitions]:
        (src / path.name).hardlink_to(path)
    dirs: dict[int, Path] = {}
    for n in sizes:
        out = C.fresh(tmp / f"scaling-out-{n}")
        for i in range(n):  # other outputs of the same kind, as a long run leaves them
            (out / f"other-{i:07d}.jsonl").touch()
        dirs[n] = out
    runs: dict[int, list[float]] = {n: [] for n in sizes}
    for rep in range(reps + 1):  # the first round is a warm-up
        for n in sizes if rep % 2 == 0 else list(reversed(sizes)):
            for old in dirs[n].iterdir():  # the previous round's outputs, not the others
                if not old.name.startswith("other-"):
                    old.unlink()
            start = time.perf_counter()
            build(src, dirs[n]).run(executor=InlineExecutor())
            if rep:
                runs[n].append((time.perf_counter() - start) / partitions * 1e3)
    base = C.median(runs[sizes[0]])
    return {str(n): {"ms_per_partition": C.median(v), "extra_ms_per_partition":
                     C.median(v) - base, "runs_ms": v} for n, v in runs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000, help="source partitions (1 file each)")
    parser.add_argument("--docs-per-file", type=int, default=8)
    parser.add_argument("--reps", type=int, default=7, help="measured runs per variant")
    parser.add_argument("--executors", default="local,inline", help="local, inline")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--dir-sizes", default="0,10000,50000",
                        help="files already in the output directory, for the writer scaling "
                             "check ('' skips it)")
    parser.add_argument("--scaling-partitions", type=int, default=100,
                        help="partitions written per run of the writer scaling check")
    parser.add_argument("--quiet-wait", type=float, default=60,
                        help="wait up to this many seconds for other CPU load to settle")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument("--out", type=Path, default=None, help="result JSON path")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    C.wait_for_quiet(args.quiet_wait)
    clock = DriverClock()
    summary: dict[str, dict[str, object]] = {}
    with C.temp_dir(NAME, keep=args.keep) as tmp:
        inp = tmp / "input"
        t0 = time.perf_counter()
        size = C.write_corpus(inp, args.files, seed=args.seed, docs_per_file=args.docs_per_file)
        print(f"corpus: {args.files} files x {args.docs_per_file} docs = {size / 1e6:.1f} MB "
              f"(generated in {time.perf_counter() - t0:.1f}s)")
        for kind in args.executors.split(","):
            one_run(kind, args.workers, inp, tmp, True, clock)  # warm-up: page cache, imports
            runs: dict[bool, list[dict[str, float]]] = {False: [], True: []}
            for rep in range(args.reps):
                order = (False, True) if rep % 2 == 0 else (True, False)
                for checkpoint in order:
                    runs[checkpoint].append(one_run(kind, args.workers, inp, tmp, checkpoint,
                                                    clock))
            plain = [r["wall_s"] for r in runs[False]]
            ckpt = [r["wall_s"] for r in runs[True]]
            paired = [c / p for c, p in zip(ckpt, plain, strict=True)]
            commit = [r["commit_s"] for r in runs[True]]
            summary[kind] = {
                "executor": label(kind, args.workers),
                "partitions": runs[True][0]["partitions"],
                "wall_plain_s": plain,
                "wall_checkpoint_s": ckpt,
                "median_plain_s": C.median(plain),
                "median_checkpoint_s": C.median(ckpt),
                "ratio_of_medians": C.median(ckpt) / C.median(plain),
                "median_paired_ratio": C.median(paired),
                "overhead_pct": (C.median(paired) - 1) * 100,
                "driver_commit_s_median": C.median(commit),
                "commit_ms_per_partition": C.median(commit) / runs[True][0]["partitions"] * 1e3,
                "commit_share_of_wall_pct": C.median(
                    [r["commit_s"] / r["wall_s"] * 100 for r in runs[True]]),
                "commits_per_run": C.median([r["commits"] for r in runs[True]]),
                "sources_per_commit": runs[True][0]["partitions"]
                / C.median([r["commits"] for r in runs[True]]),
                "store_open_s_median": C.median([r["open_s"] for r in runs[True]]),
                "stats_merge_s_median": C.median([r["merge_s"] for r in runs[True]]),
                "partition_ms_for_2pct": (C.median(ckpt) - C.median(plain))
                / runs[True][0]["partitions"] * 1e3 / TARGET,
                "target_met": (C.median(paired) - 1) < TARGET,
            }
            print(f"  {kind}: done ({args.reps} reps per variant)")
        batching = commit_batching(tmp, args.files, (1, 10, 100))
        sizes = [int(n) for n in args.dir_sizes.split(",") if n]
        scaling = (writer_dir_scaling(inp, tmp, sizes, min(args.scaling_partitions, args.files),
                                      args.reps) if sizes else {})

    print()
    C.print_table(
        ["executor", "partitions", "plain s", "ckpt s", "ratio", "paired", "overhead %",
         "commit ms/part", "commit % wall", "sources/commit", "< 2%?"],
        [[s["executor"], s["partitions"], s["median_plain_s"], s["median_checkpoint_s"],
          s["ratio_of_medians"], s["median_paired_ratio"], s["overhead_pct"],
          s["commit_ms_per_partition"], s["commit_share_of_wall_pct"], s["sources_per_commit"],
          "yes" if s["target_met"] else "NO"] for s in summary.values()],
    )
    print("\ndurable LMDB commit alone, ms per source, by sources per commit: "
          + ", ".join(f"{k}: {v:.3f}" for k, v in batching.items()))
    if scaling:
        print("writer cost, ms per partition, by files already in the output directory: "
              + ", ".join(f"{k}: {v['ms_per_partition']:.2f} ({v['extra_ms_per_partition']:+.2f})"
                          for k, v in scaling.items()))
    C.write_result(NAME, {
        "target": "checkpoint overhead < 2% of wall time",
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "corpus_bytes": size,
        "results": summary,
        "commit_ms_per_source_by_batch": batching,
        "writer_ms_per_partition_by_dir_size": scaling,
    }, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
