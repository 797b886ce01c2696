"""The Ray backend: local Ray by default, or an existing cluster by address."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import threading
from typing import Any

import ray

from curator.execution import Executor, UnitResult, WorkerChain, run_unit
from curator.tasks import Task

#: A small local Ray, enough for this machine's tests and demos, bound to loopback
#: (see :func:`_keep_local_ray_on_loopback`).
LOCAL_INIT_DEFAULTS: dict[str, Any] = {
    "include_dashboard": False,
    "log_to_driver": False,
    "logging_level": "ERROR",
    "object_store_memory": 256 * 1024 * 1024,
    "_node_ip_address": "127.0.0.1",
}


def _keep_local_ray_on_loopback() -> None:
    """Make a Ray that this process starts listen on 127.0.0.1 only.

    ``_node_ip_address="127.0.0.1"`` alone is not enough: Ray 2.60 rewrites it to the
    machine's routable address and listens on every interface, unless cluster mode
    is off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read once when ray is imported).
    For a Ray started here, single-machine by definition, the variable is set for the
    processes Ray spawns, and the already imported constant is updated to match.
    Joining a cluster by address never goes through here.
    """
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def _ray_run(chain: WorkerChain, task: Task) -> UnitResult:
    return run_unit(chain, task, worker=f"{ray.get_runtime_context().get_node_id()[:8]}")


class RayExecutor(Executor):
    """Source partitions as Ray tasks.

    ``address=None`` starts (or reuses) a local Ray; ``"auto"`` or ``"ray://..."``
    joins an existing cluster. ``workers`` caps the partitions in flight (default:
    the cluster's CPUs). A Ray instance this executor started is kept for the next
    run (the phases of one step) and shut down by :meth:`close`, by an abandoned run,
    or at exit; one it found running is left alone.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        cpus_per_partition: float = 1.0,
        init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.workers = workers
        self.cpus_per_partition = cpus_per_partition
        self.init_kwargs = init_kwargs or {}
        self._owned = False
        self._chain_ref: Any = None
        self._remote: Any = None
        # Units in flight only: a finished unit's ref is dropped at once, so its result
        # is not pinned in the object store for the rest of the run.
        self._refs: dict[int, Any] = {}
        self._refs_lock = threading.Lock()

    @property
    def capacity(self) -> int:
        if self.workers:
            return self.workers
        cpus = ray.cluster_resources().get("CPU", 1) if ray.is_initialized() else os.cpu_count()
        return max(1, int((cpus or 1) // max(self.cpus_per_partition, 0.01)))

    def start(self, chain: WorkerChain) -> None:
        if not ray.is_initialized():
            kwargs = dict(self.init_kwargs)
            if self.address is None:
                _keep_local_ray_on_loopback()
                kwargs = {**LOCAL_INIT_DEFAULTS, **kwargs}
                if self.workers:
                    kwargs.setdefault("num_cpus", self.workers)
            ray.init(address=self.address, ignore_reinit_error=True, **kwargs)
            self._owned = True
        self._chain_ref = ray.put(chain)
        self._remote = ray.remote(num_cpus=self.cpus_per_partition, max_retries=0)(_ray_run)

    def submit(self, task: Task) -> cf.Future[UnitResult]:
        """A future that is running from the start: Ray gives no way to tell a queued
        task from a running one, and a future that could be cancelled while its task
        goes on would let the engine stop waiting for a unit that still writes its
        outputs (after a failure, say, when the step writes its manifest)."""
        ref = self._remote.remote(self._chain_ref, task)
        future: cf.Future[UnitResult] = cf.Future()
        future.set_running_or_notify_cancel()  # cancel() is now refused
        key = id(future)
        with self._refs_lock:
            self._refs[key] = ref

        def settle(done: cf.Future[UnitResult]) -> None:
            self._forget(key)
            try:
                future.set_result(done.result())
            except BaseException as exc:  # the unit's own error, or Ray's
                future.set_exception(exc)

        ref.future().add_done_callback(settle)
        return future

    def _forget(self, key: int) -> None:
        with self._refs_lock:
            self._refs.pop(key, None)

    def stop(self, abandon: bool = False) -> None:
        with self._refs_lock:
            refs, self._refs = list(self._refs.values()), {}
        if abandon:
            for ref in refs:
                with contextlib.suppress(Exception):  # already finished or gone
                    ray.cancel(ref, force=True)
        self._chain_ref = None
        if abandon:
            self.close()

    def close(self) -> None:
        """Shut down a Ray that this executor started (one it joined is left alone)."""
        if self._owned:
            ray.shutdown()
            self._owned = False

    def describe(self) -> dict[str, object]:
        return {"executor": self.name, "address": self.address, "workers": self.capacity}
