"""The Ray backend: local Ray by default, or an existing cluster by address."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import contextvars
import dataclasses
import ipaddress
import logging
import math
import os
import socket
import threading
from typing import Any

import cloudpickle
import ray

from curator.errors import CuratorError
from curator.execution import Executor, UnitResult, WorkerChain, run_unit
from curator.stages import Resources
from curator.tasks import Task

log = logging.getLogger("curator.executors.ray")

#: A small local Ray, enough for this machine's tests and demos, bound to loopback
#: (see :func:`_keep_local_ray_on_loopback`). ``address="local"``: a run without an
#: address starts this Ray of its own, always. Ray's default (``None``) would instead
#: join the cluster named in ``<ray temp dir>/ray_current_cluster``, which ``ray start``
#: leaves behind: a stale one (its head gone) or a live one made every such run fail
#: with ``ValueError: When connecting to an existing cluster, object_store_memory must
#: not be provided`` (issue #29, item 13). To join a cluster, name it
#: (``execution.ray_address``, ``RAY_ADDRESS``; ``auto`` for the one ``ray start`` made).
LOCAL_INIT_DEFAULTS: dict[str, Any] = {
    "address": "local",
    "include_dashboard": False,
    "log_to_driver": False,
    "logging_level": "ERROR",
    "object_store_memory": 256 * 1024 * 1024,
    "_node_ip_address": "127.0.0.1",
}


@contextlib.contextmanager
def outside_the_working_directory() -> Any:
    """Connect from ``/``, not from the working directory.

    A Ray driver adds its working directory to every worker's ``sys.path``, ahead of
    site-packages (``ray._private.worker.connect``): a run started in a data directory
    holding an ``executors.py`` or a ``pyarrow.py`` had its workers import them and run
    their code (tests/chaos/test_security.py). ``/`` holds no module on a sane system and
    only root writes there. Relative paths are not resolved in between."""
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed: nothing to keep off the path
        yield
        return
    os.chdir("/")
    try:
        yield
    finally:
        os.chdir(cwd)


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


def chain_resources(chain: WorkerChain) -> Resources:
    """What one unit of this run needs: the largest Resources over the chain's stages.

    The chain carries its stages only as the bytes shipped to workers, so they are read
    back here, once per run, in the driver (no stage's ``setup`` runs).
    """
    adapters = cloudpickle.loads(chain.blob)
    return Resources.largest(adapter.stage.resources for adapter in adapters)


def fits_a_node(need: Resources, nodes: list[dict[str, float]]) -> bool:
    """Whether one of these nodes (Ray's per-node ``Resources``) can run a unit."""
    return any(
        node.get("CPU", 0) >= need.cpus
        and node.get("GPU", 0) >= need.gpus
        and node.get("memory", 0) >= need.memory
        for node in nodes
    )


def connected_gcs_address() -> str | None:
    """The GCS address (``host:port``) of the cluster this process is connected to."""
    if not ray.is_initialized():
        return None
    try:
        return str(ray.get_runtime_context().gcs_address)
    except Exception:  # Ray Client mode has no GCS address here
        return None


def same_address(a: str, b: str, node_ip: str | None = None) -> bool:
    """Whether two ``host:port`` addresses name the same endpoint: names resolved, and a
    loopback host read as this node's IP (``node_ip``, default Ray's), as Ray spells it
    (a cluster joined at ``127.0.0.1:port`` reports its GCS address as
    ``<node ip>:port``)."""
    def norm(addr: str) -> tuple[str, str]:
        host, _, port = addr.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        with contextlib.suppress(OSError):
            host = socket.gethostbyname(host)
        with contextlib.suppress(ValueError):  # a name that did not resolve stays as it is
            if ipaddress.ip_address(host).is_loopback:
                host = node_ip or ray.util.get_node_ip_address()
        return host, port

    return norm(a) == norm(b)


#: Ray's errors that say a unit's worker process or node was lost, not that the unit
#: failed: its worker crashed (killed, out of memory, a segfault), its node died or was
#: removed, its raylet died, its result was lost with its node. A unit that met one is
#: resubmitted (:meth:`RayExecutor.submit`). A ``RayTaskError`` (the unit's own
#: exception, even one that wraps one of these) never is.
LOST_UNIT_ERRORS: tuple[type[BaseException], ...] = (
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.NodeDiedError,
    ray.exceptions.LocalRayletDiedError,
    ray.exceptions.ObjectLostError,  # OwnerDiedError, ObjectReconstructionFailedError, ...
    ray.exceptions.RayActorError,  # ActorDiedError, ActorUnavailableError
    ray.exceptions.OutOfMemoryError,  # Ray's memory monitor killed the worker
)

#: Attempts of a unit whose worker or node is lost (``execution.max_attempts``).
DEFAULT_MAX_ATTEMPTS = 3


def is_lost_unit(exc: BaseException) -> bool:
    """Whether ``exc`` says the unit's worker or node was lost (retry it elsewhere),
    rather than that the unit raised (a deterministic failure: never retried)."""
    return isinstance(exc, LOST_UNIT_ERRORS) and not isinstance(exc, ray.exceptions.RayTaskError)


class UnitLost(RuntimeError):
    """A unit whose worker or node was lost on every one of its attempts."""


def _ray_run(chain: WorkerChain, task: Task) -> UnitResult:
    return run_unit(chain, task, worker=f"{ray.get_runtime_context().get_node_id()[:8]}")


class RayExecutor(Executor):
    """Source partitions as Ray tasks.

    ``address=None`` (and no ``RAY_ADDRESS``) starts a local Ray of its own, or uses
    the one already initialised in this process; it never joins a cluster because
    ``ray start`` left its address on this machine (:data:`LOCAL_INIT_DEFAULTS`).
    ``"host:port"``, ``"auto"`` or ``"ray://..."`` joins an existing cluster.
    ``workers`` caps the partitions in flight (default: as many as the cluster's CPUs,
    GPUs and memory hold). A Ray instance this executor
    started is kept for the next run (the phases of one step) and shut down by
    :meth:`close`, by an abandoned run, or at exit; one it found running is left alone.

    Each unit's Ray task reserves what the stages it runs declare
    (:class:`~curator.stages.Resources`): the largest ``cpus``, ``gpus`` and ``memory``
    over the stages after the source. ``cpus_per_partition``, when given, replaces the
    stages' CPU figure for every run of this executor.

    A unit whose worker process or node is lost (:func:`is_lost_unit`) is resubmitted,
    and Ray runs it where there is room: on a live node. ``max_attempts`` bounds the
    attempts of each unit (``1``: never resubmitted); a unit lost on all of them fails
    with :class:`UnitLost`. The unit's own exception is never retried. Units are
    idempotent (outputs named from the source id, written atomically; completion is
    recorded by the driver from the attempt that returned), so a retry is safe.
    ``describe()["retries"]`` counts the resubmissions since the executor was made
    (a step's executor serves all its passes).
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        workers: int | None = None,
        cpus_per_partition: float | None = None,
        init_kwargs: dict[str, Any] | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        if max_attempts < 1:
            raise CuratorError("config_error", f"max_attempts must be at least 1, got "
                                               f"{max_attempts}")
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.workers = workers
        self.cpus_per_partition = cpus_per_partition
        self.init_kwargs = init_kwargs or {}
        self.max_attempts = max_attempts
        #: units resubmitted after their worker or node was lost, since this executor
        #: was made
        self.retries = 0
        self._stopping = False  # stop() was called: lost units are no longer resubmitted
        self._owned = False
        self._need = self._with_override(Resources())  # set per run by start()
        self._chain_ref: Any = None
        self._remote: Any = None
        self._options: dict[str, Any] = {}  # the Ray options of each unit (start())
        # Units in flight only: a finished unit's ref is dropped at once, so its result
        # is not pinned in the object store for the rest of the run.
        self._refs: dict[int, Any] = {}
        self._refs_lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """Units that can run at once: ``workers``, or what the cluster holds of the
        current run's requirement (CPUs, and GPUs and memory when it asks for them)."""
        if self.workers:
            return self.workers
        total = ray.cluster_resources() if ray.is_initialized() else {"CPU": os.cpu_count() or 1}
        need = self._need
        slots = [total.get("CPU", 1) / max(need.cpus, 0.01)]
        if need.gpus:
            slots.append(total.get("GPU", 0) / need.gpus)
        if need.memory:
            slots.append(total.get("memory", 0) / need.memory)
        return max(1, int(min(slots)))

    def start(self, chain: WorkerChain) -> None:
        self._need = need = self._with_override(chain_resources(chain))
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"address": self.address, **self.init_kwargs}
            if self.address is None:
                _keep_local_ray_on_loopback()
                kwargs = {**LOCAL_INIT_DEFAULTS, **self.init_kwargs}
                if self.workers:  # room for ``workers`` units of this run at once
                    kwargs.setdefault("num_cpus", math.ceil(self.workers * need.cpus))
            with outside_the_working_directory():
                ray.init(ignore_reinit_error=True, **kwargs)
            self._owned = True
        else:
            self._refuse_another_cluster()
        self._refuse_or_warn_if_infeasible(need)
        self._chain_ref = ray.put(chain)
        options: dict[str, Any] = {"num_cpus": need.cpus, "num_gpus": need.gpus}
        if need.memory:
            options["memory"] = need.memory
        # Ray's own retries stay off: the executor resubmits a lost unit itself, so it
        # can count it, and a unit's own exception is never retried
        self._options = {"max_retries": 0, **options}
        self._remote = ray.remote(**self._options)(_ray_run)
        with self._refs_lock:
            self._stopping = False

    def _refuse_another_cluster(self) -> None:
        """Ray is already connected in this process (a session Ray, or prefect-ray's
        ``RayTaskRunner`` of the flow run): units go to *that* cluster. When this
        executor names a cluster by ``host:port``, it must be that one: Ray keeps one
        connection per process, so joining another is impossible, and running on the
        wrong cluster without a word would be worse. ``auto`` and ``ray://`` (Ray
        Client, whose server address is not the GCS address) are not compared."""
        wanted = self.address
        if not wanted or wanted == "auto" or "://" in wanted:
            return
        connected = connected_gcs_address()
        if connected is None or same_address(wanted, connected):
            return
        raise CuratorError(
            "ray_cluster_mismatch",
            f"this process is already connected to the Ray cluster at {connected} (a Ray "
            f"started earlier in the process, or the flow's RayTaskRunner), but the "
            f"executor was asked for {wanted}: Ray joins one cluster per process. Give "
            f"both the same address (RAY_ADDRESS), or leave execution.ray_address unset.")

    def _with_override(self, need: Resources) -> Resources:
        if self.cpus_per_partition is None:
            return need
        return dataclasses.replace(need, cpus=self.cpus_per_partition)

    def _refuse_or_warn_if_infeasible(self, need: Resources) -> None:
        """A unit no node can hold would wait for ever. A Ray this executor started has
        all the nodes it will ever have: refuse. A cluster it joined may grow (an
        autoscaler): warn."""
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        if fits_a_node(need, nodes):
            return
        have = ", ".join(
            f"{{CPU: {n.get('CPU', 0):g}, GPU: {n.get('GPU', 0):g}, memory: "
            f"{int(n.get('memory', 0))}}}" for n in nodes
        ) or "none"
        message = (f"each source partition needs cpus={need.cpus:g}, gpus={need.gpus:g}, "
                   f"memory={need.memory} (the largest Resources of the stages after the "
                   f"source), but no node of this Ray has that (nodes: {have})")
        if self._owned:
            raise CuratorError("stage_resources_unavailable",
                               f"{message}. Lower the stages' Resources, or join a cluster "
                               "that has such a node (RayExecutor(address=...)).")
        log.warning("%s: units will wait until such a node joins", message)

    def submit(self, task: Task) -> cf.Future[UnitResult]:
        """A future that is running from the start: Ray gives no way to tell a queued
        task from a running one, and a future that could be cancelled while its task
        goes on would let the engine stop waiting for a unit that still writes its
        outputs (after a failure, say, when the step writes its manifest).

        A unit whose worker or node is lost is resubmitted, up to ``max_attempts``
        attempts in all; the future settles with the attempt that ended otherwise."""
        future: cf.Future[UnitResult] = cf.Future()
        future.set_running_or_notify_cancel()  # cancel() is now refused
        # a resubmission runs in a thread of its own, with the caller's context (a
        # PrefectRayExecutor launches each attempt as a task run of the caller's flow run)
        context = contextvars.copy_context()
        self._attempt(task, future, context, 1)
        return future

    def _attempt(self, task: Task, future: cf.Future[UnitResult],
                 context: contextvars.Context, attempt: int) -> None:
        """Launch one attempt of ``task``; settle ``future`` when it ends, or start the
        next attempt (in another thread: never in Ray's callback thread)."""
        key = id(future)
        stopping = UnitLost(f"source partition {task.source_id}: its worker or node was "
                            "lost, and the run is stopping: not resubmitted")
        if attempt > 1 and self._stopping:
            raise stopping
        ref = self._launch(task)
        with self._refs_lock:
            late = attempt > 1 and self._stopping  # stop() came while it was launched
            if not late:
                self._refs[key] = ref
                if attempt > 1:
                    self.retries += 1
        if late:  # stop() cancels the refs it finds; this one it did not find
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
            raise stopping

        def settle(done: cf.Future[Any]) -> None:
            try:
                value = done.result()
            except BaseException as exc:  # the unit's own error, or Ray's
                if is_lost_unit(exc) and attempt < self.max_attempts and not self._stopping:
                    log.warning("source partition %s: %s: %s (attempt %d of %d); "
                                "resubmitting it", task.source_id, type(exc).__name__,
                                _first_line(exc), attempt, self.max_attempts)
                    threading.Thread(target=context.copy().run, daemon=True,
                                     name=f"ray-retry-{task.source_id}",
                                     args=(self._retry, task, future, context, attempt + 1),
                                     ).start()
                    return
                self._forget(key)
                future.set_exception(self._lost(task, exc, attempt) if is_lost_unit(exc)
                                     else exc)
                return
            self._forget(key)
            try:
                future.set_result(self._unit_result(value))
            except BaseException as exc:
                future.set_exception(exc)

        ref.future().add_done_callback(settle)

    def _retry(self, task: Task, future: cf.Future[UnitResult],
               context: contextvars.Context, attempt: int) -> None:
        try:
            self._attempt(task, future, context, attempt)
        except BaseException as exc:  # could not launch it (stopping, Ray gone)
            self._forget(id(future))
            future.set_exception(exc)

    def _lost(self, task: Task, exc: BaseException, attempts: int) -> UnitLost:
        """The error of a unit lost on its last attempt: what happened, how often."""
        times = f"each of its {attempts} attempts" if attempts > 1 else "its one attempt"
        why = ("" if attempts >= self.max_attempts
               else ", and the run is stopping: not resubmitted")
        lost = UnitLost(
            f"source partition {task.source_id}: its Ray worker or node was lost on {times} "
            f"(execution.max_attempts={self.max_attempts}){why}; the last: "
            f"{type(exc).__name__}: {_first_line(exc)}")
        lost.__cause__ = exc
        return lost

    def _launch(self, task: Task) -> Any:
        """Start one unit on Ray; its ObjectRef. (A subclass may start it otherwise:
        ``flows.ray_runner`` makes it a Prefect task run of prefect-ray's runner.)"""
        return self._remote.remote(self._chain_ref, task)

    def _unit_result(self, value: Any) -> UnitResult:
        """The unit's result from what its ObjectRef holds (see :meth:`_launch`)."""
        return value

    def _forget(self, key: int) -> None:
        with self._refs_lock:
            self._refs.pop(key, None)

    def stop(self, abandon: bool = False) -> None:
        with self._refs_lock:
            refs, self._refs = list(self._refs.values()), {}
            self._stopping = True
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
        return {"executor": self.name, "address": self.address, "workers": self.capacity,
                "retries": self.retries}


def _first_line(exc: BaseException) -> str:
    """An exception's message, its first line only (Ray's run on for paragraphs)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
