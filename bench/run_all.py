"""Run every benchmark with modest defaults (about 10 minutes on 2 cores) and summarise.

Each benchmark runs as its own process (a fresh interpreter, so one cannot warm
or pollute another) and writes ``bench/results/<name>.json``; this script then
prints one line per target. Pass ``--only NAME[,NAME]`` to run a subset, or
``--full`` to use each benchmark's own (larger) defaults instead.

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
}


def verdict(name: str) -> str:
    path = BENCH / "results" / f"{name}.json"
    doc = json.loads(path.read_text())
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
        cmd = [sys.executable, str(BENCH / f"{name}.py"), *([] if args.full else MODEST[name])]
        print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call(cmd)
        took = time.perf_counter() - t0
        if rc != 0:
            failed.append(name)
            lines.append(f"{name}: FAILED (exit {rc}) after {took:.0f}s")
        else:
            lines.append(f"{name} ({took:.0f}s): {verdict(name)}")
    print(f"\n=== summary ({time.perf_counter() - start:.0f}s in all; figures in bench/results/)")
    for line in lines:
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
