"""What every step flow does first: its config from a YAML path or a mapping, and its executor."""

from __future__ import annotations

from typing import Any, TypeVar

from curator.config import StepConfig, _deep_merge, load_config, parse_overrides
from executors import make_executor

C = TypeVar("C", bound=StepConfig)


def step_config(model: type[C], config: str | dict[str, Any], overrides: list[str] | None) -> C:
    """``config`` is a YAML path or a mapping; ``overrides`` are ``key=value`` (``--set``)."""
    if isinstance(config, str):
        return load_config(model, config, overrides)
    # dotted overrides merge into nested blocks (as for a YAML file), not replace them
    return load_config(model, None, _deep_merge(config, parse_overrides(overrides)))


def step_executor(cfg: StepConfig) -> Any:
    """The configured executor, each partition also a Prefect task run."""
    from flows.engine import PrefectTaskExecutor

    ex = cfg.execution
    return PrefectTaskExecutor(make_executor(ex.executor, ex.workers, ex.ray_address,
                                             ex.max_attempts))
