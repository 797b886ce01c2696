"""``make chaos``: every registered step, on the process pool and on Ray, killed with
SIGKILL (the whole process group) at seeded random moments until it finishes, then
compared with a clean run (tests/chaos/_harness.py; docs/reliability.md); and the whole
flow (``--steps flow``: ``curate flow``, the demo's apply flow) the same way.

    .venv/bin/python bench/chaos.py --kills 20 --seed 14 [--executors local ray]
        [--steps KEY ...] [--out bench/results/chaos.json]

Each (step, executor) gets its own seed (``seed`` + its index), printed with its figures,
so one failure can be replayed alone with ``--steps KEY --executors EX --seed N``.
Exit 1 if any comparison failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)

from curator_testing import hermetic_env  # noqa: E402

_SESSION = Path(tempfile.mkdtemp(prefix="curate-chaos-"))
os.environ.update(hermetic_env(_SESSION))

from curator.steps.registry import STEPS  # noqa: E402
from tests.chaos._harness import chaos, make_case  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--executors", nargs="+", default=["local", "ray"])
    parser.add_argument("--steps", nargs="+", default=[*(s.key for s in STEPS), "flow"],
                        help="registered step keys and/or 'flow' (the whole flow)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "chaos.json"))
    parser.add_argument("--workdir", default=None, help="kept for inspection if given")
    args = parser.parse_args()
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="chaos-"))
    rows, failed, t0 = [], 0, time.monotonic()
    index = 0
    for executor in args.executors:
        for key in [*(s.key for s in STEPS), "flow"]:
            if key not in args.steps:
                continue
            seed = args.seed + index
            index += 1
            case = make_case(key, executor, work / f"{executor}-{key}")
            spec = case.spec
            try:
                fig = chaos(case, args.kills, seed)
            except Exception as exc:  # a run that could not even be measured
                rows.append({"step": spec.key, "executor": executor, "seed": seed,
                             "mismatches": [f"{type(exc).__name__}: {exc}"[:3000]]})
                failed += 1
                print(f"{executor:5} {spec.key:16} seed {seed}: ERROR {exc}"[:500], flush=True)
                continue
            finally:
                case.close()
            row = asdict(fig)
            rows.append(row)
            failed += bool(fig.mismatches)
            print(f"{executor:5} {spec.key:16} seed {seed}: {fig.kills} kills, {fig.runs} "
                  f"runs, {fig.cycles} cycles, {fig.resumed_runs} runs resumed "
                  f"(+{fig.resumed_then_killed} resumed, then killed), "
                  f"{fig.killed_after_completion} killed after completion, "
                  f"mismatches {len(fig.mismatches)}, {fig.seconds:.0f} s "
                  f"(clean {fig.clean_seconds:.1f} s) {fig.mismatches or ''}", flush=True)
            _write(args.out, rows, args, time.monotonic() - t0)
            if not args.workdir:
                shutil.rmtree(case.folder, ignore_errors=True)
    _write(args.out, rows, args, time.monotonic() - t0)
    shutil.rmtree(_SESSION, ignore_errors=True)
    print(f"{len(rows)} cases, {failed} failed, {time.monotonic() - t0:.0f} s -> {args.out}")
    return 1 if failed else 0


def _write(path: str, rows: list, args: argparse.Namespace, seconds: float) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({
        "kills_per_case": args.kills, "seed": args.seed, "seconds": round(seconds, 1),
        "cases": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
