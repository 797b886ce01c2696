"""Every step's flow on prefect-ray's ``RayTaskRunner``: each source partition a Prefect
task run that executes as a Ray task on the runner's cluster.

``flows.ray_runner:<key>_flow`` (``ingest_flow``, ``filter_flow``, ...) is the step's
flow, named ``curate-<key>`` like ``flows.steps:<key>_flow``, with
:class:`CurateRayTaskRunner` as its task runner. When a flow run starts, the runner
connects this process to a Ray cluster: ``RAY_ADDRESS`` (``host:6379``, ``auto``,
``ray://host:10001``) when set, else a small local Ray on 127.0.0.1 that it shuts down
at the end. The step's executor is :class:`PrefectRayExecutor`, the project's
``RayExecutor`` joining that connection (Ray keeps one per process, so it cannot start
another cluster; a config whose ``execution.ray_address`` names another ``host:port``
is refused with ``ray_cluster_mismatch``). Each unit it starts is the Prefect task
:func:`ray_partition`, submitted through the runner, so Ray schedules it, and the task
run's state in the UI is reported by the Ray worker that did the work. A table
artifact ``<key>-ray-nodes`` says which nodes of which cluster ran the partitions.

The config must name ``execution.executor: ray`` (``overrides=["execution.executor=ray"]``):
any other executor is refused (``task_runner_mismatch``), not silently replaced.
Another ``RayTaskRunner`` works too:
``ingest_flow.with_options(task_runner=RayTaskRunner(address="ray://head:10001"))``.

``flows.ray_runner:curate_flow`` is ``curate flow`` (named ``curate-flow``, as
``flows.pipeline_flow:curate_flow``) on the same runner: its runner connects the flow
run's process to the cluster once, and each step runs as a subflow of this module, whose
runner finds that Ray initialised and uses it (it never starts or shuts down another),
so every step's executor joins the one cluster. ``overrides``
(``["execution.executor=ray"]`` in the deployment) set execution keys of every step;
a step whose executor is still not ray is refused before the first step runs.
See ``deployments/README.md`` (Ray through prefect-ray) for what this costs and what
cannot work.
"""

from __future__ import annotations

import asyncio
import collections
import os
import threading
from collections.abc import Callable
from typing import Any, Self

import ray
from prefect import Flow, flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.states import State
from prefect.utilities.asyncutils import run_coro_as_sync
from prefect_ray.context import remote_options
from prefect_ray.task_runners import RayTaskRunner

from curator.config import _deep_merge, parse_overrides
from curator.errors import CuratorError
from curator.execution import UnitResult, WorkerChain, run_unit
from curator.flow.plan import FlowPlan, StepPlan
from curator.flow.run import run_flow, start_flow, write_plan
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec
from curator.tasks import Task
from executors.ray import (
    LOCAL_INIT_DEFAULTS,
    RayExecutor,
    _keep_local_ray_on_loopback,
    outside_the_working_directory,
)
from flows.credentials import storage_environment
from flows.pipeline_flow import _PrefectHooks
from flows.step_config import step_config
from flows.steps import make_step_flow


class CurateRayTaskRunner(RayTaskRunner):
    """prefect-ray's ``RayTaskRunner`` (0.6.0), with two gaps of it closed.

    - Without an address (argument or ``RAY_ADDRESS``) the stock runner calls
      ``ray.init()`` with Ray's defaults: ~1.8 GB, a 7.5 GB object store, listening on
      every interface. This one starts the project's small local Ray on 127.0.0.1
      (``executors.ray.LOCAL_INIT_DEFAULTS``), as ``RayExecutor`` does.
    - ``address="auto"``: the stock runner treats it as no address and calls
      ``ray.init()``, which starts a new local Ray when it finds none; this one calls
      ``ray.init(address="auto")``, which joins the running cluster or fails.

    A Ray already initialised in this process is used as it is, by both (the stock
    behaviour), and left running at the end.
    """

    def __enter__(self) -> Self:
        # connect from / (executors.ray.outside_the_working_directory): the driver's
        # working directory would otherwise go on every Ray worker's sys.path
        with outside_the_working_directory():
            return self._enter()

    def _enter(self) -> Self:
        if ray.is_initialized():
            return super().__enter__()
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        if address is None:
            _keep_local_ray_on_loopback()
            self.init_kwargs = {**LOCAL_INIT_DEFAULTS, **self.init_kwargs}
            return super().__enter__()
        if address == "auto":
            ray.init(address="auto", **self.init_kwargs)
            super().__enter__()  # finds Ray initialised
            self._owns_ray = True  # ...but this runner connected it: disconnect at exit
            return self
        return super().__enter__()


@task(cache_policy=NO_CACHE, persist_result=False, log_prints=False, retries=0)
def ray_partition(chain: WorkerChain, unit: Task) -> dict[str, Any]:
    """One source partition through the step's stages, in a Ray worker.

    ``chain`` arrives as an ObjectRef put once per pass (prefect-ray resolves
    ObjectRefs among a task's parameters before the task starts)."""
    context = ray.get_runtime_context()
    node_id = context.get_node_id()
    result = run_unit(chain, unit, worker=node_id[:8])
    return {"unit": result, "node_id": node_id, "gcs_address": str(context.gcs_address),
            "node_ip": ray.util.get_node_ip_address()}


class PrefectRayExecutor(RayExecutor):
    """``RayExecutor`` whose units are Prefect task runs on the flow's ``RayTaskRunner``.

    It joins the cluster the runner connected this process to (it never starts a Ray:
    without a ``RayTaskRunner`` in the flow run it refuses, ``ray_task_runner_required``);
    each unit is :func:`ray_partition` submitted through the runner, with the Ray options
    ``RayExecutor`` computes from the stages' Resources (``remote_options``).
    """

    def __init__(self, step: str, address: str | None = None, workers: int | None = None,
                 cpus_per_partition: float | None = None, max_attempts: int = 3) -> None:
        super().__init__(address=address, workers=workers,
                         cpus_per_partition=cpus_per_partition, max_attempts=max_attempts)
        self.step = step
        self._prefix = "partition"
        self._placement: collections.Counter[tuple[str, str, str]] = collections.Counter()
        self._placement_lock = threading.Lock()
        self._runner_address: str | None = None

    def start(self, chain: WorkerChain) -> None:
        context = FlowRunContext.get()
        runner = context.task_runner if context else None
        if not isinstance(runner, RayTaskRunner) or not ray.is_initialized():
            raise CuratorError(
                "ray_task_runner_required",
                f"PrefectRayExecutor runs partitions through prefect-ray's RayTaskRunner, "
                f"but this flow run's task runner is {type(runner).__name__}: use a flow "
                f"of flows.ray_runner, or with_options(task_runner=RayTaskRunner(...)).")
        self._runner_address = runner.address
        self._prefix = chain.name or "partition"
        super().start(chain)  # joins the runner's Ray (never owns it)

    def _launch(self, task: Task) -> Any:
        name = f"{self._prefix}-{task.source_id or '?'}"
        with remote_options(**self._options):
            future = ray_partition.with_options(task_run_name=name).submit(
                self._chain_ref, task)
        return future.wrapped_future

    def _unit_result(self, value: Any) -> UnitResult:
        if isinstance(value, State):  # the task run's final state (prefect-ray)
            value = value.result(raise_on_failure=True)
            if asyncio.iscoroutine(value):
                value = run_coro_as_sync(value)
        with self._placement_lock:
            self._placement[(value["node_id"], value["node_ip"], value["gcs_address"])] += 1
        return value["unit"]

    def close(self) -> None:
        try:
            self.publish_placement()
        finally:
            super().close()

    def publish_placement(self) -> None:
        """The ``<step>-ray-nodes`` table: which nodes, of which cluster, ran units."""
        with self._placement_lock:
            placement, self._placement = self._placement, collections.Counter()
        if not placement:
            return
        rows = [{"node_id": node, "node_ip": ip, "gcs_address": gcs, "partition_runs": n}
                for (node, ip, gcs), n in sorted(placement.items())]
        runner = self._runner_address or "RAY_ADDRESS, or a local Ray"
        create_table_artifact(
            table=rows, key=f"{self.step}-ray-nodes",
            description=(f"curate/{self.step}: partition task runs per Ray node (all "
                         f"passes); the RayTaskRunner's address: {runner}"))

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "task_runner": "ray"}


def ray_step_executor(spec: StepSpec, cfg: Any) -> PrefectRayExecutor:
    """The executor of a ``flows.ray_runner`` flow: the config must say ``ray``."""
    ex = cfg.execution
    if ex.executor != "ray":
        raise CuratorError(
            "task_runner_mismatch",
            f"curate-{spec.key} on prefect-ray's RayTaskRunner runs partitions on Ray, but "
            f"the config says execution.executor={ex.executor!r}: set execution.executor=ray "
            f"(overrides=['execution.executor=ray']), or use flows.steps:{spec.key}_flow.")
    return PrefectRayExecutor(spec.key, address=ex.ray_address, workers=ex.workers,
                              max_attempts=ex.max_attempts)


def make_ray_step_flow(spec: StepSpec,
                       task_runner: RayTaskRunner | None = None) -> Flow[..., dict[str, Any]]:
    """The step's flow on ``task_runner`` (default: :class:`CurateRayTaskRunner`)."""
    fl = make_step_flow(spec, task_runner=task_runner or CurateRayTaskRunner(),
                        executor=ray_step_executor)
    # this module's: `flow.to_deployment` (serve.py) derives the entrypoint from it, which
    # would otherwise be flows.steps:<key>_flow, the thread-pool flow
    fl.__module__ = fl.fn.__module__ = __name__
    return fl


RAY_STEP_FLOWS: dict[str, Callable[..., dict[str, Any]]] = {
    spec.key: make_ray_step_flow(spec) for spec in STEPS}
globals().update({f"{key}_flow": fl for key, fl in RAY_STEP_FLOWS.items()})


# --- the whole flow (curate flow) on the RayTaskRunner --------------------------------


def apply_execution_overrides(fplan: FlowPlan, overrides: list[str] | None) -> None:
    """``overrides`` (``execution.<key>=<value>``, as ``--set``) into every step's config.

    Only ``execution`` keys: they are outside the step-config hash that decides whether
    a finished step is skipped, so they change where a step runs, never what it writes;
    any other key belongs in the flow config (``config_error``)."""
    parsed = parse_overrides(overrides)
    other = sorted(set(parsed) - {"execution"})
    if other:
        raise CuratorError(
            "config_error",
            f"curate-flow on the RayTaskRunner takes execution.* overrides only, got "
            f"{other}: set other keys in the flow config (its steps.<step> blocks)")
    if not parsed:
        return
    for step in fplan.steps:
        step.config = _deep_merge(step.config, parsed)


def refuse_other_executors(fplan: FlowPlan) -> None:
    """Every enabled step must run on Ray (``task_runner_mismatch``), checked for all
    steps before the first runs, with each step's own config model (so
    ``CURATE_EXECUTION__EXECUTOR`` counts, as it does for the step)."""
    wrong = []
    for step in fplan.steps:
        if step.enabled:
            executor = step_config(step.spec.config, step.config, None).execution.executor
            if executor != "ray":
                wrong.append(f"{step.key}: {executor}")
    if wrong:
        raise CuratorError(
            "task_runner_mismatch",
            f"curate-flow on prefect-ray's RayTaskRunner runs every step on Ray, but the "
            f"flow config says execution.executor is not ray for {', '.join(wrong)}: set "
            f"execution.executor: ray (overrides=['execution.executor=ray']), or use "
            f"flows.pipeline_flow:curate_flow.")


class _RayHooks(_PrefectHooks):
    """Each step as a subflow of ``flows.ray_runner``: its runner finds the Ray this
    flow's runner connected and uses it; its executor joins that connection."""

    def run_step(self, step: StepPlan) -> dict[str, Any]:
        return RAY_STEP_FLOWS[step.key](step.config)


@flow(name="curate-flow", task_runner=CurateRayTaskRunner(), validate_parameters=False,
      persist_result=False)
def curate_flow(config: str | dict[str, Any], plan: bool = False,
                overrides: list[str] | None = None,
                storage_credentials: str | None = None) -> dict[str, Any]:
    """``curate flow`` on prefect-ray's RayTaskRunner: the enabled steps in order, each a
    subflow on the cluster this run's runner connected (``RAY_ADDRESS``, else a small
    local Ray). ``overrides``: ``execution.<key>=<value>`` for every step (the
    deployment's ``execution.executor=ray``); any step whose executor is not ray is
    refused before the first step runs (``task_runner_mismatch``).
    ``storage_credentials``: a Secret block's object-store variables for this process
    (flows/credentials.py); the Ray nodes keep their own environment (docs/cluster.md)."""
    logger = get_run_logger()
    with storage_environment(storage_credentials):
        fplan = start_flow(config, plan, logger)
        apply_execution_overrides(fplan, overrides)
        if overrides:  # the plan on disk says what runs
            write_plan(fplan, dry_run=plan)  # a URL root's object too
        if plan:
            return fplan.to_json(dry_run=True)
        refuse_other_executors(fplan)
        return run_flow(fplan, _RayHooks(), logger)
