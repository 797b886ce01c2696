"""The language-pack manifest's schema: the pydantic model the loader validates
``pack.toml`` with, and its JSON Schema exported to docs for a user's own tools."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from curator.langpack import load_langpack
from curator.langpack.manifest import SCHEMA_FILE, Manifest, json_schema_text

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "curator" / "langpacks"
TAGS = ("en", "ru")


def _manifest(tag: str) -> dict[str, Any]:
    return tomllib.loads((SHIPPED / tag / "pack.toml").read_text(encoding="utf-8"))


def test_the_json_schema_in_docs_is_the_models() -> None:
    assert (REPO / SCHEMA_FILE).read_text(encoding="utf-8") == json_schema_text(), (
        f"{SCHEMA_FILE} is stale: regenerate it with\n  python -c \"from "
        "curator.langpack.manifest import json_schema_text as t; "
        f"open('{SCHEMA_FILE}', 'w').write(t())\""
    )


@pytest.mark.parametrize("tag", TAGS)
def test_the_loaded_pack_is_the_models_fields(tag: str) -> None:
    model, pack = Manifest.model_validate(_manifest(tag)), load_langpack(SHIPPED, tag)
    assert (model.pack.pack_id, model.pack.language_tag, model.pack.version) == (
        pack.pack_id, pack.language_tag, pack.version,
    )  # fmt: skip
    assert model.fold_map == pack.fold_map and model.notes == pack.notes
    assert tuple(model.orthography.sentence_terminators) == pack.sentence_terminators
    assert frozenset(model.capabilities.supports) == pack.capabilities
    assert model.sources.specs() == pack.sources
    assert list(pack.sources["stopwords"]) == ["file", "origin", "license", "url", "license_file"]


# -- the exported JSON Schema, as a user's validator reads it -----------------------------------

jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads((REPO / SCHEMA_FILE).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("tag", TAGS)
def test_shipped_manifests_satisfy_the_json_schema(validator: Any, tag: str) -> None:
    assert list(validator.iter_errors(_manifest(tag))) == []


def _broken(path: tuple[str, ...], value: object) -> dict[str, Any]:
    doc = _manifest("en")
    table = doc
    for key in path[:-1]:
        table = table[key]
    table[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("pack", "schema"), True),  # a boolean where the integer 1 goes
        (("pack", "schema"), 2),
        (("pack", "version"), 1),
        (("pack", "name"), "typo"),  # unknown keys are refused, as the loader refuses them
        (("notez",), {}),
        (("sources", "stopwords", "url"), 3),  # extra provenance keys are strings
        (("sources", "charset"), "charset.txt"),
        (("fold_map", "x"), 1),
        (("orthography", "sentence_terminators"), "."),
        (("capabilities", "supports"), []),
        (("capabilities", "supports"), ["shouting_ratio"]),
    ],
)
def test_the_json_schema_refuses_what_the_loader_refuses(
    validator: Any, path: tuple[str, ...], value: object
) -> None:
    doc = _broken(path, value)
    assert list(validator.iter_errors(doc)), (path, value)
