"""A Ctrl+C at any moment of a parallel run, its first second included, ends ``curate``
with one line, exit 130 and no traceback, and the same command resumes to the bytes of
a clean run (issue #29, item 10).

It used to print ``KeyboardInterrupt`` tracebacks: the driver's while it imported the
command line, and a spawned worker's while it imported before ignoring SIGINT (which
also broke the pool: ``partition_failed`` lines and an ``InvalidStateError`` thread
traceback). The moments are counted from when ``curate`` handles SIGTERM (its entry
point's first line, :mod:`flows.entry`): before that, the Python interpreter is still
starting, which no program can handle.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from curator.checkpoint import METADATA_DIRNAME
from curator.config import validate_config
from curator.steps.registry import STEPS
from tests.chaos._harness import Case, leftovers
from tests.integration._support import Proc, completed_sources
from tests.steps._worlds import data_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

INGEST = next(spec for spec in STEPS if spec.key == "ingest")


def handles_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (``SigCgt`` in /proc): Python
    installs none by itself, so ``curate``'s entry point has run its first line."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines()
                      if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def has_children(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return bool(psutil.Process(pid).children())
    return False


def a_partition_complete(ckpt: Path) -> bool:
    for metadata in ckpt.rglob(METADATA_DIRNAME):
        with contextlib.suppress(Exception):  # a writer file being created
            if completed_sources(metadata):
                return True
    return False


def wait_for(proc: Proc, ready: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"ended before {what}\n{proc.stderr()}"
        assert time.monotonic() < deadline, f"not {what} after {timeout}s"
        time.sleep(0.002)


FULL = os.environ.get("CURATE_CHAOS_FULL") == "1"
#: (name, what to wait for after curate handles signals, then seconds more); ``make
#: test`` runs those not marked ``full`` (``make chaos`` all)
MOMENTS = [
    ("at-once", None, 0.0, False),
    ("0.2s", None, 0.2, True),
    ("0.5s", None, 0.5, False),
    ("1s", None, 1.0, True),
    ("workers-starting", "children", 0.0, False),
    ("first-partition-done", "partition", 0.0, False),
]
CASES = [pytest.param(wait, delay, id=name, marks=pytest.mark.skip(
             reason="the full set runs in make chaos (CURATE_CHAOS_FULL=1)")
             if full and not FULL else ())
         for name, wait, delay, full in MOMENTS]


@pytest.mark.parametrize(("wait", "delay"), CASES)
def test_an_early_ctrl_c_is_one_line_and_resumes(
        wait: str | None, delay: float, tmp_path: Path) -> None:
    case = Case(INGEST, "local", tmp_path, workers=2)
    clean = tmp_path / "clean"  # beside the run: the reports name the (shared) input
    INGEST.run(validate_config(INGEST.config, case.world.config(clean)))
    with case.proc("interrupted") as proc:
        wait_for(proc, lambda: handles_sigterm(proc.pid), "handling signals")
        if wait == "children":
            wait_for(proc, lambda: has_children(proc.pid), "starting workers")
        elif wait == "partition":
            wait_for(proc, lambda: a_partition_complete(case.ckpt), "a partition complete")
        time.sleep(delay)
        proc.send(signal.SIGINT, group=True)  # as a terminal's Ctrl+C
        code = proc.wait(180)
    stderr = proc.stderr()
    assert code == 128 + signal.SIGINT, stderr[-3000:]
    for sign in ("Traceback", "KeyboardInterrupt", "InvalidStateError", "terminated abruptly"):
        assert sign not in stderr, stderr[-3000:]
    assert stderr.count("error: [interrupted_sigint]") == 1, stderr[-3000:]
    with case.proc("resumed") as proc:
        assert proc.wait(300) == 0, proc.stderr()[-3000:]
    assert data_files(case.out) == data_files(clean)
    assert leftovers(case.out) == []
