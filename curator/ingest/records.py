"""Turn raw input into canonical records or rejections, one partition at a time.

A record is rejected for exactly the reasons, and in the order, of the corpus kernel's
classifier (:func:`curator.corpus.records.classify_record`, which ``add`` calls), plus
``duplicate_id``, which only the duplicates phase decides.

A per-record Python loop is used here on purpose: every rejected record needs its
own path, line, byte offset and reason, and the id recipe hashes a JSON dump per
record. orjson parses at about the speed of polars' NDJSON reader on this machine
(shared notes: 880 vs 1,000-1,200 MB/s), and a columnar prototype (polars parses
and encodes, sha256 over Arrow buffers) measured no faster than this loop for the
whole parse phase; ``bench/ingest_throughput.py`` measures both against the polars
read+write floor.

Each accepted record leaves this module as its final output line (``record_line``),
so the shard phase only drops, renames and concatenates: nothing is encoded twice.
"""

from __future__ import annotations

import hashlib
import io
import json
import mmap
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, BinaryIO

import numpy as np
import orjson
import pyarrow as pa

from curator.corpus.lines import bom_length, line_windows
from curator.corpus.records import REASONS as RECORD_REASONS
from curator.corpus.records import UNPARSABLE_LINE, RecordSpec, Rejection, classify_record
from curator.ingest.decode import FallbackDecoder

DUPLICATE_ID = "duplicate_id"
#: Why a record was not written (the ``reason`` of a rejection line): the kernel's
#: reasons, then a later copy of an id.
REASONS = (*RECORD_REASONS, DUPLICATE_ID)

RAW_LIMIT = 65_536  # characters of the raw line kept in a rejection record


@dataclass(frozen=True)
class IdentitySpec:
    text_field: str = "text"
    id_from: str | None = None
    id_fields: tuple[str, ...] = ("url", "text")
    id_prefix: str = ""
    source_from: str | None = None
    source: str | None = None
    #: Never ``text``, ``id`` or ``source`` (``IngestConfig.identity`` removes them).
    keep_fields: tuple[str, ...] = ("url",)

    @property
    def record_spec(self) -> RecordSpec:
        """The kernel's view of these fields: what makes a line a record (an id is
        required when it is taken from a field)."""
        return RecordSpec(text_field=self.text_field, id_field=self.id_from,
                          source_field=self.source_from, metadata_fields=self.keep_fields,
                          require_id=self.id_from is not None)

    @property
    def recipe(self) -> str:
        return (
            "prefix + sha256hex(json.dumps([rec.get(f) for f in id_fields], ensure_ascii=False, "
            "sort_keys=True, separators=(',',':'), default=str))"
        )


_INT64_MIN, _UINT64_END = -(1 << 63), 1 << 64


def _id_payload(values: list[Any]) -> bytes:
    """The id recipe's ``json.dumps(values, ensure_ascii=False, sort_keys=True,
    separators=(',',':'), default=str)`` as UTF-8.

    orjson gives the same bytes, 3-4x faster, when every value is a string, None, a
    bool or an integer orjson can hold (``tests/ingest/test_id_payload.py`` checks
    this). Anything else (floats, whose repr differs; bigger integers; containers;
    datetimes and the like, which go through ``default=str``) takes json.dumps.
    """
    for v in values:
        t = type(v)
        if t is str or v is None or t is bool or (t is int and _INT64_MIN <= v < _UINT64_END):
            continue
        return json.dumps(values, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                          default=str).encode("utf-8")
    return orjson.dumps(values)


def minted_id(record: dict[str, Any], spec: IdentitySpec) -> str:
    payload = _id_payload([record.get(f) for f in spec.id_fields])
    return spec.id_prefix + hashlib.sha256(payload).hexdigest()


def record_line(text: str, doc_id: str, source: str, kept: dict[str, Any]) -> bytes:
    """The output line ``{"text","id","source",<kept...>}\\n`` of an accepted record.

    orjson, compact: its string escaping is byte-identical to polars'
    ``struct.json_encode`` (which wrote the shards before) and to ``json.dumps(...,
    ensure_ascii=False)`` for every code point (checked exhaustively). Kept values
    orjson cannot write (integers beyond 64 bits) are written by json.dumps, with its
    default separators, as they always were.
    """
    head = {"text": text, "id": doc_id, "source": source}
    try:
        return orjson.dumps(head | kept, default=str, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        tail = json.dumps(kept, ensure_ascii=False, default=str)
        return orjson.dumps(head)[:-1] + b"," + tail[1:].encode("utf-8") + b"\n"


def renamed_line(line: bytes, old_id: str, new_id: str) -> bytes:
    """``line`` with its id replaced (``on_duplicate: suffix``).

    The first ``,"id":`` in a line is the id's key: it follows the text, and inside a
    JSON string every ``"`` is escaped, so ``,"`` cannot occur there.
    """
    key = b',"id":' + orjson.dumps(old_id)
    at = line.index(key) + len(b',"id":')
    return line[:at] + orjson.dumps(new_id) + line[at + len(key) - len(b',"id":'):]


STAGING_SCHEMA = pa.schema(
    [
        ("ord_file", pa.int32()),
        ("ord_pos", pa.int64()),
        ("line", pa.int64()),
        ("id", pa.large_string()),
        ("end", pa.int64()),  # where the record's line ends in the partition's records file
    ]
)


@dataclass
class PartitionRecords:
    """Accepted records and rejections of one partition.

    Each accepted record's output line goes straight to ``lines`` (the partition's
    records file; in memory unless given), so a partition's text is never held in
    memory twice. The staging columns are typed buffers, not lists of Python
    objects: the table is built from them without a per-value conversion (and
    without ``pa.array``, which imports pandas).
    """

    spec: IdentitySpec
    rejections: list[dict[str, Any]] = field(default_factory=list)
    encodings: dict[str, int] = field(default_factory=dict)  # accepted records per encoding
    column_names: set[str] = field(default_factory=set)
    ord_file: array[int] = field(default_factory=lambda: array("i"))
    ord_pos: array[int] = field(default_factory=lambda: array("q"))
    line: array[int] = field(default_factory=lambda: array("q"))
    ids: bytearray = field(default_factory=bytearray)  # UTF-8, end to end
    id_ends: array[int] = field(default_factory=lambda: array("q", [0]))
    lines: BinaryIO = field(default_factory=io.BytesIO)  # output lines, end to end
    line_ends: array[int] = field(default_factory=lambda: array("q"))
    size: int = 0  # bytes written to `lines`

    def __post_init__(self) -> None:
        self.record_spec = self.spec.record_spec

    @property
    def accepted(self) -> int:
        return len(self.ord_pos)

    @property
    def counts(self) -> dict[str, int]:
        """``seen``, ``accepted``, ``rejected.<reason>`` and ``encoding.<name>`` (no zeros)."""
        counts = {"seen": self.accepted + len(self.rejections), "accepted": self.accepted}
        for r in self.rejections:
            key = f"rejected.{r['reason']}"
            counts[key] = counts.get(key, 0) + 1
        counts.update((f"encoding.{k}", v) for k, v in self.encodings.items())
        return {k: v for k, v in counts.items() if v}

    def reject(self, reason: str, path: str, line: int | None, offset: int | None,
               raw: str | bytes | memoryview | None, row: int | None = None,
               **extra: Any) -> None:
        entry: dict[str, Any] = {"path": path, "line": line, "byte_offset": offset,
                                 "reason": reason}
        if row is not None:
            entry["row"] = row
        entry.update(extra)
        if isinstance(raw, bytes | memoryview):
            raw = str(raw, "utf-8", errors="replace")
        if raw is not None:
            entry["raw"] = raw[:RAW_LIMIT]
            if len(raw) > RAW_LIMIT:
                entry["raw_truncated"] = True
        self.rejections.append(entry)

    def add(self, obj: Any, path: str, file_index: int, pos: int, line: int | None,
            offset: int | None, encoding: str, raw: str | bytes | memoryview | None,
            row: int | None = None) -> None:
        """Validate one parsed record (the kernel's classifier); stage it, or reject it
        with its reason.

        Positional arguments, and no dict or counter per record beyond the encoding's:
        this runs once per document and its overhead is a visible share of ingest.
        """
        spec = self.spec
        if isinstance(obj, dict):
            self.column_names.update(obj)
        verdict = classify_record(obj, self.record_spec)
        if type(verdict) is Rejection:
            self.reject(verdict.reason, path, line, offset, raw, row)
            return
        text = obj[spec.text_field]
        doc_id = str(obj[spec.id_from]) if spec.id_from is not None else minted_id(obj, spec)
        if spec.source_from is not None:
            value = obj.get(spec.source_from)
            source = "unknown" if value is None or value == "" else str(value)
        else:
            source = spec.source or "unknown"
        self.encodings[encoding] = self.encodings.get(encoding, 0) + 1
        self.ord_file.append(file_index)
        self.ord_pos.append(pos)
        self.line.append(line if line is not None else row)  # type: ignore[arg-type]
        self.ids += doc_id.encode("utf-8")
        self.id_ends.append(len(self.ids))
        self.size += self.lines.write(
            record_line(text, doc_id, source, {k: obj.get(k) for k in spec.keep_fields}))
        self.line_ends.append(self.size)

    def table(self) -> pa.Table:
        """The staging table (zero-copy views of the buffers, which then stay fixed)."""
        n = self.accepted

        def ints(kind: pa.DataType, values: array[int]) -> pa.Array:
            return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(values)])

        ids = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(self.id_ends),
                                                           pa.py_buffer(self.ids)])
        return pa.Table.from_arrays(
            [ints(pa.int32(), self.ord_file), ints(pa.int64(), self.ord_pos),
             ints(pa.int64(), self.line), ids, ints(pa.int64(), self.line_ends)],
            schema=STAGING_SCHEMA,
        )


def _value_fields(spec: IdentitySpec) -> tuple[str, ...]:
    """The input fields whose values reach an id or the output, besides the text (a
    text that is not a string is rejected, whichever way it was read)."""
    fields = [*spec.keep_fields, spec.id_from, spec.source_from]
    if spec.id_from is None:
        fields += spec.id_fields
    return tuple(f for f in dict.fromkeys(fields) if f not in (None, spec.text_field))


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def _picker(indices: list[int]) -> Callable[[list[bytes]], tuple[bytes, ...]]:
    """``lambda seq: tuple(seq[i] for i in indices)``, as fast as it gets."""
    if not indices:
        return lambda seq: ()
    if len(indices) == 1:
        i = indices[0]
        return lambda seq: (seq[i],)
    return itemgetter(*indices)  # type: ignore[return-value]


def _fmt(part: bytes) -> bytes:
    return part.replace(b"%", b"%%")  # a constant inside a %-format


#: Value types whose JSON the fast path writes one by one (``orjson.dumps(v)``) and
#: that the id recipe's ``json.dumps`` writes identically: orjson reads integers only
#: within 64 bits (larger ones come out as floats), so every int here is in range.
_FAST_TYPES = frozenset({str, type(None), bool, int})


@dataclass(frozen=True)
class FastEncoder:
    """The accepted-record work of ``PartitionRecords.add`` for the common case, with the
    text's JSON encoded once and used for both the id payload and the output line.

    For minted ids, the recipe's payload ``json.dumps([v1, v2, ...], separators=(',',
    ':'), ensure_ascii=False)`` is ``[`` + the values' JSON joined by ``,`` + ``]``, and
    the output line ``orjson.dumps({"text":…, "id":…, "source":…, k:…})`` is the same
    constant keys around the values' JSON, so each value is encoded once
    (``orjson.dumps``) and the pieces are put together by ``%``-formatting. It applies
    when the text is a string and every other value read is a string, None, a bool
    or an integer (``_FAST_TYPES``); anything else goes through ``add``.
    """

    fields: tuple[str, ...]  # the value fields (``_value_fields``), read in this order
    payload: bytes  # %-format of the id payload
    pick_payload: Callable[[list[bytes]], tuple[bytes, ...]]  # from fields' JSON + text's
    line: bytes  # %-format of the output line: text, id, source, kept...
    pick_kept: Callable[[list[bytes]], tuple[bytes, ...]]
    prefix: bytes  # the id prefix, UTF-8
    prefix_json: bytes  # its JSON without the closing quote
    source_index: int  # index of source_from in `fields`, or -1 for the constant
    source_json: bytes  # the constant source's JSON (or "unknown"'s)

    @classmethod
    def for_spec(cls, spec: IdentitySpec) -> FastEncoder | None:
        keep = spec.keep_fields
        if (spec.id_from is not None or spec.text_field not in spec.id_fields
                or len(set(keep)) != len(keep) or {"text", "id", "source"} & set(keep)):
            return None
        fields = _value_fields(spec)
        text_at = len(fields)  # the text's JSON goes after the fields' JSON
        at = {f: i for i, f in enumerate(fields)} | {spec.text_field: text_at}
        kept = b"".join(b"," + _fmt(orjson.dumps(k)) + b":%b" for k in keep)
        return cls(
            fields=fields,
            payload=b"[" + b",".join(b"%b" for _ in spec.id_fields) + b"]",
            pick_payload=_picker([at[f] for f in spec.id_fields]),
            line=b'{"text":%b,"id":%b%b","source":%b' + kept + b"}\n",
            pick_kept=_picker([at[f] for f in keep]),
            prefix=spec.id_prefix.encode("utf-8"),
            prefix_json=orjson.dumps(spec.id_prefix)[:-1],
            source_index=fields.index(spec.source_from) if spec.source_from else -1,
            source_json=orjson.dumps(spec.source or "unknown"),
        )


def parse_jsonl(data: bytes | mmap.mmap, records: PartitionRecords, *, path: str,
                file_index: int, first_line: int = 1, base_offset: int = 0,
                start: int = 0, end: int | None = None) -> None:
    """Parse JSONL bytes (``data[start:end]``, at ``base_offset`` in the file) into
    ``records``; blank lines are not records.

    ``data`` may be a memory map of the file (``curator.corpus.reading.map_lines``).

    The lines are the kernel's splitter's (:func:`curator.corpus.lines.line_windows`:
    split on ``\n``, a BOM at the start of the file skipped, lines of ASCII whitespace
    blank; a trailing ``\r`` is dropped from ``raw`` only), numbered with the blank ones.

    Why a parse loop of its own rather than the kernel's ``iter_lines`` +
    ``classify_line``: this loop runs once per document and every call saved is a
    visible share of ingest (``bench/ingest_throughput.py``). It walks memoryviews of the
    mapped file (the kernel's reader copies each line out of a copy of the block), falls
    back to another encoding for a line that is not UTF-8, and accepts the common record
    inline (``FastEncoder``) without a call per record. The classification is the
    kernel's: the inline path accepts only what ``classify_record`` accepts, and
    everything else goes through ``PartitionRecords.add``, which calls it.
    ``tests/unit/test_corpus_kernel.py`` checks both on a hostile file.
    """
    decoder: FallbackDecoder | None = None
    spec = records.spec
    fields = _value_fields(spec)
    loads, dumps, add, sha256 = orjson.loads, orjson.dumps, records.add, hashlib.sha256
    hi = len(data) if end is None else end
    bom = bom_length(data) if base_offset == 0 and start == 0 else 0
    shift = base_offset - start  # file offset = position in data + shift
    view, fast_types = memoryview(data), _FAST_TYPES

    fast = FastEncoder.for_spec(spec)
    if fast is not None:
        text_field, vfields = spec.text_field, fast.fields
        payload_fmt, pick_payload, line_fmt, pick_kept = (
            fast.payload, fast.pick_payload, fast.line, fast.pick_kept)
        prefix, prefix_json = fast.prefix, fast.prefix_json
        source_index, source_json = fast.source_index, fast.source_json
        ord_pos, lines_col, line_ends = records.ord_pos, records.line, records.line_ends
        ids, id_ends, write = records.ids, records.id_ends, records.lines.write
        column_names = records.column_names
    size, accepted_fast, numbered = records.size, 0, first_line
    try:
        for index in line_windows(data, start + bom, hi):
            rows = np.flatnonzero(~index.blank)  # (a line's number counts the blank ones)
            for pos, nl, line_no in zip(index.starts[rows].tolist(), index.ends[rows].tolist(),
                                        (rows + numbered).tolist(), strict=True):
                stop = nl - 1 if data[nl - 1] == 13 else nl  # drop a "\r"
                raw: memoryview | str = view[pos:stop]
                try:
                    obj = loads(raw)
                    parsed = True
                except orjson.JSONDecodeError:
                    parsed = False
                if parsed and fast is not None and type(obj) is dict:
                    text = obj.get(text_field)
                    if type(text) is str and text and not text.isspace():
                        values = [obj.get(f) for f in vfields]
                        for v in values:
                            if type(v) not in fast_types:
                                break
                        else:  # the common record: accepted here, as `add` would
                            column_names.update(obj)
                            encoded = [dumps(v) for v in values]
                            if source_index < 0:
                                source = source_json
                            else:
                                v = values[source_index]
                                if v is None or v == "":
                                    source = source_json
                                elif type(v) is str:
                                    source = encoded[source_index]
                                else:
                                    source = dumps(str(v))
                            encoded.append(dumps(text))
                            hexid = sha256(payload_fmt % pick_payload(encoded)).hexdigest(
                                ).encode()
                            if prefix:
                                ids += prefix
                            ids += hexid
                            id_ends.append(len(ids))
                            size += write(line_fmt % (encoded[-1], prefix_json, hexid, source,
                                                      *pick_kept(encoded)))
                            line_ends.append(size)
                            ord_pos.append(pos + shift)
                            lines_col.append(line_no)
                            accepted_fast += 1
                            continue
                offset = pos + shift
                encoding = "utf-8"
                if not parsed:
                    try:
                        raw = str(raw, "utf-8")
                    except UnicodeDecodeError:
                        if decoder is None:
                            decoder = FallbackDecoder(_non_utf8_lines(bytes(view[start:hi])))
                        raw, encoding = decoder.decode(bytes(raw))
                    try:
                        obj = loads(raw)
                        parsed = True
                    except orjson.JSONDecodeError as exc:
                        records.reject(UNPARSABLE_LINE, path, line_no, offset, raw,
                                       detail=str(exc))
                if parsed:
                    # orjson reads integers beyond 64 bits as floats: where a value reaches
                    # an id or the output, take json's exact reading (the id recipe is
                    # defined on it).
                    if type(obj) is dict:
                        for f in fields:
                            value = obj.get(f)
                            if type(value) is not str and value is not None and \
                                    _has_float(value):
                                obj = json.loads(bytes(raw) if isinstance(raw, memoryview)
                                                 else raw)
                                break
                    records.size = size
                    add(obj, path, file_index, offset, line_no, offset, encoding, raw)
                    size = records.size
            numbered += len(index.blank)
    finally:
        records.size = size
        if accepted_fast:
            records.ord_file.extend(array("i", [file_index]) * accepted_fast)
            records.encodings["utf-8"] = records.encodings.get("utf-8", 0) + accepted_fast


def _non_utf8_lines(data: bytes) -> bytes:
    """The lines of ``data`` that are not valid UTF-8 (the sample to detect from)."""
    bad = []
    for line in data.split(b"\n"):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(line)
    return b"\n".join(bad)
