"""The config keys of a model, with their defaults, for ``curate <step> --help``.

Generated from the pydantic models themselves (a step's ``StepSpec.config``, the
flow's ``FlowConfig``), so a field added to a model shows up in the help without an
edit here. Nested models are listed as dotted keys (``execution.executor``). A key's
description is its ``Field(description=...)``, else the nested model's docstring; the
models' source is not read. A ``Literal``'s choices are its type (``local|ray|inline``).
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

REQUIRED = "required"


@dataclass(frozen=True)
class KeyHelp:
    """One config key as the help shows it."""

    key: str  # dotted: ``execution.executor``
    type: str  # ``str | list[str]``, ``local|ray|inline``
    default: str  # as YAML would spell it (``null``, ``[url, text]``), or ``required``
    description: str

    @property
    def required(self) -> bool:
        return self.default == REQUIRED


def config_keys(model: type[BaseModel], prefix: str = "") -> list[KeyHelp]:
    """Every key of ``model`` (nested models' keys dotted), required keys first, then
    the model's own keys, then the ones it inherits, each with its default.

    A nested block that may be left out (``heuristic_filters: X | None = None``) is
    listed itself (default ``null``), then its keys with the defaults they take when
    the block is given."""
    own = _own_fields(model)
    names = list(model.model_fields)
    order = sorted(range(len(names)), key=lambda i: (
        not model.model_fields[names[i]].is_required(), names[i] not in own, i))
    rows: list[KeyHelp] = []
    for i in order:
        name = names[i]
        field = model.model_fields[name]
        key = prefix + (field.alias or name)
        sub = _model_of(field.annotation)
        description = _clean(field.description or "")
        if sub is not None and not description:
            description = _doc(sub)
        default = _default(field)
        if sub is not None and default == "null":
            description = (f"{description.rstrip('.')}; " if description else "") + \
                f"an optional block: leave it out, or give the {key}.* keys"
        if sub is None or default in ("null", REQUIRED):
            rows.append(KeyHelp(key, type_name(field.annotation), default, description))
        if sub is not None:
            rows += config_keys(sub, prefix=key + ".")
    return rows


def type_name(annotation: Any) -> str:
    """A short spelling of a field's type: ``str | list[str]``, ``local|ray|inline``."""
    if annotation is type(None):
        return "null"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return "|".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is not None:
        inner = ", ".join(type_name(a) for a in args)
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{inner}]" if inner else name
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def yaml_value(value: Any) -> str:
    """``value`` as it would be written in the YAML config."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yaml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    return str(value)


def _default(field: Any) -> str:
    if field.is_required():
        return REQUIRED
    if field.default_factory is not None:
        return yaml_value(field.default_factory())
    if field.default is PydanticUndefined:  # pragma: no cover - is_required() said no
        return REQUIRED
    return yaml_value(field.default)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _own_fields(model: type[BaseModel]) -> set[str]:
    return set(inspect.get_annotations(model))


def _doc(model: type[BaseModel]) -> str:
    """The first paragraph of a model's own docstring (not one it inherits)."""
    doc = model.__dict__.get("__doc__")
    if not doc:
        return ""
    return _clean(inspect.cleandoc(doc).split("\n\n")[0])


def _clean(text: str) -> str:
    return " ".join(text.replace("``", "`").split())


def flow_config_keys() -> list[KeyHelp]:
    """The keys of ``curate flow``'s config: :func:`config_keys` of ``FlowConfig``, its
    ``steps`` mapping spelled out as one ``steps.<key>`` block per registered step."""
    from curator.flow.plan import FlowConfig
    from curator.steps.registry import STEPS

    rows: list[KeyHelp] = []
    for row in config_keys(FlowConfig):
        if row.key != "steps":
            rows.append(row)
            continue
        rows += [KeyHelp(f"steps.{spec.key}", "mapping", "{enabled: false}",
                         f"enabled: true runs it; any other key is a key of curate "
                         f"{spec.command_name} (curate {spec.command_name} --help) and "
                         f"overrides what the flow derives from corpus and output_root")
                 for spec in STEPS]
    return rows
