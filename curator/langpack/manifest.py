"""The schema of a language pack's ``pack.toml``: pydantic models, and the one function
that turns a :class:`~pydantic.ValidationError` into the project's messages.

:class:`Manifest` is the whole file; :class:`ManifestTables` is the top level alone
(only the known tables, each a table, and ``[sources]`` in full), which is all that
:func:`~curator.langpack.loader.content_hash_of` checks. ``docs/langpacks.md`` lists
the rules; ``docs/schemas/langpack-manifest.schema.json`` is :func:`json_schema_text`.
"""

from __future__ import annotations

import json
import tomllib
import unicodedata
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    ValidationError,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from curator.errors import CuratorError
from curator.langpack.model import KNOWN_CAPABILITIES

SCHEMA_VERSION = 1
SOURCE_NAMES: tuple[str, ...] = ("stopwords", "charset", "boilerplate")
DEFAULT_TERMINATORS: tuple[str, ...] = (".", "!", "?")


def invalid(where: Path | str, message: str, **details: object) -> CuratorError:
    """A ``language_pack_invalid`` error: ``"<where>: <message>"``."""
    return CuratorError("language_pack_invalid", f"{where}: {message}", path=str(where), **details)


# ---------------------------------------------------------------------------
# value types


def _refuse(message: str = "") -> PydanticCustomError:
    """A rule's refusal; without a message :func:`manifest_error` words it by location."""
    # the message travels in ctx: as the template, a "{" in a pack's key would be a field
    return PydanticCustomError("langpack", "{message}", {"message": message})


def _nonblank(value: str) -> str:
    if not value.strip():  # not a pattern: regex \S and str.isspace differ (U+001C..U+001F)
        raise _refuse()
    return value


def _no_whitespace(value: str) -> str:
    if not value or any(ch.isspace() for ch in value):  # str.isspace, as stopwords use
        raise _refuse()
    return value


def _fold_rules(table: dict[str, str]) -> dict[str, str]:
    """The table NFC-normalised; rules across keys (collisions after NFC) are no type."""
    fold: dict[str, str] = {}
    for key, value in table.items():
        src, dst = unicodedata.normalize("NFC", key), unicodedata.normalize("NFC", value)
        if len(src) != 1:
            raise _refuse(f"[fold_map] key {key!r} must be exactly one character")
        if dst == src:
            raise _refuse(f"[fold_map] {key!r} maps to itself")
        if src in fold:
            raise _refuse(f"[fold_map] {key!r} is given twice (after NFC)")
        fold[src] = dst
    return fold


def _nfc_once(terminators: list[str]) -> list[str]:
    """NFC, each kept once in first-seen order."""
    return list(dict.fromkeys(unicodedata.normalize("NFC", t) for t in terminators))


NonEmptyStr = Annotated[
    str, AfterValidator(_nonblank), Field(min_length=1, description="not empty, not only spaces")
]
Terminator = Annotated[
    str, AfterValidator(_no_whitespace), Field(min_length=1, description="no whitespace")
]
Capability = Literal[tuple(sorted(KNOWN_CAPABILITIES))]  # type: ignore[valid-type]


class _Table(BaseModel):
    """A TOML table: every key known, every value of its declared type (strict: no
    coercion, so "1" or true is not the integer 1)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


# ---------------------------------------------------------------------------
# the tables


class Header(_Table):
    """[pack]: which pack this is."""

    # first: a pack of another schema version is refused before its other keys are read
    schema_: Annotated[StrictInt, Field(ge=SCHEMA_VERSION, le=SCHEMA_VERSION)] = Field(
        alias="schema", description="the manifest's schema version: the integer 1"
    )
    pack_id: NonEmptyStr
    language_tag: NonEmptyStr = Field(
        description="equals the pack directory's name, ignoring case"
    )
    version: NonEmptyStr


class Source(_Table):
    """[sources.<name>]: a text file in the pack and where its list came from; extra
    keys (url, license_file, ...) are kept as provenance and must be strings."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, str] = Field(init=False)  # extra keys: provenance strings

    file: NonEmptyStr = Field(description="a relative path inside the pack, '/' separated")
    origin: NonEmptyStr = Field(description="where the list came from")
    license: NonEmptyStr = Field(description="its licence")

    def spec(self) -> dict[str, str]:
        """``{file, origin, license, <extra keys>}`` in the manifest's order."""
        return self.model_dump()


class Sources(_Table):
    """[sources]: exactly stopwords, charset and boilerplate."""

    stopwords: Source
    charset: Source
    boilerplate: Source

    def specs(self) -> dict[str, dict[str, str]]:
        """Each source's :meth:`Source.spec`, in ``SOURCE_NAMES`` order."""
        return {name: getattr(self, name).spec() for name in SOURCE_NAMES}


class Orthography(_Table):
    """[orthography]: optional."""

    sentence_terminators: Annotated[list[Terminator], AfterValidator(_nfc_once)] = Field(
        default=list(DEFAULT_TERMINATORS),
        description="NFC-normalised and kept once each; the default when absent",
    )


class Capabilities(_Table):
    """[capabilities]: what the pack declares; the data-backed ones are checked against
    the pack's data when it loads."""

    supports: Annotated[list[Capability], Field(min_length=1)]


class ManifestTables(_Table):
    """The top level of ``pack.toml``: only the known tables, each a table."""

    pack: dict[str, Any] = {}
    sources: Sources
    fold_map: dict[str, Any] = {}
    orthography: dict[str, Any] = {}
    capabilities: dict[str, Any] = {}
    notes: dict[str, Any] = {}


class Manifest(ManifestTables):
    """A language pack's pack.toml (docs/langpacks.md), after tomllib parses it."""

    model_config = ConfigDict(title="Language pack manifest (pack.toml)")

    pack: Header
    fold_map: Annotated[dict[str, str], AfterValidator(_fold_rules)] = Field(
        default={}, description="one character (after NFC) -> different text"
    )
    orthography: Orthography = Orthography()
    capabilities: Capabilities
    notes: dict[str, JsonValue] = Field(
        default={}, description="free-form, copied into reports (JSON: no dates, no inf/nan)"
    )


TOP_LEVEL: tuple[str, ...] = tuple(Manifest.model_fields)
SCHEMA_FILE = "docs/schemas/langpack-manifest.schema.json"


def json_schema_text() -> str:
    """The text of :data:`SCHEMA_FILE`: ``Manifest``'s JSON Schema (draft 2020-12)."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              **Manifest.model_json_schema(by_alias=True)}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------
# reading

M = TypeVar("M", bound=ManifestTables)


def parse_manifest(path: Path, raw: bytes, model: type[M]) -> M:
    """``raw`` (the bytes of ``path``) parsed with tomllib and validated as ``model``."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise invalid(path, f"is not UTF-8: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise invalid(path, f"is not valid TOML: {exc}") from exc
    except RecursionError as exc:  # arrays or tables nested thousands deep
        raise invalid(path, "is not valid TOML: nested past the parser's recursion "
                      "limit") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise manifest_error(path, data, exc.errors()) from None


# ---------------------------------------------------------------------------
# ValidationError -> the project's messages


def _lookup(data: Any, loc: Sequence[int | str]) -> Any:
    """The raw TOML value at ``loc`` (``None`` when absent)."""
    for part in loc:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def _rank(error: ErrorDetails) -> tuple[int, ...]:
    """Which of several errors is reported: the order the checks read a manifest in.

    An unknown top-level key, then a top-level value that is not a table, then table by
    table: a missing table (or ``supports``), an unknown key (a typo explains a missing
    key better than "missing" does), then the rest in pydantic's (the fields') order.
    """
    loc, kind = error["loc"], error["type"]
    if len(loc) == 1 and kind == "extra_forbidden":
        return (0,)
    if len(loc) == 1 and kind in {"model_type", "dict_type"}:
        return (1,)
    missing = len(loc) == 1 or (loc == ("capabilities", "supports") and kind == "missing")
    within = 0 if missing else 1 if kind == "extra_forbidden" else 2
    return (2, TOP_LEVEL.index(str(loc[0])), within)


def manifest_error(path: Path, data: Any, errors: list[ErrorDetails]) -> CuratorError:
    """The project's refusal for a manifest that fails its model: one error, chosen by
    :func:`_rank`, in the words the hand-written checks used (tests and docs name them)."""
    error = min(errors, key=_rank)
    loc, kind = tuple(error["loc"]), error["type"]
    table, rest, value = str(loc[0]), loc[1:], _lookup(data, loc)

    def keys_under(parent: tuple[Any, ...], kind: str, skip: Collection[str] = ()) -> list[str]:
        """The keys right under ``parent`` with a ``kind`` error, in the manifest's order."""
        return list(dict.fromkeys(str(e["loc"][-1]) for e in errors if e["type"] == kind
                                  and e["loc"][:-1] == parent and e["loc"][-1] not in skip))

    if kind == "langpack" and error["ctx"]["message"]:
        return invalid(path, error["ctx"]["message"])  # a [fold_map] rule
    if kind == "extra_forbidden":
        keys = sorted(keys_under(loc[:-1], kind))
        if not rest:
            return invalid(path, f"unknown top-level keys {keys}; allowed: {sorted(TOP_LEVEL)}",
                           keys=keys)
        if table == "sources":
            return invalid(path, f"unknown [sources] entries {keys}", keys=keys)
        return invalid(path, f"unknown keys in [{table}]: {keys}", keys=keys)
    if table == "capabilities" and kind == "missing":
        return invalid(path, "missing [capabilities] supports")
    if not rest:
        if kind == "missing":
            return invalid(path, f"missing the [{table}] table")
        return invalid(path, f"[{table}] must be a table")
    if table == "pack" and rest == ("schema",):
        return invalid(path, f"[pack] schema must be {SCHEMA_VERSION}, got {value!r}",
                       schema=value)
    if table == "pack":
        return invalid(path, f"pack.{rest[0]} must be a non-empty string, got {value!r}",
                       key=rest[0])
    if table == "sources" and len(rest) == 1:
        return invalid(path, f"missing [sources.{rest[0]}] with file, origin and license")
    if table == "sources" and rest[1] in Source.model_fields:
        return invalid(path, f"sources.{rest[0]}.{rest[1]} must be a non-empty string, "
                       f"got {value!r}", key=rest[1])
    if table == "sources":
        bad = keys_under(loc[:2], "string_type", skip=Source.model_fields)
        return invalid(path, f"[sources.{rest[0]}] keys {bad} must be strings", keys=bad)
    if table == "fold_map":
        return invalid(path, f"[fold_map] {rest[0]!r} must map to a string, got {value!r}")
    if table == "orthography":
        return invalid(path, "[orthography] sentence_terminators must be a list of non-empty "
                       f"strings without whitespace, got {_lookup(data, loc[:2])!r}")
    if table == "capabilities":
        supports = _lookup(data, loc[:2])
        if not isinstance(supports, list) or not all(isinstance(s, str) for s in supports):
            return invalid(path, f"[capabilities] supports must be a list of names, "
                           f"got {supports!r}")
        if not supports:
            return invalid(path, "[capabilities] supports is empty")
        unknown = sorted(set(supports) - KNOWN_CAPABILITIES)
        return invalid(path, f"unknown capabilities {unknown}; known: "
                       f"{sorted(KNOWN_CAPABILITIES)}", capabilities=unknown)
    if kind == "recursion_depth_exceeded":  # [notes] nested past pydantic's depth limit
        return invalid(path, f"[{table}] is nested too deeply")
    return invalid(  # [notes]
        path,
        "[notes] may hold only strings, numbers, booleans, arrays and tables "
        "(reports are JSON; no dates or non-finite numbers)",
    )
