"""Prefect flows and the curate command line (wiring only, no domain logic).

``from flows import ingest_flow, profile_flow, filter_flow, curate_flow``: every
registered step's flow (``flows.steps``) and the whole flow, called like functions.
"""

from flows.engine import PrefectTaskExecutor, run_pipeline_flow
from flows.pipeline_flow import curate_flow
from flows.steps import STEP_FLOWS

globals().update({f"{key}_flow": fl for key, fl in STEP_FLOWS.items()})

__all__ = ["STEP_FLOWS", "PrefectTaskExecutor", "curate_flow", "run_pipeline_flow",
           *(f"{key}_flow" for key in STEP_FLOWS)]
