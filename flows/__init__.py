"""Prefect flows and the curate command line (wiring only, no domain logic).

``from flows import ingest_flow, profile_flow, filter_flow, curate_flow``: every
registered step's flow (``flows.steps``) and the whole flow, called like functions.
Loaded on first use, so ``curate --help`` does not import Prefect.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("PrefectTaskExecutor", "run_pipeline_flow"):
        from flows import engine

        return getattr(engine, name)
    if name == "curate_flow":
        from flows.pipeline_flow import curate_flow

        return curate_flow
    from flows.steps import STEP_FLOWS

    if name == "STEP_FLOWS":
        return STEP_FLOWS
    if name.endswith("_flow") and name.removesuffix("_flow") in STEP_FLOWS:
        return STEP_FLOWS[name.removesuffix("_flow")]
    raise AttributeError(f"module 'flows' has no attribute {name!r}")
