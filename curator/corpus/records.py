"""Corpus records: which fields are the text, id and source, and the one classification
of a line into a record or a rejection.

Every step reads corpus lines through :func:`classify_line` (Parquet rows through
:func:`classify_record`), so a malformed file gets the same counts and the same reasons
in every step's report. A line is checked in this order; the first failing check is its
reason (:data:`REASONS`):

==================== ===============================================================
``unparsable_line``  not valid JSON (for bytes: also not valid UTF-8; ingest decodes
                     other encodings before it classifies, the later steps read its
                     UTF-8 output)
``not_an_object``    valid JSON, but not an object (an array, a number, a string, null)
``missing_text``     no ``text_field``, or its value is null
``text_not_a_string`` the text is a number, a list, an object, a bool
``empty_text``       the text is ``""`` or whitespace only (``str.isspace``): there is
                     nothing to measure, filter or train on, so it is not a document
``missing_id``       only where an id is required (``RecordSpec.require_id``): the
                     id field is missing, null, or a blank string
==================== ===============================================================

Blank lines (only ASCII whitespace) are not records at all: they are neither read nor
rejected (:mod:`curator.corpus.reading`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

#: the per-source key of a record whose source field is missing or null
MISSING_SOURCE = "__missing__"

UNPARSABLE_LINE = "unparsable_line"
NOT_AN_OBJECT = "not_an_object"
MISSING_TEXT = "missing_text"
TEXT_NOT_A_STRING = "text_not_a_string"
EMPTY_TEXT = "empty_text"
MISSING_ID = "missing_id"

#: why a line is not a record, in the order the checks run
REASONS = (UNPARSABLE_LINE, NOT_AN_OBJECT, MISSING_TEXT, TEXT_NOT_A_STRING, EMPTY_TEXT,
           MISSING_ID)
#: the reasons of a line that is not a JSON object
NOT_A_RECORD = (UNPARSABLE_LINE, NOT_AN_OBJECT)
#: the reasons of an object without a usable text
WITHOUT_TEXT = (MISSING_TEXT, TEXT_NOT_A_STRING, EMPTY_TEXT)


@dataclass(frozen=True)
class RecordSpec:
    """Which fields of a corpus record are the text, the id, the source and the metadata.

    ``require_id``: a record whose ``id_field`` is missing, null or blank is rejected
    (``missing_id``); otherwise such a record simply has no id.
    """

    text_field: str = "text"
    id_field: str | None = None
    source_field: str | None = None
    metadata_fields: tuple[str, ...] = ()
    require_id: bool = False


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a line or row is not a record (one of :data:`REASONS`), with the parser's
    message for ``unparsable_line``."""

    reason: str
    detail: str | None = None


_NOT_AN_OBJECT = Rejection(NOT_AN_OBJECT)
_MISSING_TEXT = Rejection(MISSING_TEXT)
_TEXT_NOT_A_STRING = Rejection(TEXT_NOT_A_STRING)
_EMPTY_TEXT = Rejection(EMPTY_TEXT)
_MISSING_ID = Rejection(MISSING_ID)


def classify_record(obj: Any, spec: RecordSpec) -> dict[str, Any] | Rejection:
    """``obj`` (a parsed line, a Parquet row) as a record, or why it is not one."""
    if not isinstance(obj, dict):
        return _NOT_AN_OBJECT
    text = obj.get(spec.text_field)
    if text is None:
        return _MISSING_TEXT
    if not isinstance(text, str):
        return _TEXT_NOT_A_STRING
    if not text or text.isspace():  # the same as `not text.strip()`, without a copy
        return _EMPTY_TEXT
    if spec.require_id and spec.id_field is not None:
        value = obj.get(spec.id_field)
        if value is None or (isinstance(value, str) and (not value or value.isspace())):
            return _MISSING_ID
    return obj


def classify_line(line: bytes | memoryview | str, spec: RecordSpec) -> dict[str, Any] | Rejection:
    """One JSONL line (without its newline) as a record, or why it is not one."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return Rejection(UNPARSABLE_LINE, str(exc))
    return classify_record(obj, spec)


def source_of(record: Mapping[str, Any], field: str | None, unset: str = MISSING_SOURCE) -> str:
    """The per-source key of ``record``: its ``field`` as a string; :data:`MISSING_SOURCE`
    when the value is missing or null; ``unset`` when there is no source field."""
    if field is None:
        return unset
    value = record.get(field)
    return MISSING_SOURCE if value is None else str(value)


def id_of(record: Mapping[str, Any], spec: RecordSpec) -> str | None:
    """The record's id as a string, or None (no id field, or a missing or null value)."""
    if spec.id_field is None:
        return None
    value = record.get(spec.id_field)
    return None if value is None else str(value)


def rejections_by_reason(counts: Mapping[str, int | float]) -> dict[str, int]:
    """``{reason: n}`` of the :data:`REASONS` in ``counts`` (keyed by reason), without
    zeros, sorted by reason: the ``rejections_by_reason`` block every report carries."""
    return {r: int(counts[r]) for r in sorted(REASONS) if counts.get(r)}
