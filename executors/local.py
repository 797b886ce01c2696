"""The local backend: a process pool on this machine."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal

from curator.execution import Executor, UnitResult, WorkerChain, run_unit
from curator.tasks import Task

_CHAIN: WorkerChain | None = None


def _init_worker(chain: WorkerChain) -> None:
    # Ctrl+C reaches the whole process group, and so does a SIGTERM sent to the group
    # (a batch scheduler's time limit, ``kill -TERM -PGID``): the driver decides how to
    # stop, and a worker finishes the partition it holds so its output is complete.
    # The driver stops workers with SIGKILL when it abandons them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    global _CHAIN
    _CHAIN = chain


def _run(task: Task) -> UnitResult:
    assert _CHAIN is not None
    return run_unit(_CHAIN, task, worker=f"pid-{os.getpid()}")


class LocalExecutor(Executor):
    """Source partitions on a pool of ``workers`` processes (default: the CPU count).

    Workers are started with ``spawn``: safe beside the threads that Prefect, Ray
    and Polars run in the driver. As with any multiprocessing program, a script
    that runs a pipeline must guard its entry point with ``if __name__ == "__main__":``.
    """

    name = "local"

    def __init__(self, workers: int | None = None, start_method: str = "spawn") -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.start_method = start_method
        self._pool: cf.ProcessPoolExecutor | None = None

    @property
    def capacity(self) -> int:
        return self.workers

    def start(self, chain: WorkerChain) -> None:
        self._pool = cf.ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context(self.start_method),
            initializer=_init_worker,
            initargs=(chain,),
        )

    def submit(self, task: Task) -> cf.Future[UnitResult]:
        assert self._pool is not None, "start() first"
        return self._pool.submit(_run, task)

    def stop(self, abandon: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if abandon:
            # No public API stops running workers before Python 3.14.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()  # workers ignore SIGTERM (see _init_worker)
            pool.shutdown(wait=False, cancel_futures=True)
        else:
            pool.shutdown(wait=True)

    def describe(self) -> dict[str, object]:
        return {"executor": self.name, "workers": self.workers}
