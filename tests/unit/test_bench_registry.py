"""``make bench`` (bench/run_all.py) knows every benchmark in bench/: it refuses to run
while one is missing from its ``MODEST`` table, so a new script must be registered (or
named a non-benchmark) when it is added."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_every_benchmark_script_is_registered_in_run_all() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("run_all", BENCH / "run_all.py")
        assert spec is not None and spec.loader is not None
        run_all = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(run_all)
    finally:
        sys.path.remove(str(BENCH))
    scripts = set(run_all.benchmark_scripts())
    assert scripts, "bench/ holds benchmarks"
    assert scripts == set(run_all.MODEST), (
        f"unregistered: {sorted(scripts - set(run_all.MODEST))}; "
        f"registered but absent: {sorted(set(run_all.MODEST) - scripts)}")
