"""Start-up: the fixed cost of a ``curate`` command, with and without Prefect.

``curate ingest`` on a tiny input (10 documents: the step's own work is milliseconds),
whole process wall time, in three modes, interleaved, medians:

- ``direct``: no Prefect server configured, ``CURATE_PREFECT`` at its default
  (``auto``): the step runs without Prefect (flows/direct.py);
- ``temporary server``: ``CURATE_PREFECT=always`` and no server: Prefect starts a
  temporary server with its database in the process (the behaviour before);
- ``running server``: ``PREFECT_API_URL`` set to a server this script starts first
  (not counted): the command runs as a Prefect flow with task runs on it.

Plus ``python -c pass`` and ``curate --help`` as floors, and the slowest imports of
the direct path (``python -X importtime``).

Targets (issue 15): <= 3 s of fixed cost without a server, <= 1 s with one running.

    .venv/bin/python bench/startup.py
    .venv/bin/python bench/startup.py --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import _common as C

NAME = "startup"
REPO = Path(__file__).resolve().parents[1]
CURATE = str(Path(sys.executable).parent / "curate")


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return wall


def slowest_imports(env: dict[str, str], top: int = 8) -> list[tuple[str, float]]:
    """The direct path's imports with the largest cumulative time (seconds)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "import flows.cli, flows.direct, flows.terminal"],
                          env=env, capture_output=True, text=True, cwd=REPO)
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(2)) <= 2:  # top-level packages only
            rows.append((m.group(3), int(m.group(1)) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None,
                    help="result file (default bench/results/startup.json)")
    args = ap.parse_args()

    with C.temp_dir("startup") as tmp:
        base = {**os.environ, **C.prefect_env(tmp), "CURATE_PREFECT": "auto"}
        base.pop("PREFECT_API_URL", None)
        tiny = tmp / "tiny.jsonl"
        tiny.write_text("".join(json.dumps({"id": f"d{i}", "text": f"document {i} " * 20})
                                + "\n" for i in range(10)))

        from prefect.server.api.server import SubprocessASGIServer

        os.environ.update(C.prefect_env(tmp))
        server = SubprocessASGIServer()
        server.start(timeout=120)
        try:
            envs = {
                "direct": base,
                "temporary server": {**base, "CURATE_PREFECT": "always"},
                "running server": {**base, "PREFECT_API_URL": server.api_url},
            }
            times: dict[str, list[float]] = {k: [] for k in
                                             ["python -c pass", "curate --help", *envs]}
            for rep in range(args.reps):
                times["python -c pass"].append(timed([sys.executable, "-c", "pass"], base))
                times["curate --help"].append(timed([CURATE, "--help"], base))
                for mode, env in envs.items():
                    out = tmp / f"out-{mode.replace(' ', '-')}-{rep}"
                    times[mode].append(timed([CURATE, "ingest", "--set", f"input={tiny}",
                                              "--set", f"output_dir={out}"], env))
                print(f"rep {rep + 1}/{args.reps}: " + ", ".join(
                    f"{k} {v[-1]:.2f}s" for k, v in times.items()), flush=True)
        finally:
            server.stop()
        imports = slowest_imports(base)

    med = {k: C.median(v) for k, v in times.items()}
    C.print_table(["run", "median wall s", "runs"],
                  [[k, f"{med[k]:.2f}", ", ".join(f"{x:.2f}" for x in v)]
                   for k, v in times.items()])
    print("slowest imports of the direct path (cumulative s):",
          ", ".join(f"{n} {s:.2f}" for n, s in imports))
    C.write_result(NAME, {"reps": args.reps, "wall_seconds": times, "median": med,
                          "targets": {"direct": 3.0, "running server": 1.0},
                          "slowest_imports": imports, "machine": C.machine_load()}, args.out)


if __name__ == "__main__":
    main()
