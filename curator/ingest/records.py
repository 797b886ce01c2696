"""Turn raw input into canonical records or rejections, one partition at a time.

A per-record Python loop is used here on purpose: every rejected record needs its
own path, line, byte offset and reason, and the id recipe hashes a JSON dump per
record. orjson parses at about the speed of polars' NDJSON reader on this machine
(shared notes: 880 vs 1,000-1,200 MB/s); ``bench/ingest_throughput.py`` measures
the whole step against the polars read+write floor.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa

from curator.ingest.decode import UTF8_BOM, FallbackDecoder

#: Why a record was not written (the ``reason`` of a rejection line).
REASONS = (
    "unparsable_line",
    "not_an_object",
    "missing_text",
    "text_not_a_string",
    "empty_text",
    "missing_id",
    "duplicate_id",
)

RAW_LIMIT = 65_536  # characters of the raw line kept in a rejection record


@dataclass(frozen=True)
class IdentitySpec:
    text_field: str = "text"
    id_from: str | None = None
    id_fields: tuple[str, ...] = ("url", "text")
    id_prefix: str = ""
    source_from: str | None = None
    source: str | None = None
    keep_fields: tuple[str, ...] = ("url",)

    @property
    def recipe(self) -> str:
        return (
            "prefix + sha256hex(json.dumps([rec.get(f) for f in id_fields], ensure_ascii=False, "
            "sort_keys=True, separators=(',',':'), default=str))"
        )


def minted_id(record: dict[str, Any], spec: IdentitySpec) -> str:
    payload = json.dumps(
        [record.get(f) for f in spec.id_fields],
        ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str,
    )
    return spec.id_prefix + hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _kept_json(record: dict[str, Any], keep: tuple[str, ...]) -> str:
    if not keep:
        return ""
    values = {k: record.get(k) for k in keep}
    try:
        return orjson.dumps(values, default=str).decode()
    except TypeError:  # e.g. integers beyond 64 bits
        return json.dumps(values, ensure_ascii=False, default=str)


STAGING_SCHEMA = pa.schema(
    [
        ("ord_file", pa.int32()),
        ("ord_pos", pa.int64()),
        ("line", pa.int64()),
        ("id", pa.string()),
        ("text", pa.string()),
        ("source", pa.string()),
        ("kept", pa.string()),
        ("encoding", pa.string()),
    ]
)


@dataclass
class PartitionRecords:
    """Accepted records (columns) and rejections of one partition."""

    spec: IdentitySpec
    columns: dict[str, list[Any]] = field(
        default_factory=lambda: {name: [] for name in STAGING_SCHEMA.names}
    )
    rejections: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    column_names: set[str] = field(default_factory=set)

    def _count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def reject(self, reason: str, path: str, line: int | None, offset: int | None,
               raw: str | bytes | None, row: int | None = None, **extra: Any) -> None:
        self._count("seen")
        self._count(f"rejected.{reason}")
        entry: dict[str, Any] = {"path": path, "line": line, "byte_offset": offset,
                                 "reason": reason}
        if row is not None:
            entry["row"] = row
        entry.update(extra)
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", errors="replace")
        if raw is not None:
            entry["raw"] = raw[:RAW_LIMIT]
            if len(raw) > RAW_LIMIT:
                entry["raw_truncated"] = True
        self.rejections.append(entry)

    def add(self, obj: Any, *, path: str, file_index: int, pos: int, line: int | None,
            offset: int | None, encoding: str, raw: str | bytes | None,
            row: int | None = None) -> None:
        spec = self.spec
        where: dict[str, Any] = {"path": path, "line": line, "offset": offset, "row": row}
        if not isinstance(obj, dict):
            self.reject("not_an_object", raw=raw, **where)
            return
        self.column_names.update(obj.keys())
        text = obj.get(spec.text_field)
        if text is None:
            self.reject("missing_text", raw=raw, **where)
            return
        if not isinstance(text, str):
            self.reject("text_not_a_string", raw=raw, **where)
            return
        if not text.strip():
            self.reject("empty_text", raw=raw, **where)
            return
        if spec.id_from is not None:
            value = obj.get(spec.id_from)
            if value is None or (isinstance(value, str) and not value.strip()):
                self.reject("missing_id", raw=raw, **where)
                return
            doc_id = str(value)
        else:
            doc_id = minted_id(obj, spec)
        if spec.source_from is not None:
            value = obj.get(spec.source_from)
            source = "unknown" if value is None or value == "" else str(value)
        else:
            source = spec.source or "unknown"
        self._count("seen")
        self._count("accepted")
        self._count(f"encoding.{encoding}")
        cols = self.columns
        cols["ord_file"].append(file_index)
        cols["ord_pos"].append(pos)
        cols["line"].append(line if line is not None else row)
        cols["id"].append(doc_id)
        cols["text"].append(text)
        cols["source"].append(source)
        cols["kept"].append(_kept_json(obj, spec.keep_fields))
        cols["encoding"].append(encoding)

    def table(self) -> pa.Table:
        return pa.table(self.columns, schema=STAGING_SCHEMA)


def iter_lines(data: bytes, first_line: int, base_offset: int) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line bytes) of every non-blank line."""
    line_no, offset = first_line, base_offset
    start = 0
    if base_offset == 0 and data.startswith(UTF8_BOM):
        start = len(UTF8_BOM)
    n = len(data)
    while start < n:
        end = data.find(b"\n", start)
        if end < 0:
            end = n
        raw = data[start:end]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if raw.strip():
            yield line_no, offset + start, raw
        line_no += 1
        start = end + 1


def _value_fields(spec: IdentitySpec) -> tuple[str, ...]:
    """The input fields whose values reach an id or the output (besides the text)."""
    fields = [*spec.keep_fields, spec.id_from, spec.source_from]
    if spec.id_from is None:
        fields += spec.id_fields
    return tuple(f for f in dict.fromkeys(fields) if f is not None)


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def parse_jsonl(data: bytes, records: PartitionRecords, *, path: str, file_index: int,
                first_line: int = 1, base_offset: int = 0) -> None:
    """Parse JSONL bytes into ``records``; blank lines are not records."""
    decoder: FallbackDecoder | None = None
    fields = _value_fields(records.spec)
    for line_no, offset, raw in iter_lines(data, first_line, base_offset):
        encoding = "utf-8"
        try:
            obj = orjson.loads(raw)
            text = None
        except orjson.JSONDecodeError:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                if decoder is None:
                    decoder = FallbackDecoder(_non_utf8_lines(data))
                text, encoding = decoder.decode(raw)
            try:
                obj = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                records.reject("unparsable_line", path=path, line=line_no, offset=offset,
                               raw=text, detail=str(exc))
                continue
        # orjson reads integers beyond 64 bits as floats: where a value reaches an id or
        # the output, take json's exact reading (the id recipe is defined on it).
        if isinstance(obj, dict) and any(_has_float(obj.get(f)) for f in fields):
            obj = json.loads(raw if text is None else text)
        records.add(obj, path=path, file_index=file_index, pos=offset, line=line_no,
                    offset=offset, encoding=encoding, raw=text if text is not None else raw)


def _non_utf8_lines(data: bytes) -> bytes:
    """The lines of ``data`` that are not valid UTF-8 (the sample to detect from)."""
    bad = []
    for line in data.split(b"\n"):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(line)
    return b"\n".join(bad)
