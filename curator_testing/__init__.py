"""Helpers for tests and benchmarks, not the domain: quiet, hermetic local Prefect and Ray;
the generic JSONL stages of the engine's tests in ``curator_testing.jsonl`` (imported
from there, so that importing this package stays light).

``curator_testing.environment`` holds only variable names and values, so importing it
imports neither prefect nor ray. ``curator`` never imports this package (an
import-linter contract in ``pyproject.toml``).
"""

from curator_testing.environment import hermetic_env, small_ray_kwargs

__all__ = ["hermetic_env", "small_ray_kwargs"]
