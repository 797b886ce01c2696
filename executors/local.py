"""The local backend: a process pool on this machine."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from curator.execution import Executor, UnitResult, WorkerChain, run_unit
from curator.io.shared import SharedArea
from curator.tasks import Task

_CHAIN: WorkerChain | None = None
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _init_worker() -> None:
    # Ctrl+C reaches the whole process group, and so does a SIGTERM sent to the group
    # (a batch scheduler's time limit, ``kill -TERM -PGID``): the driver decides how to
    # stop, and a worker finishes the partition it holds so its output is complete.
    # The driver stops workers with SIGKILL when it abandons them. The worker started
    # with both signals blocked (_starting_workers): one sent since stays pending and
    # is discarded here, once ignored.
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


@contextlib.contextmanager
def _starting_workers() -> Iterator[None]:
    """Around every call that may start a worker (the pool's creation, ``submit``).

    SIGINT and SIGTERM are blocked in this thread meanwhile: a spawned worker inherits
    the mask through ``exec``, so a Ctrl+C in the second it spends importing before
    :func:`_init_worker` runs no longer kills it with a ``KeyboardInterrupt`` traceback
    (and breaks the pool: issue #29, item 10). The driver loses nothing: another of its
    threads takes the signal, or it is delivered here when the mask is restored."""
    with _safe_path():
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _safe_path() -> Iterator[None]:
    """``PYTHONSAFEPATH=1`` for the processes started inside (Python 3.11+).

    A spawned worker (and multiprocessing's resource tracker) starts as ``python -c
    "from multiprocessing.spawn import ..."``, and ``-c`` puts the working directory
    first on ``sys.path``: run from a data directory holding a ``multiprocessing.py``
    (or ``polars.py``, ...), every worker would import it and run its code. With
    PYTHONSAFEPATH they do not look there (they take the driver's ``sys.path`` once
    started). Set only while the pool starts processes, so the driver's later
    subprocesses (``python script.py`` importing its neighbours) are not changed.
    docs/reliability.md, "Security defaults, checked"."""
    if os.environ.get("PYTHONSAFEPATH"):
        yield
        return
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        os.environ.pop("PYTHONSAFEPATH", None)


def _run(token: str, chain_file: str, area: SharedArea | None, task: Task) -> UnitResult:
    """Run one unit; the run's chain is read from its file once per worker. ``area``:
    the step's output area on object storage (what the unit writes there goes up to
    its URL: curator.io.shared), sent with every unit (two short strings)."""
    global _CHAIN
    if _CHAIN is None or _CHAIN.token != token:
        _CHAIN = WorkerChain(token=token, blob=Path(chain_file).read_bytes(), area=area)
    return run_unit(_CHAIN, task, worker=f"pid-{os.getpid()}")


def _clear_dead_chains() -> None:
    """Remove the chain files of drivers that died (SIGKILL, out of memory) before their
    pass ended: ``curate-chain-<pid>-*.pkl`` in the temp directory whose pid is not a
    live process. A live driver's (another run on this host) is left alone."""
    for path in Path(tempfile.gettempdir()).glob("curate-chain-*-*.pkl"):
        pid = path.name.removeprefix("curate-chain-").split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)
        except PermissionError:
            pass  # another user's live process


class LocalExecutor(Executor):
    """Source partitions on a pool of ``workers`` processes (default: the CPU count).

    Workers are started with ``spawn``: safe beside the threads that Prefect, Ray
    and Polars run in the driver. As with any multiprocessing program, a script
    that runs a pipeline must guard its entry point with ``if __name__ == "__main__":``.

    The pool is started by the first run and kept for the next ones (the phases of
    one step), so workers are spawned once; :meth:`close` (or the end of a ``with``
    block, or of the program) stops them. Each run's stages travel to the workers
    through a file written once, not with every partition.
    """

    name = "local"

    def __init__(self, workers: int | None = None, start_method: str = "spawn") -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.start_method = start_method
        self._pool: cf.ProcessPoolExecutor | None = None
        #: (token, chain file, output area)
        self._chain: tuple[str, str, SharedArea | None] | None = None

    @property
    def capacity(self) -> int:
        return self.workers

    def start(self, chain: WorkerChain) -> None:
        if self._pool is None:
            with _starting_workers():  # its queues' locks may start the resource tracker
                self._pool = cf.ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context(self.start_method),
                    initializer=_init_worker,
                )
        _clear_dead_chains()
        fd, path = tempfile.mkstemp(prefix=f"curate-chain-{os.getpid()}-", suffix=".pkl")
        with os.fdopen(fd, "wb") as f:
            f.write(chain.blob)
        self._chain = (chain.token, path, chain.area)

    def submit(self, task: Task) -> cf.Future[UnitResult]:
        assert self._pool is not None and self._chain is not None, "start() first"
        try:
            with _starting_workers():  # the pool spawns its workers in submit()
                return self._pool.submit(_run, *self._chain, task)
        except (BrokenProcessPool, OSError) as exc:
            # a worker died since the engine last looked (killed, out of memory): this
            # unit fails like the ones that were running, and the run stops with
            # partition_failed and its report, not with the pool's traceback. A worker
            # that dies while this submit spawns its replacement breaks the pool under
            # it: the spawn then fails on the pool's closed pipe (OSError "handle is
            # closed"), which is the same death
            if not isinstance(exc, BrokenProcessPool):
                deadline = time.monotonic() + 2.0  # the pool's thread marks it broken
                while not self._broken() and time.monotonic() < deadline:
                    time.sleep(0.01)
                if not self._broken():
                    raise
                exc = BrokenProcessPool(f"a worker died while another was started: {exc}")
            failed: cf.Future[UnitResult] = cf.Future()
            failed.set_exception(exc)
            return failed

    def stop(self, abandon: bool = False) -> None:
        if self._chain is not None:
            Path(self._chain[1]).unlink(missing_ok=True)
            self._chain = None
        if abandon or self._broken():
            self._shutdown(kill=True)

    def close(self) -> None:
        self.stop()
        self._shutdown(kill=self._broken())

    def _broken(self) -> bool:
        """A worker died (killed, out of memory): the pool is broken. Python's pool then
        stops the other workers with SIGTERM, which they ignore (see _init_worker), and
        waits for them for ever; they are killed here instead, so the run fails (its
        partitions ``partition_failed``) rather than hangs."""
        return bool(getattr(self._pool, "_broken", False))

    def _shutdown(self, kill: bool) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if kill:
            # No public API stops running workers before Python 3.14.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()  # workers ignore SIGTERM (see _init_worker)
            pool.shutdown(wait=False, cancel_futures=True)
        else:
            pool.shutdown(wait=True)

    def describe(self) -> dict[str, object]:
        return {"executor": self.name, "workers": self.workers}
