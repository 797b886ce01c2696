"""Two runs at once on one output directory or checkpoint: the second is refused
(``output_dir_locked``/``checkpoint_locked``, exit 2) and touches nothing; a run killed
by SIGKILL leaves no stale lock (the kernel drops an flock with its process)."""

from __future__ import annotations

import fcntl
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from curator.errors import CuratorError
from curator.locking import LOCK_NAME, output_lock
from curator.steps.registry import STEPS
from tests.chaos._harness import Case, leftovers, wait_group_gone
from tests.integration._support import Proc
from tests.steps._worlds import data_files

pytestmark = pytest.mark.timeout(240)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def stop_once_locked(proc: Proc, lock: Path, timeout: float = 120) -> None:
    """SIGSTOP the run's group as soon as it holds its lock (the file names its pid,
    written once the flock is held)."""
    deadline = time.monotonic() + timeout
    while not (lock.is_file() and lock.read_text().strip()):
        assert proc.poll() is None, f"the run ended before it locked\n{proc.stderr()}"
        assert time.monotonic() < deadline, "no lock taken"
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGSTOP)
    assert lock.read_text().strip(), "the run ended between the check and the stop"
    assert_holds(proc, lock)


def assert_holds(proc: Proc, lock: Path) -> None:
    """Fail, with the run's state and stderr, unless a live ``proc`` holds ``lock``'s
    flock (a probe of our own is refused): what the refusals below depend on."""
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    finally:
        os.close(fd)
    try:
        state = psutil.Process(proc.pid).status()
    except psutil.NoSuchProcess:
        state = "gone"
    raise AssertionError(f"the stopped run ({state}, exit {proc.poll()}) no longer "
                         f"holds {lock.name} ({lock.read_text().strip()!r})\n"
                         f"{proc.stderr()[-3000:]}")


def test_a_second_run_is_refused_while_the_first_holds_the_lock(tmp_path: Path) -> None:
    case = Case(STEPS[0], "local", tmp_path)
    lock = case.out / LOCK_NAME
    with case.proc("first") as first:
        stop_once_locked(first, lock)
        before = tree(case.out)
        with case.proc("second") as second:  # the same output dir and checkpoint
            code = second.wait(120)
            assert_holds(first, lock)
            assert code == 2, second.stderr()
            assert "output_dir_locked" in second.stderr()
        assert tree(case.out) == before, "the refused run touched the output"
        # another output directory, the same checkpoint: refused on the checkpoint
        with case.proc("third", f"output_dir={tmp_path / 'other'}") as third:
            assert third.wait(120) == 2, third.stderr()
            assert "checkpoint_locked" in third.stderr()
        os.killpg(first.pid, signal.SIGCONT)
        assert first.wait(300) == 0, first.stderr()
    assert not lock.exists() and leftovers(case.out) == []
    assert case.spec.is_complete(case.cfg)


def test_a_killed_run_leaves_no_stale_lock(tmp_path: Path) -> None:
    case = Case(STEPS[0], "local", tmp_path)
    lock = case.out / LOCK_NAME
    with case.proc("killed") as killed:
        stop_once_locked(killed, lock)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(60)
        wait_group_gone(killed)
    assert lock.is_file(), "a killed run cannot remove its lock file"
    with case.proc("rerun") as rerun:
        assert rerun.wait(300) == 0, rerun.stderr()
    assert not lock.exists()
    assert case.spec.is_complete(case.cfg)
    assert data_files(case.out)


def test_the_lock_is_exclusive_and_released_with_its_file(tmp_path: Path) -> None:
    first = output_lock(tmp_path)
    first.acquire()
    with pytest.raises(CuratorError) as info:
        output_lock(tmp_path).acquire()
    assert info.value.error_id == "output_dir_locked" and info.value.exit_code == 2
    first.release()
    assert not (tmp_path / LOCK_NAME).exists()
    second = output_lock(tmp_path)
    second.acquire()
    assert os.path.samestat(os.stat(tmp_path / LOCK_NAME), os.fstat(second._fd))  # type: ignore[arg-type]
    with pytest.raises(CuratorError):
        output_lock(tmp_path).acquire()
    second.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_an_unwritable_output_is_an_error_id_not_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CuratorError) as info:
        output_lock(blocker / "out").acquire()  # a parent that is a file
    assert info.value.error_id == "output_dir_unwritable"
