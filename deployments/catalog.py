"""The deployments of the curation flows, derived from the step registry: one list that
``deployments/generate.py`` writes as ``deployments/prefect.yaml`` and
``deployments/serve.py`` serves.

Every registered step gets a ``demo`` deployment of ``flows.steps:<key>_flow`` whose
``config`` is ``examples/demo/<key>.yaml`` when that file exists; a step without one
gets its deployment with no ``config`` (a run must be given one: Prefect refuses a run
that misses a required parameter). The variants below (the nightly ingest, the filter
on Ray, ingest and the whole flow on prefect-ray's runner, the whole flow) are
hand-written: they are examples of a schedule and of the runners, not something every
step needs. This module imports neither prefect nor any flow: entrypoints are strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO_DIR = "examples/demo"
FLOW = "curate-flow"  # the whole flow's name (flows.pipeline_flow:curate_flow)
FLOW_CONFIG = f"{DEMO_DIR}/flow-measure.yaml"
NIGHTLY_CRON = "0 2 * * *"
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
RAY_OVERRIDES = ["execution.executor=ray"]


@dataclass(frozen=True)
class Deployment:
    """One deployment of ``prefect.yaml``: ``<flow_name>/<name>``."""

    flow_name: str  # curate-ingest, curate-flow
    name: str  # demo, nightly, demo-ray, ray-cluster
    entrypoint: str  # a module path: flows.steps:ingest_flow
    description: str
    tags: tuple[str, ...]
    parameters: dict[str, Any]
    comment: str = ""  # the comment above it in prefect.yaml
    cron: str | None = None  # a UTC cron schedule, deployed inactive
    one_at_a_time: bool = False  # concurrency limit 1; a late run waits (ENQUEUE)
    env: dict[str, str] | None = None  # job_variables.env; None: the pool's defaults
    served: bool = False  # deployments/serve.py serves it (the demo ones and schedules)

    @property
    def full_name(self) -> str:
        return f"{self.flow_name}/{self.name}"


def demo_config(flow_name: str, repo: Path = REPO) -> str | None:
    """The demo config a deployment of ``flow_name`` runs with, relative to the checkout
    (``examples/demo/<key>.yaml``, the whole flow's ``flow-measure.yaml``); ``None`` when
    the step has no demo config."""
    if flow_name == FLOW:
        return FLOW_CONFIG
    path = f"{DEMO_DIR}/{flow_name.removeprefix('curate-')}.yaml"
    return path if (repo / path).is_file() else None


def _step_parameters(flow_name: str, repo: Path, overrides: list[str]) -> dict[str, Any]:
    config = demo_config(flow_name, repo)
    return {**({"config": config} if config else {}), "overrides": list(overrides)}


def _step_demo(spec: Any, repo: Path, first: bool) -> Deployment:
    comment = ("--- one deployment per step: `config` is a step config (a YAML path, "
               "relative to the\ncheckout, or absolute); `overrides` are `key=value` "
               "strings as for `--set`.") if first else ""
    return Deployment(
        flow_name=spec.flow_name, name="demo", entrypoint=f"flows.steps:{spec.key}_flow",
        description=f"{spec.help.removesuffix('.')} (curate {spec.command_name}).",
        tags=("curate", spec.key), parameters=_step_parameters(spec.flow_name, repo, []),
        comment=comment, served=True)


def _variants(keys: set[str], repo: Path) -> list[Deployment]:
    """The hand-written deployments beyond one per step, of the steps registered."""
    out: list[Deployment] = []
    if "ingest" in keys:
        out.append(Deployment(
            flow_name="curate-ingest", name="nightly", entrypoint="flows.steps:ingest_flow",
            description="Nightly incremental ingest of newly arrived raw files "
                        "(checkpointed).",
            tags=("curate", "ingest", "scheduled"),
            parameters=_step_parameters("curate-ingest", repo, []),
            comment="""\
Nightly ingest of newly arrived raw files. The config's `execution.checkpoint_path`
makes it incremental: raw files already parsed are skipped (their partitions are
recorded complete in the checkpoint), new ones are parsed, then duplicates and shards
are recomputed over the whole corpus. One run at a time (a second would share the
checkpoint), so a late run waits for the previous one.

The schedule is deployed INACTIVE: deploying the demo must not start a nightly job
against demo paths on someone's machine. Point `config` at your corpus's ingest
config, then set `active: true` here and redeploy, or switch it on without
redeploying:
  prefect deployment schedule ls curate-ingest/nightly
  prefect deployment schedule resume curate-ingest/nightly <SCHEDULE_ID>""",
            cron=NIGHTLY_CRON, one_at_a_time=True, served=True))
    if "filter" in keys:
        out.append(Deployment(
            flow_name="curate-filter", name="demo-ray", entrypoint="flows.steps:filter_flow",
            description="curate filter on the Ray executor (local Ray, or a cluster by "
                        "address).",
            tags=("curate", "filter", "ray"),
            parameters=_step_parameters("curate-filter", repo, RAY_OVERRIDES),
            comment="""\
The filter on the Ray executor. Precedence in a step config, highest first:
`overrides`, the YAML file, `CURATE_*` environment variables, defaults. The env
below makes Ray the default for configs that name no `execution.executor`; the
override makes it win over a config that does (the demo config says `local`).
Without an address a local Ray is started on 127.0.0.1 for the run; to use a
cluster, set `CURATE_EXECUTION__RAY_ADDRESS` (`auto`, or `ray://head:10001`) in the
worker's environment or add it to `env` below.""",
            env={"CURATE_EXECUTION__EXECUTOR": "ray", **RAY_ENV}))
    if "ingest" in keys:
        out.append(Deployment(
            flow_name="curate-ingest", name="ray-cluster",
            entrypoint="flows.ray_runner:ingest_flow",
            description="curate ingest on prefect-ray's RayTaskRunner (a Ray cluster by "
                        "RAY_ADDRESS, or a local Ray); one Prefect task run per partition, "
                        "run by Ray.",
            tags=("curate", "ingest", "ray", "prefect-ray"),
            parameters=_step_parameters("curate-ingest", repo, RAY_OVERRIDES),
            comment="""\
Ingest on prefect-ray's RayTaskRunner (flows.ray_runner): each source partition is a
Prefect task run executed as a Ray task on the runner's cluster, and the step's
RayExecutor joins that same connection (it cannot start a second Ray). The cluster is
`RAY_ADDRESS` in the flow run's environment (`host:6379` of a cluster this machine
can reach, `auto` for one started here with `ray start`, or `ray://head:10001`): set
it in the worker's environment or per run (`--job-variable env='{"RAY_ADDRESS":
"head:6379"}'`; a run's `env` replaces this one, so repeat the two RAY_ settings).
Without it the runner starts a small local Ray on 127.0.0.1 for the run. The
override is required: a ray_runner flow refuses a config whose executor is not ray
(task_runner_mismatch). Any other step: copy this with `flows.ray_runner:<step>_flow`.""",
            env=dict(RAY_ENV)))
    out.append(Deployment(
        flow_name=FLOW, name="demo", entrypoint="flows.pipeline_flow:curate_flow",
        description="The whole curation flow (curate flow); plan=true writes the plan only.",
        tags=("curate", "flow"), parameters={"config": FLOW_CONFIG, "plan": False},
        comment="""\
--- the whole flow (ingest, profile, approve, filter): `config` is a flow config.
`make demo` is two runs of it: flow-measure.yaml, then flow-apply.yaml
(`prefect deployment run curate-flow/demo --param config=examples/demo/flow-apply.yaml`).""",
        served=True))
    out.append(Deployment(
        flow_name=FLOW, name="ray-cluster", entrypoint="flows.ray_runner:curate_flow",
        description="The whole curation flow on prefect-ray's RayTaskRunner (a Ray cluster "
                    "by RAY_ADDRESS, or a local Ray); every step joins that cluster.",
        tags=("curate", "flow", "ray", "prefect-ray"),
        parameters={"config": FLOW_CONFIG, "plan": False, "overrides": RAY_OVERRIDES},
        comment="""\
The whole flow on prefect-ray's RayTaskRunner (flows.ray_runner:curate_flow): the
runner connects the flow run to the cluster at RAY_ADDRESS (as ingest's ray-cluster
above) once; every step is a subflow whose runner and executor join that same
connection, each partition a Prefect task run executed as a Ray task. `overrides`
(execution.* keys only) make every step's executor ray; a step left on another is
refused before the first step runs (task_runner_mismatch).
A cluster's nodes share nothing but object storage: give the flow config an
`output_root: s3://bucket/run` (docs/flow.md). The store's credentials are never a
parameter nor in this file: every Ray node and the worker's machine hold them in
their own environment (AWS_* / FSSPEC_S3_*, or an instance role), or the run names a
Prefect Secret block, `--param storage_credentials=BLOCK`, whose variables the flow
run's own process takes (not the Ray nodes'): docs/cluster.md.""",
        env=dict(RAY_ENV)))
    return out


def deployments(steps: Iterable[Any] | None = None, repo: Path = REPO) -> list[Deployment]:
    """Every deployment, in ``prefect.yaml``'s order: each registered step's ``demo``
    (followed by its scheduled variants), then the runner variants, then the whole flow.
    ``steps``: the registry's specs (default :data:`curator.steps.registry.STEPS`)."""
    if steps is None:
        from curator.steps.registry import STEPS

        steps = STEPS
    specs = list(steps)
    variants = _variants({spec.key for spec in specs}, repo)
    # a step's schedule sits beside the demo deployment it repeats
    scheduled = [v for v in variants if v.cron and v.flow_name != FLOW]
    out: list[Deployment] = []
    for i, spec in enumerate(specs):
        out.append(_step_demo(spec, repo, first=i == 0))
        out += [v for v in scheduled if v.flow_name == spec.flow_name]
    return out + [v for v in variants if v not in scheduled]
