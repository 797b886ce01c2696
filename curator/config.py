"""Configuration: pydantic-settings models loaded from YAML, ``--set`` and ``CURATE_*``.

One loader (:func:`load_config`) for every way a step is started: ``curate <step>``,
a step flow called from Python or a deployment, and ``curate flow`` (which hands each
step a mapping: the values it derives plus the ``steps.<step>`` block). Precedence,
highest first: ``--set key=value`` overrides, the YAML file or mapping (in a flow: the
authored ``steps.<step>`` keys, then the flow's ``execution`` block, then the values
the flow derives), environment variables (``CURATE_EXECUTION__EXECUTOR=ray``,
``CURATE_EXECUTION__WORKERS=8``, ...), then the defaults. Environment variables are
the deployment-wide defaults; nested keys use ``__``. A key that no model knows is
refused (``unknown_config_key``) with the closest valid key suggested.
"""

from __future__ import annotations

import difflib
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

    #: local: a process pool; ray: one Ray task per source partition; inline: serially
    executor: Literal["local", "ray", "inline"] = "local"
    workers: int | None = None  # the pool's processes (default: the CPUs)
    #: a Ray cluster to join (auto, host:6379, ray://host:10001); default: a local Ray
    ray_address: str | None = None
    #: where finished partitions are recorded, so a rerun resumes (a flow: its root's)
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
    output_dir: str

    def preflight(self, flow: Any = None) -> list[tuple[str, str]]:
        """Problems of this config found before anything is touched, as
        ``(error_id, message)``. A step run stops at the first; ``curate flow`` calls it
        for every enabled step (``flow``: its :class:`~curator.steps.spec.FlowContext`)
        and reports them all at once."""
        return []


class CorpusStepConfig(StepConfig):
    """Base of a step that writes a corpus (ingest, filter, decontamination, subset)."""

    #: ``jsonl``: the JSONL shards; ``jsonl+parquet``: and a Parquet copy of them under
    #: ``<output_dir>/parquet/`` (curator.io.parquet_export, docs/user-guide.md)
    output_format: Literal["jsonl", "jsonl+parquet"] = "jsonl"


C = TypeVar("C", bound=StepConfig)


def parse_overrides(pairs: list[str] | None) -> dict[str, Any]:
    """``["a.b=1", "c=[x, y]"]`` -> ``{"a": {"b": 1}, "c": ["x", "y"]}`` (values as YAML)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise CuratorError("config_error", f"--set expects key=value, got {pair!r}")
        key, raw = pair.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except (yaml.YAMLError, RecursionError) as exc:
            # a control character, an unclosed bracket: an error id, not a traceback
            # (tests/fuzz/test_loaders.py)
            raise CuratorError("config_error", f"--set {pair[:200]!r}: the value is not "
                               f"valid YAML: {str(exc)[:500]}") from exc
        node = out
        parts = key.strip().split(".")
        for i, part in enumerate(parts[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # --set a=1 --set a.b=2
                raise CuratorError("config_error", f"--set {pair[:200]!r}: "
                                   f"{'.'.join(parts[:i + 1])} is already set to a value, "
                                   "not a mapping of keys")
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
        except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
            # not UTF-8, or nested past the parser's recursion limit: an error id, not
            # a traceback (tests/chaos/test_hostile_input.py)
            raise CuratorError("config_error",
                               f"{file} is not valid YAML: {str(exc)[:1000]}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise CuratorError("config_error", f"{file} must hold a mapping of keys")
        data = loaded or {}
    extra = overrides if isinstance(overrides, dict) else parse_overrides(overrides)
    return validate_config(model, _deep_merge(data, extra))


def validate_config(model: type[C], data: dict[str, Any], where: str = "") -> C:
    """``model`` from a mapping (and the environment); every problem in one error.

    Unknown keys are ``unknown_config_key`` (with the closest valid key), anything else
    ``config_error``; ``where`` prefixes the key paths (``steps.filter.``).
    """
    odd = [k for k in data if not isinstance(k, str)]
    if odd:  # YAML's "? " or "1: x" makes keys that are not strings (tests/fuzz)
        raise CuratorError("config_error", f"{where}keys must be names, got "
                           f"{', '.join(repr(k)[:100] for k in odd[:5])}")
    try:
        return model(**data)
    except ValidationError as exc:
        raise config_problem(model, exc, where) from exc


def config_problem(model: type[BaseModel], exc: ValidationError, where: str = "") -> CuratorError:
    """One :class:`CuratorError` for a validation failure: unknown keys first."""
    unknown, other = [], []
    for err in exc.errors():
        path = where + ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            unknown.append(f"{path}{suggest(model, err['loc'])}")
        else:
            other.append(f"{path}: {err['msg']}")
    if unknown:
        return CuratorError(
            "unknown_config_key",
            f"unknown key{'s' if len(unknown) > 1 else ''} {'; '.join(unknown)}"
            + (f"; also {'; '.join(other)}" if other else ""),
            keys=unknown,
        )
    return CuratorError("config_error", f"invalid {model.__name__}: {'; '.join(other)}")


def suggest(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """`` (did you mean 'x'?)`` for an unknown key at ``loc`` under ``model``, or ``""``."""
    node: Any = model
    for part in loc[:-1]:
        fields = getattr(node, "model_fields", None)
        if not fields or part not in fields:
            return ""
        node = _model_of(fields[part].annotation)
        if node is None:
            return ""
    fields = getattr(node, "model_fields", None) or {}
    names = [a for n, f in fields.items() for a in (n, f.alias) if a]
    close = difflib.get_close_matches(str(loc[-1]), names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (``X``, ``X | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None
