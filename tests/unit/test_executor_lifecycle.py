"""Executors keep their workers between runs and release them on close()."""

from __future__ import annotations

import json
from pathlib import Path

import psutil

from curator.pipeline import Pipeline
from curator_testing.jsonl import JsonlWriter, jsonl_reader
from executors import LocalExecutor


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    for f in range(4):
        (folder / f"{f}.jsonl").write_text(json.dumps({"text": f"doc {f}"}) + "\n")
    return folder



def test_a_local_pool_serves_several_runs_and_close_stops_it(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "in")
    with LocalExecutor(workers=2) as executor:
        for n in range(2):
            out = tmp_path / f"out{n}"
            result = Pipeline(f"p{n}", [*jsonl_reader(str(src)),
                                        JsonlWriter(path=str(out))]).run(executor=executor)
            assert result.sources_completed == 4 and len(list(out.glob("*.jsonl"))) == 4
            children = set(executor._pool._processes)  # this pool's worker pids
            if n == 0:
                first_children = children
        assert children == first_children  # the same worker processes, not a new pool
        assert len(first_children) >= 2
    _gone, alive = psutil.wait_procs([psutil.Process(p) for p in first_children
                                     if psutil.pid_exists(p)], timeout=10)
    assert not alive


def test_a_dead_drivers_chain_file_is_removed_by_the_next_pool_start(
        tmp_path: Path, monkeypatch) -> None:
    """A driver SIGKILLed inside a pass leaves its ``curate-chain-<pid>-*.pkl``; the next
    pool start on the host removes it, and leaves a live driver's alone."""
    import subprocess
    import sys
    import tempfile

    from executors.local import _clear_dead_chains

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = tmp_path / f"curate-chain-{gone.stdout.strip()}-abc.pkl"
    alive = tmp_path / f"curate-chain-{psutil.Process().pid}-def.pkl"
    other = tmp_path / "curate-chain-xyz.pkl"  # not a name this code writes: untouched
    for p in (dead, alive, other):
        p.write_bytes(b"x")
    _clear_dead_chains()
    assert not dead.exists() and alive.exists() and other.exists()
