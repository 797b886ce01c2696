"""Run every benchmark with modest defaults (about 10 minutes on 2 cores) and summarise.

Each benchmark runs as its own process (a fresh interpreter, so one cannot warm
or pollute another); this script then prints one line per target. Pass ``--only
NAME[,NAME]`` to run a subset, or ``--full`` to use each benchmark's own (larger)
defaults instead.

A modest run writes ``bench/results/<name>_modest.json``, so it never replaces
the full-size figures that the docs quote (``<name>.json``, written by
``--full``). The modest ingest run also keeps its data apart
(``/tmp/cb-ingest-data-modest``): the full run's data directory is reused across
runs and regenerated when the size differs.

    .venv/bin/python bench/run_all.py
    .venv/bin/python bench/run_all.py --only memory,resume_startup
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent

#: name -> arguments for the modest run (sizes stay at the issue's minimums; fewer reps)
MODEST: dict[str, list[str]] = {
    "checkpoint_overhead": ["--reps", "5"],
    "resume_startup": ["--reps", "3"],
    "memory": ["--reps", "3"],
    "orchestration_overhead": ["--reps", "2"],
    # 128 MB, one repetition, no profile, its own data directory
    "ingest_throughput": ["--size-mb", "128", "--reps", "1", "--profile-mb", "0",
                          "--data-dir", "/tmp/cb-ingest-data-modest"],
}


def result_path(name: str, full: bool) -> Path:
    return BENCH / "results" / (f"{name}.json" if full else f"{name}_modest.json")


def verdict(name: str, full: bool = False) -> str:
    doc = json.loads(result_path(name, full).read_text())
    if name == "ingest_throughput":
        parts = []
        for v, s in doc["summary"].items():
            ratio = s.get("floor_over_this_per_cpu_s")
            if v.startswith("floor") or not ratio:
                continue
            if s["processes"] > 1 and s["cores_busy"] < 0.5:
                # a pool kept open after the run is never reaped: its CPU is missing
                parts.append(f"{v} not judged (workers' CPU not counted)")
            else:
                parts.append(f"{v} {ratio:.1f}x ({'met' if ratio <= 2.0 else 'NOT met'})")
        return "ingest within 2x of the polars floor per CPU second: " + "; ".join(parts)
    res = doc["results"]
    if name == "checkpoint_overhead":
        parts = [f"{r['executor']} {r['overhead_pct']:+.1f}% "
                 f"({'met' if r['target_met'] else 'NOT met'})" for r in res.values()]
        return "checkpoint overhead < 2%: " + "; ".join(parts)
    if name == "resume_startup":
        parts = [f"{r['executor']} {r['median_to_first_partition_s']:.2f}s "
                 f"({'met' if r['target_met'] else 'NOT met'})" for r in res.values()]
        return "resume start-up < 2 s: " + "; ".join(parts)
    if name == "memory":
        return (f"8x/1x peak RSS <= 1.25: {doc['ratio_of_medians']:.3f} "
                f"({'met' if doc['target_met'] else 'NOT met'})")
    if name == "orchestration_overhead":
        parts = [f"{r['executor']}@{r['blocksize']} {r['overhead_pct']:+.1f}% "
                 f"({'met' if r['target_met'] else 'NOT met'})" for r in res.values()]
        return "orchestration overhead < 5%: " + "; ".join(parts)
    return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MODEST), help="comma-separated names")
    parser.add_argument("--full", action="store_true", help="each benchmark's own defaults")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(MODEST)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")

    failed: list[str] = []
    lines: list[str] = []
    start = time.perf_counter()
    for name in names:
        cmd = [sys.executable, str(BENCH / f"{name}.py"),
               *([] if args.full else [*MODEST[name], "--out", str(result_path(name, False))])]
        print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call(cmd)
        took = time.perf_counter() - t0
        if rc != 0:
            failed.append(name)
            lines.append(f"{name}: FAILED (exit {rc}) after {took:.0f}s")
        else:
            lines.append(f"{name} ({took:.0f}s): {verdict(name, args.full)}")
    where = "bench/results/<name>.json" if args.full else "bench/results/<name>_modest.json"
    print(f"\n=== summary ({time.perf_counter() - start:.0f}s in all; figures in {where})")
    for line in lines:
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
