"""Serve the curation flows without a work pool or worker (``flow.serve`` / ``prefect.serve``).

    PREFECT_API_URL=http://127.0.0.1:4200/api python deployments/serve.py
    PREFECT_API_URL=... python deployments/serve.py --only curate-ingest --nightly

This process is the runner: it registers the deployments below (named ``serve`` so they
sit next to, and never replace, the worker-based ones of ``prefect.yaml``), polls the
API and runs each triggered or scheduled run in a subprocess of its own, in this
checkout. Stop it with Ctrl-C (or SIGTERM, twice if a run is in flight). Trigger a run:

    prefect deployment run curate-ingest/serve --watch
    prefect deployment run curate-filter/serve -p config=examples/demo/filter.yaml --watch

Parameters and the nightly schedule are those of ``prefect.yaml``; the nightly ingest
is served paused unless ``--nightly`` is given. ``CURATE_EXECUTION__EXECUTOR=ray`` (and
``CURATE_EXECUTION__RAY_ADDRESS``) in this process's environment make Ray the executor
for configs that name none: runs inherit the runner's environment. ``--ray-runner``
serves the flows on prefect-ray's ``RayTaskRunner`` instead (``flows.ray_runner``,
deployments named ``serve-ray``, the cluster at ``RAY_ADDRESS``; ``--only curate-flow``
for the whole flow; see deployments/README.md, "Ray through prefect-ray").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NAME = "serve"
NIGHTLY_CRON = "0 2 * * *"  # as prefect.yaml's curate-ingest/nightly


def _flows(ray_runner: bool = False) -> dict[str, Any]:
    """``curate-flow`` and every registered step's flow, by flow name (with
    ``ray_runner``: those of ``flows.ray_runner``, on prefect-ray's RayTaskRunner)."""
    if ray_runner:
        from flows.ray_runner import RAY_STEP_FLOWS
        from flows.ray_runner import curate_flow as ray_curate_flow

        return {"curate-flow": ray_curate_flow,
                **{f"curate-{key}": fl for key, fl in RAY_STEP_FLOWS.items()}}
    from flows.pipeline_flow import curate_flow
    from flows.steps import STEP_FLOWS

    return {"curate-flow": curate_flow,
            **{f"curate-{key}": fl for key, fl in STEP_FLOWS.items()}}


def build_deployments(only: list[str] | None = None, nightly: bool = False,
                      ray_runner: bool = False) -> list[Any]:
    """The runner deployments: one per step flow (``curate-flow`` only when named in
    ``only``), plus the nightly ingest (paused unless ``nightly``). With ``ray_runner``:
    the flows of ``flows.ray_runner`` on prefect-ray's ``RayTaskRunner`` (the step flows,
    and ``curate-flow`` when named in ``only``), named ``serve-ray``, their ``overrides``
    making the executor ray (a ray_runner flow refuses another)."""
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    out = []
    for flow_name, fl in _flows(ray_runner).items():
        if (only and flow_name not in only) or (not only and flow_name == "curate-flow"):
            continue
        params: dict[str, Any] = {"config": demo_config(flow_name)}
        if flow_name == "curate-flow":
            params["plan"] = False
        if flow_name != "curate-flow" or ray_runner:
            params["overrides"] = ["execution.executor=ray"] if ray_runner else []
        if ray_runner:
            out.append(fl.to_deployment(name=f"{NAME}-ray", parameters=params,
                                        tags=["curate", "served", "ray", "prefect-ray"],
                                        entrypoint_type=EntrypointType.MODULE_PATH))
            continue
        # a module entrypoint (`flows.steps:ingest_flow`): each run imports it, whatever
        # its working directory
        common: dict[str, Any] = {"parameters": params, "tags": ["curate", "served"],
                                  "entrypoint_type": EntrypointType.MODULE_PATH}
        out.append(fl.to_deployment(name=NAME, **common))
        if flow_name == "curate-ingest":
            out.append(fl.to_deployment(
                name=f"nightly-{NAME}", **common,
                schedules=[Cron(NIGHTLY_CRON, timezone="UTC", active=nightly)],
                description="Nightly incremental ingest (the checkpoint skips parsed files)."))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=sorted(_flow_names()),
                        help="serve this flow (repeatable); default: the three step flows")
    parser.add_argument("--nightly", action="store_true",
                        help="serve the nightly ingest schedule active (default: paused)")
    parser.add_argument("--ray-runner", action="store_true",
                        help="the flows on prefect-ray's RayTaskRunner (flows.ray_runner; "
                             "the cluster at RAY_ADDRESS), named serve-ray")
    parser.add_argument("--limit", type=int, default=1,
                        help="flow runs at once (default 1: the steps use all cores)")
    args = parser.parse_args(argv)
    os.chdir(REPO)  # the configs' relative paths are relative to the checkout

    from prefect import serve

    serve(*build_deployments(args.only, args.nightly, args.ray_runner), limit=args.limit)


def demo_config(flow_name: str) -> str:
    """The demo config a deployment of ``flow_name`` runs with (``examples/demo/``)."""
    if flow_name == "curate-flow":
        return "examples/demo/flow-measure.yaml"
    return f"examples/demo/{flow_name.removeprefix('curate-')}.yaml"


def _flow_names() -> tuple[str, ...]:
    from curator.steps.registry import STEPS

    return ("curate-flow", *(spec.flow_name for spec in STEPS))


if __name__ == "__main__":
    if str(REPO) not in sys.path:  # `python deployments/serve.py` from an uninstalled clone
        sys.path.insert(0, str(REPO))
    main()
