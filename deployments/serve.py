"""Serve the curation flows without a work pool or worker (``flow.serve`` / ``prefect.serve``).

    PREFECT_API_URL=http://127.0.0.1:4200/api python deployments/serve.py
    PREFECT_API_URL=... python deployments/serve.py --only curate-ingest --nightly

This process is the runner: it registers the deployments below (named ``serve`` so they
sit next to, and never replace, the worker-based ones of ``prefect.yaml``), polls the
API and runs each triggered or scheduled run in a subprocess of its own, in this
checkout. Stop it with Ctrl-C (or SIGTERM, twice if a run is in flight). Trigger a run:

    prefect deployment run curate-ingest/serve --watch
    prefect deployment run curate-filter/serve -p config=examples/demo/filter.yaml --watch

Parameters and the nightly schedule are those of ``prefect.yaml``: both come from
``deployments/catalog.py`` (the step registry's deployments); the nightly ingest is served
paused unless ``--nightly`` is given. ``CURATE_EXECUTION__EXECUTOR=ray`` (and
``CURATE_EXECUTION__RAY_ADDRESS``) in this process's environment make Ray the executor
for configs that name none: runs inherit the runner's environment. ``--ray-runner``
serves the flows on prefect-ray's ``RayTaskRunner`` instead (``flows.ray_runner``,
deployments named ``serve-ray``, the cluster at ``RAY_ADDRESS``; ``--only curate-flow``
for the whole flow; see deployments/README.md, "Ray through prefect-ray").
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NAME = "serve"


def _load(entrypoint: str) -> Any:
    """The flow at a module entrypoint (``flows.steps:ingest_flow``)."""
    module, _, attr = entrypoint.partition(":")
    return getattr(importlib.import_module(module), attr)


def _served() -> list[Any]:
    """The catalog's deployments this serves: each step's and the whole flow's ``demo``
    and the scheduled ones (deployments/catalog.py, as ``prefect.yaml``)."""
    from deployments.catalog import deployments

    return [d for d in deployments() if d.served]


def build_deployments(only: list[str] | None = None, nightly: bool = False,
                      ray_runner: bool = False) -> list[Any]:
    """The runner deployments: one per step flow (``curate-flow`` only when named in
    ``only``), plus the nightly ingest (paused unless ``nightly``). With ``ray_runner``:
    the flows of ``flows.ray_runner`` on prefect-ray's ``RayTaskRunner`` (the step flows,
    and ``curate-flow`` when named in ``only``), named ``serve-ray``, their ``overrides``
    making the executor ray (a ray_runner flow refuses another)."""
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    from deployments.catalog import FLOW, RAY_OVERRIDES

    out = []
    for dep in _served():
        if (only and dep.flow_name not in only) or (not only and dep.flow_name == FLOW):
            continue
        if ray_runner:
            if dep.cron:
                continue
            attr = dep.entrypoint.partition(":")[2]
            out.append(_load(f"flows.ray_runner:{attr}").to_deployment(
                name=f"{NAME}-ray", parameters={**dep.parameters, "overrides": list(RAY_OVERRIDES)},
                tags=["curate", "served", "ray", "prefect-ray"],
                entrypoint_type=EntrypointType.MODULE_PATH))
            continue
        # a module entrypoint (`flows.steps:ingest_flow`): each run imports it, whatever
        # its working directory
        common: dict[str, Any] = {"parameters": dict(dep.parameters),
                                  "tags": ["curate", "served"],
                                  "entrypoint_type": EntrypointType.MODULE_PATH}
        if dep.cron:
            common.update(schedules=[Cron(dep.cron, timezone="UTC", active=nightly)],
                          description=dep.description)
        out.append(_load(dep.entrypoint).to_deployment(
            name=NAME if dep.name == "demo" else f"{dep.name}-{NAME}", **common))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=_flow_names(),
                        help="serve this flow (repeatable); default: every step's flow")
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


def _flow_names() -> list[str]:
    return sorted({dep.flow_name for dep in _served()})


if __name__ == "__main__":
    if str(REPO) not in sys.path:  # `python deployments/serve.py` from an uninstalled clone
        sys.path.insert(0, str(REPO))
    main()
