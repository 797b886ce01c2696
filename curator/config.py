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
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

from curator.errors import CuratorError
from curator.io import storage
from curator.io.partitioning import parse_size

INT64_MAX = 2**63 - 1


def _whole_number(value: Any) -> Any:
    """A count as written: ``true`` and ``2.0`` are refused (lax pydantic takes them as
    1 and 2); a numeric string stays accepted, as environment variables give them."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "should be an integer, not {value}",
                                  {"value": str(value).lower()})
    if isinstance(value, float):
        hint = f" (write {int(value)})" if value.is_integer() and abs(value) < 2**63 else ""
        raise PydanticCustomError("int_type", "should be an integer, not {value}{hint}",
                                  {"value": repr(value), "hint": hint})
    return value


def _byte_size(value: Any) -> Any:
    """Refuse what :func:`~curator.io.partitioning.parse_size` would not read; keep the
    value as written (not as bytes), so the config hash of a run stays what it was."""
    parse_size(value)  # raises PydanticCustomError, which pydantic reports with the key
    return value


#: An integer within 64 bits (counts, seeds, budgets): not a boolean, not a float. The
#: bounds turn a value past numpy's and Arrow's integers into a config error up front.
Int64 = Annotated[int, BeforeValidator(_whole_number), Field(ge=-INT64_MAX - 1, le=INT64_MAX)]


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):  # lax pydantic reads true as 1.0
        raise PydanticCustomError("float_type", "should be a number, not {value}",
                                  {"value": str(value).lower()})
    return value


#: A real number (a threshold, a score, a rate): finite, not a boolean.
Real = Annotated[float, BeforeValidator(_not_a_boolean), Field(allow_inf_nan=False)]

#: A byte size (``partition_size``): ``64MB``, ``256MiB``, ``1048576``; from 1 byte to
#: 1 TiB (parsed by pydantic's ``ByteSize``, :func:`curator.io.partitioning.parse_size`).
ByteSizeSpelling = Annotated[str | int, BeforeValidator(_byte_size)]


class ConfigBlock(BaseModel):
    """Base of a nested config block: unknown keys refused. A key's ``--help`` text is its
    ``Field(description=...)``; not ``use_attribute_docstrings``, which reads the source of
    every model at import (~140 ms CPU in each process, measured)."""

    model_config = ConfigDict(extra="forbid")


class ExecutionConfig(ConfigBlock):
    """Where a step runs; shared by every step."""

    executor: Literal["local", "ray", "inline"] = Field("local", description=(
        "local: a process pool; ray: one Ray task per source partition; inline: serially"))
    workers: Int64 | None = Field(None, description="the pool's processes (default: the CPUs)")
    ray_address: str | None = Field(None, description=(
        "a Ray cluster to join (auto, host:6379, ray://host:10001); default: a local Ray"))
    checkpoint_path: str | None = Field(None, description=(
        "where finished partitions are recorded, so a rerun resumes (a flow: its root's)"))
    max_attempts: Int64 = Field(3, ge=1, description=(
        "ray: runs of a partition whose worker or node is lost (1: no retry); a partition's "
        "own error is never retried"))
    exchange_buckets: Int64 | None = Field(None, ge=1, description=(
        "buckets of a step's exchange (default: one per 128 MB of input, up to 4096); "
        "the output is the same for any count"))


class TokenizerRef(ConfigBlock):
    """A tokenizer by name and revision (``models.tokenizer``, ``heuristic_filters.tokenizer``)."""

    name: str
    revision: str


_PATH_SUFFIXES = ("_dir", "_glob", "_path", "_root", "_manifest", "_ledger", "_policy",
                  "_cache", "_file")
_PATH_KEYS = frozenset({"input", "holdout", "output", "policy", "fasttext_langid"})
#: the longest file name a path component may have (NAME_MAX on Linux and macOS)
NAME_MAX = 255


def _path_values(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` of every path-like key of a config dump, nested too."""
    found = []
    for key, value in values.items():
        if isinstance(value, dict):
            found += _path_values(value, f"{prefix}{key}.")
        elif key in _PATH_KEYS or key.endswith(_PATH_SUFFIXES):
            found.append((f"{prefix}{key}", value))
    return found


def path_problem(key: str, value: Any) -> str | None:
    """Why ``value`` (a path-like key's value, or a list of them) can name no file: a NUL
    byte, or a component longer than :data:`NAME_MAX` bytes; ``None`` when it can."""
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, str):
            continue
        if "\x00" in item:
            return f"{key}: a path cannot contain a NUL byte"
        long = next((c for c in item.split("/") if len(os.fsencode(c)) > NAME_MAX), None)
        if long is not None:
            return (f"{key}: the path component {long[:40]!r}... is "
                    f"{len(os.fsencode(long))} bytes, longer than a file name can be "
                    f"({NAME_MAX})")
    return None


def url_problems(step: str, config: StepConfig, url_keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """``object_storage_unsupported`` for a URL in a path-like key of ``config`` (``*_dir``,
    ``*_glob``, ``*_path``, ``input``, ...; nested too) that is not one of ``url_keys``
    (docs/storage.md). A step's ``preflight`` and :meth:`StepRun.url_problems` both call
    it, so a flow's preflight lists what the run would refuse."""
    values = config.model_dump(mode="json", exclude={"execution"})
    return [("object_storage_unsupported",
             f"step {step!r} cannot use object storage for {key} ({value!r}): use a local "
             "or shared-filesystem path (docs/storage.md lists what can)")
            for key, value in _path_values(values) if key not in url_keys
            and storage.any_remote(value)]


class StepConfig(BaseSettings):
    """Base of every step's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="CURATE_", env_nested_delimiter="__", extra="forbid"
    )

    #: the step this config belongs to, bound by its :class:`~curator.steps.spec.StepSpec`
    #: (the key is written in the spec alone)
    step_spec: ClassVar[Any]

    execution: ExecutionConfig = ExecutionConfig()
    output_dir: str

    @model_validator(mode="after")
    def _paths_can_name_files(self) -> StepConfig:
        """Every path-like key (``*_dir``, ``*_glob``, ``input``, ..., nested too) can
        name a file: no NUL byte, no component past ``NAME_MAX`` (``config_error``, not
        an ``OSError`` traceback where the path is first used)."""
        for key, value in _path_values(self.model_dump(mode="json")):
            problem = path_problem(key, value)
            if problem is not None:
                raise ValueError(problem)
        return self

    def url_problems(self) -> list[tuple[str, str]]:
        """``object_storage_unsupported`` for a URL in a path-like key its step does not
        allow (:func:`curator.steps.base.url_problems`)."""
        return url_problems(self.step_spec.key, self, self.step_spec.url_keys)

    def preflight(self, flow: Any = None) -> list[tuple[str, str]]:
        """Problems of this config found before anything is touched, as
        ``(error_id, message)``. A step run stops at the first; ``curate flow`` calls it
        for every enabled step (``flow``: its :class:`~curator.steps.spec.FlowContext`)
        and reports them all at once."""
        return []


class CorpusStepConfig(StepConfig):
    """Base of a step that writes a corpus (ingest, filter, decontamination, subset)."""

    output_format: Literal["jsonl", "jsonl+parquet"] = Field("jsonl", description=(
        "``jsonl``: the JSONL shards; ``jsonl+parquet``: and a Parquet copy of them under "
        "``<output_dir>/parquet/`` (curator.io.parquet_export, docs/user-guide.md)"))


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
        if file.is_dir():  # the path named, quoted: "config file in ..." read as prose
            raise CuratorError("config_not_found", f"config file {str(file)!r} is a directory, "
                               "not a YAML file: name the file (e.g. examples/demo/ingest.yaml)")
        if not file.is_file():
            raise CuratorError("config_not_found",
                               f"config file {str(file)!r} does not exist ({file.absolute()})")
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
