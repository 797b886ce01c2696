"""``curate <step> --help`` describes a config key with its ``Field(description=...)``:
the model's own ``FieldInfo.description``, never a comment scraped from the source. A
note written beside a field in any other form (a ``#`` comment, a docstring under it)
would be lost from the help, so none is left in a config model."""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import tokenize
import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel, Field

from curator.config import ConfigBlock
from curator.flow.plan import FlowConfig
from curator.steps.help import config_keys
from curator.steps.registry import STEPS


def _models(model: type[BaseModel]) -> set[type[BaseModel]]:
    """``model``, its config bases and every model nested in its fields."""
    found = {c for c in model.__mro__ if isinstance(c, type) and issubclass(c, BaseModel)
             and c.__module__.startswith("curator")}
    for field in model.model_fields.values():
        args = typing.get_args(field.annotation) if typing.get_origin(field.annotation) in (
            typing.Union, types.UnionType) else (field.annotation,)
        for arg in args:
            if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in found:
                found |= _models(arg)
    return found


ALL = sorted({m for spec in STEPS for m in _models(spec.config)} | _models(FlowConfig),
             key=lambda m: (m.__module__, m.__qualname__))


def _notes_beside_fields(model: type[BaseModel]) -> list[str]:
    """Field names with a comment on their lines or above them, or a docstring under
    them: text a reader takes for the key's description that the help never shows."""
    source = textwrap.dedent(inspect.getsource(model))
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    comments = {t.start[0]: t.string for t in tokenize.generate_tokens(
        io.StringIO(source).readline) if t.type == tokenize.COMMENT}
    found = []
    for i, node in enumerate(body):
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name) \
                or node.target.id not in model.model_fields:  # a ClassVar is no key
            continue
        lines = range(node.lineno - 1, (node.end_lineno or node.lineno) + 1)
        after = body[i + 1] if i + 1 < len(body) else None
        if any(comments.get(n, "").startswith("#:") for n in lines[:1]) or any(
                n in comments for n in lines[1:]) or (
                isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            found.append(node.target.id)
    return found


@pytest.mark.parametrize("model", ALL, ids=lambda m: m.__qualname__)
def test_a_config_models_notes_are_field_descriptions(model: Any) -> None:
    assert _notes_beside_fields(model) == [], \
        f"{model.__qualname__}: give the note as Field(description=...) to show it in --help"


class _Block(ConfigBlock):
    described: int = Field(3, description="how many, with ``code``   and  spaces")
    commented: int = 4  # a comment is not a description
    #: nor is a comment above a field
    above: int = 5
    docstring: int = 6
    """nor is a docstring"""


def test_the_help_row_is_the_fields_description_and_nothing_else() -> None:
    rows = {r.key: r for r in config_keys(_Block)}
    assert rows["described"].description == "how many, with `code` and spaces"
    assert rows["commented"].description == rows["above"].description == ""
    assert rows["docstring"].description == ""  # the source is not read
    assert _notes_beside_fields(_Block) == ["commented", "above", "docstring"]


def test_a_documented_step_key_reaches_its_help_row() -> None:
    from curator.steps.decontamination import DecontaminationConfig

    row = next(r for r in config_keys(DecontaminationConfig) if r.key == "work_dir")
    assert row.description.startswith("where the run's work files go")
    assert row.description == " ".join(DecontaminationConfig.model_fields["work_dir"]
                                       .description.replace("``", "`").split())
