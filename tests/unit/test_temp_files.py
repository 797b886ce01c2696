"""Temp files beside outputs: named by host and pid; a stale one is removed only when it is
this host's and its writer is dead (an output directory may be shared by several hosts)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from curator.io.writers import atomic_file, clear_stale_temps
from curator.pipeline import Pipeline
from curator_testing.jsonl import JsonlWriter
from tests.unit._support import Emit


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(proc.stdout)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    return pid


def _this_host() -> str:
    host = socket.gethostname()
    assert host and all(c.isalnum() or c in ".-" for c in host), host
    return host


def test_a_temp_file_names_its_host_and_pid(tmp_path: Path) -> None:
    """The temp name carries the host, so a pid is never read on the wrong host."""
    target = tmp_path / "out" / "part_0.jsonl"
    with atomic_file(target) as f:
        f.write(b"x\n")
        assert [p.name for p in target.parent.iterdir()] == [
            f".part_0.jsonl.tmp-{_this_host()}-{os.getpid()}"]
    assert [p.name for p in target.parent.iterdir()] == ["part_0.jsonl"]


def test_stale_temp_cleanup_judges_only_this_hosts_pids(tmp_path: Path) -> None:
    """An output directory several hosts share (a network filesystem). A temp file
    of pid N on another host must not be judged by this host's pid N: it may be a live
    writer there. Only this host's temps of dead writers are removed."""
    dead, me, host = _dead_pid(), os.getpid(), _this_host()
    out = tmp_path / "out"
    (out / "rejected").mkdir(parents=True)
    names = {
        f".a.jsonl.tmp-{host}-{dead}": False,  # this host, writer dead: removed
        f".b.jsonl.tmp-{dead}": False,  # an older run's name (no host), writer dead: removed
        f".c.jsonl.tmp-{host}-{me}": True,  # this host, writer alive: kept
        f".d.jsonl.tmp-node-7.cluster-{dead}": True,  # another host: kept
        f".e.jsonl.tmp-node-7.cluster-{me}": True,  # another host, pid alive here by chance
        f"rejected/.f.jsonl.tmp-node-7-{dead}": True,  # a host named with a dash and digit
    }
    for name in names:
        (out / name).write_text("half a record")
    clear_stale_temps(out)
    assert {name: (out / name).exists() for name in names} == names

    # the generic writer sink (curator_testing) clears its output directory with the same rule
    (out / f".a.jsonl.tmp-{host}-{dead}").write_text("half a record")
    Pipeline("w", [Emit(n=1), JsonlWriter(path=str(out))]).run()
    assert not (out / f".a.jsonl.tmp-{host}-{dead}").exists()
    assert (out / f".d.jsonl.tmp-node-7.cluster-{dead}").exists()
    assert (out / "0.jsonl").exists()
