"""Peak memory of a pass-through pipeline at 1x and 8x the corpus size.

jsonl_reader(blocksize=16MB) -> JsonlWriter (curator_testing.jsonl) on
LocalExecutor(workers=2), over a corpus of equal-sized files just under the blocksize
(one source partition per file): 1x = 3 files (~48 MB), 8x = 24 files (~382 MB); the 1x
files are the first 3 of the 8x (hard links), so both read the same kind of data.

Each run happens in a fresh child process (`--child`), so nothing carries over.
The parent samples the child's whole process tree with psutil (driver + pool
workers + their helpers) every ``--interval`` seconds and keeps the peak of the
summed RSS; the child reports its own peak RSS and the largest peak RSS among
its finished children (``getrusage``). Medians of ``--reps`` runs per size.

Target (project issue): the 8x peak is within 1.25x of the 1x peak.

    .venv/bin/python bench/memory.py
    .venv/bin/python bench/memory.py --base-files 4 --factor 8 --blocksize 32MB
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import _common as C
import psutil

NAME = "memory"
TARGET = 1.25


def child(args: argparse.Namespace) -> int:
    """One run of the pipeline; prints a JSON line with its own figures."""
    from curator.io.partitioning import parse_size
    from curator.pipeline import Pipeline
    from curator_testing.jsonl import JsonlWriter, jsonl_reader
    from executors import LocalExecutor

    pipeline = Pipeline("memory", [
        *jsonl_reader(str(args.input), blocksize=parse_size(args.blocksize)),
        JsonlWriter(path=str(args.output)),
    ])
    with LocalExecutor(workers=args.workers) as executor:
        start = time.perf_counter()
        result = pipeline.run(executor=executor)
        wall = time.perf_counter() - start
    # closed: the pool outlives run(), and its workers must be reaped to count below
    print(json.dumps({
        "wall_s": wall,
        "partitions": result.sources_total,
        "rows": result.stats.get("jsonl_writer.rows_written", 0),
        "driver_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "largest_child_maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }))
    return 0


def tree_rss(proc: psutil.Process) -> tuple[int, int, dict[int, int]]:
    """(summed RSS of the process and its descendants, process count, per-pid RSS)."""
    per: dict[int, int] = {}
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0, per
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            per[p.pid] = p.memory_info().rss
    return sum(per.values()), len(per), per


def measured_run(inp: Path, out: Path, args: argparse.Namespace) -> dict[str, float]:
    C.fresh(out)
    cmd = [sys.executable, __file__, "--child", "--input", str(inp), "--output", str(out),
           "--blocksize", args.blocksize, "--workers", str(args.workers)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(C.REPO),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    ps = psutil.Process(proc.pid)
    peak, peak_procs, samples = 0, 0, 0
    per_pid_peak: dict[int, int] = {}
    while proc.poll() is None:
        total, count, per = tree_rss(ps)
        samples += 1
        if total > peak:
            peak, peak_procs = total, count
        for pid, rss in per.items():
            per_pid_peak[pid] = max(per_pid_peak.get(pid, 0), rss)
        time.sleep(args.interval)
    stdout, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"child failed with {proc.returncode}")
    report = json.loads(stdout.strip().splitlines()[-1])
    workers = sorted((v for k, v in per_pid_peak.items() if k != proc.pid), reverse=True)
    return {
        **report,
        "tree_peak_rss_mb": peak / 2**20,
        "processes_at_peak": peak_procs,
        "samples": samples,
        "sampled_driver_peak_mb": per_pid_peak.get(proc.pid, 0) / 2**20,
        "sampled_worker_peaks_mb": [w / 2**20 for w in workers],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-files", type=int, default=3, help="files (partitions) at 1x")
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--blocksize", default="16MB")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.02, help="sampling period, s")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--quiet-wait", type=float, default=60,
                        help="wait up to this many seconds for other CPU load to settle")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--input", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)

    from curator.io.partitioning import parse_size

    block = parse_size(args.blocksize)
    assert block is not None
    file_bytes = int(block * 0.99)  # just under the blocksize: one partition per file
    sizes = {"1x": args.base_files, f"{args.factor}x": args.base_files * args.factor}
    results: dict[str, dict[str, object]] = {}
    with C.temp_dir(NAME, keep=args.keep) as tmp:
        big = tmp / f"{args.factor}x"
        t0 = time.perf_counter()
        total = C.write_corpus(big, sizes[f"{args.factor}x"], seed=args.seed,
                               bytes_per_file=file_bytes)
        small = tmp / "1x"
        small.mkdir()
        for path in sorted(big.glob("*.jsonl"))[: args.base_files]:
            os.link(path, small / path.name)
        print(f"corpus: {sizes[f'{args.factor}x']} files of {file_bytes / 1e6:.1f} MB = "
              f"{total / 1e6:.0f} MB (generated in {time.perf_counter() - t0:.1f}s)")
        dirs = {"1x": small, f"{args.factor}x": big}
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in dirs}
        C.wait_for_quiet(args.quiet_wait)
        measured_run(small, tmp / "out", args)  # warm-up (page cache, bytecode)
        for rep in range(args.reps):
            for label in (dirs if rep % 2 == 0 else reversed(dirs)):
                runs[label].append(measured_run(dirs[label], tmp / "out", args))
        for label, rs in runs.items():
            mb = sum(p.stat().st_size for p in dirs[label].glob("*.jsonl")) / 1e6
            results[label] = {
                "corpus_mb": mb,
                "partitions": rs[0]["partitions"],
                "rows": rs[0]["rows"],
                "median_tree_peak_rss_mb": C.median([r["tree_peak_rss_mb"] for r in rs]),
                "median_driver_peak_mb": C.median([r["driver_maxrss_mb"] for r in rs]),
                "median_largest_worker_peak_mb":
                    C.median([r["largest_child_maxrss_mb"] for r in rs]),
                "median_wall_s": C.median([r["wall_s"] for r in rs]),
                "runs": rs,
            }
    hi = results[f"{args.factor}x"]
    lo = results["1x"]
    ratio = hi["median_tree_peak_rss_mb"] / lo["median_tree_peak_rss_mb"]
    paired = C.median([h["tree_peak_rss_mb"] / low["tree_peak_rss_mb"]
                       for h, low in zip(runs[f"{args.factor}x"], runs["1x"], strict=True)])
    print(f"\nLocalExecutor(workers={args.workers}), blocksize {args.blocksize}, "
          f"medians of {args.reps}")
    C.print_table(
        ["size", "corpus MB", "partitions", "tree peak MiB", "driver MiB", "worker MiB", "wall s"],
        [[k, r["corpus_mb"], r["partitions"], r["median_tree_peak_rss_mb"],
          r["median_driver_peak_mb"], r["median_largest_worker_peak_mb"], r["median_wall_s"]]
         for k, r in results.items()],
    )
    met = ratio <= TARGET
    print(f"\n{args.factor}x / 1x peak (tree RSS): {ratio:.3f} (paired median {paired:.3f}); "
          f"target <= {TARGET}: {'met' if met else 'NOT met'}")
    C.write_result(NAME, {
        "target": f"{args.factor}x peak RSS within {TARGET}x of 1x peak",
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                   if k not in ("child", "input", "output")},
        "ratio_of_medians": ratio,
        "median_paired_ratio": paired,
        "target_met": met,
        "results": results,
    }, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
