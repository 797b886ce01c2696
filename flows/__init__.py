"""Prefect flows and the curate command line (wiring only, no domain logic)."""

from flows.engine import PrefectTaskExecutor, run_pipeline_flow

__all__ = ["PrefectTaskExecutor", "run_pipeline_flow"]
