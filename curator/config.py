"""Configuration: pydantic-settings models loaded from YAML, ``--set`` and ``CURATE_*``.

Precedence, highest first: ``--set key=value`` overrides, the YAML file,
environment variables (``CURATE_EXECUTION__EXECUTOR=ray``,
``CURATE_EXECUTION__WORKERS=8``, ...), then the defaults. Environment variables
are the deployment-wide defaults; nested keys use ``__``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from curator.errors import CuratorError


class ExecutionConfig(BaseModel):
    """Where a step runs; shared by every step."""

    model_config = ConfigDict(extra="forbid")

    executor: Literal["local", "ray", "inline"] = "local"
    workers: int | None = None
    ray_address: str | None = None
    checkpoint_path: str | None = None


class TokenizerRef(BaseModel):
    """A tokenizer by name and revision (``models.tokenizer``, ``heuristic_filters.tokenizer``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    revision: str


class StepConfig(BaseSettings):
    """Base of every step's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="CURATE_", env_nested_delimiter="__", extra="forbid"
    )

    execution: ExecutionConfig = ExecutionConfig()


C = TypeVar("C", bound=StepConfig)


def parse_overrides(pairs: list[str] | None) -> dict[str, Any]:
    """``["a.b=1", "c=[x, y]"]`` -> ``{"a": {"b": 1}, "c": ["x", "y"]}`` (values as YAML)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise CuratorError("config_error", f"--set expects key=value, got {pair!r}")
        key, raw = pair.split("=", 1)
        value = yaml.safe_load(raw) if raw.strip() else ""
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(
    model: type[C],
    path: str | os.PathLike[str] | None = None,
    overrides: list[str] | dict[str, Any] | None = None,
) -> C:
    """Load a step's config from a YAML file (safely), overrides and the environment."""
    data: dict[str, Any] = {}
    if path is not None:
        file = Path(path)
        if not file.is_file():
            raise CuratorError("config_not_found", f"config file {file} does not exist")
        try:
            loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise CuratorError("config_error", f"{file} is not valid YAML: {exc}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise CuratorError("config_error", f"{file} must hold a mapping of keys")
        data = loaded or {}
    extra = overrides if isinstance(overrides, dict) else parse_overrides(overrides)
    data = _deep_merge(data, extra)
    try:
        return model(**data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise CuratorError("config_error", f"invalid {model.__name__}: {problems}") from exc
