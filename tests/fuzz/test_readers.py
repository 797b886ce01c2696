"""Property-based fuzzing (hypothesis) of every corpus reader: the line classifier, the
ingest JSONL reader on plain, ``.gz`` and ``.zst`` files, and Parquet input (well formed
with any schema, or corrupted). Properties: never an unhandled exception (a record, a
rejection with a reason, or a :class:`CuratorError` with an id other than
``internal_error``); counts balance (read = kept + rejected, one result a non-blank
line); nothing written outside the output directory.

Example counts: tests/fuzz/conftest.py (``CURATE_FUZZ_FULL=1`` for thousands).
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from curator.corpus.reading import UTF8_BOM
from curator.corpus.records import REASONS, RecordSpec, Rejection, classify_line
from curator.errors import CuratorError
from tests.chaos.test_hostile_input import NASTY_LINES
from tests.fuzz.conftest import examples, files_under, sandbox
from tests.ingest._support import ingest

pytestmark = pytest.mark.timeout(600)

SPEC = RecordSpec(text_field="text", id_field="id", source_field="source", require_id=True)

# -- strategies --------------------------------------------------------------------------

#: characters hypothesis would rarely find alone: NUL, BOM, surrogates' escapes, line
#: and paragraph separators, path pieces
SPICE = [b"\x00", UTF8_BOM, b"\\ud800", b"\\udfff", b"\\u0000", b"{", b"}", b"[", b"]",
         b'"', b"\\", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\r", b"\xe2\x80\xa8", b"../",
         b"/", b"\t", b",", b":", b"1e999", b"-0", b"NaN"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                    st.text(max_size=30))
json_values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=12)
field_values = st.one_of(st.text(max_size=40), st.sampled_from(
    ["../../etc/passwd", "/abs", "a\x00b", "", " ", ".", "..", "\ud800"]), json_values)
records = st.fixed_dictionaries({}, optional={
    "text": field_values, "id": field_values, "source": field_values,
    "url": field_values, "extra": json_values})


@st.composite
def record_lines(draw: st.DrawFn) -> bytes:
    rec = draw(records)
    try:
        line = json.dumps(rec, ensure_ascii=draw(st.booleans())).encode("utf-8",
                                                                       "surrogatepass")
    except ValueError:
        line = b"{}"
    return line


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    line = bytearray(draw(base))
    for _ in range(draw(st.integers(0, 4))):
        pos = draw(st.integers(0, len(line)))
        if draw(st.booleans()) and line:
            del line[min(pos, len(line) - 1)]
        else:
            line[pos:pos] = draw(st.sampled_from(SPICE) | st.binary(min_size=1, max_size=3))
    return bytes(line)


lines = st.one_of(record_lines(), mutated(record_lines()), st.binary(max_size=60),
                  st.sampled_from(sorted(NASTY_LINES.values())),
                  mutated(st.sampled_from(sorted(NASTY_LINES.values()))))


def check(result: object) -> None:
    assert isinstance(result, dict | Rejection), result
    if isinstance(result, Rejection):
        assert result.reason in REASONS, result


# -- the kernel's line classifier ---------------------------------------------------------

@given(lines)
def test_any_line_is_a_record_or_a_rejection_with_a_reason(line: bytes) -> None:
    check(classify_line(line, SPEC))


# -- ingest: plain, .gz, .zst --------------------------------------------------------------

def compress(body: bytes, fmt: str) -> bytes:
    if fmt == "gz":
        return gzip.compress(body, mtime=0)
    if fmt == "zst":
        return zstandard.ZstdCompressor().compress(body)
    return body


def expected_lines(body: bytes) -> int:
    """Non-blank lines (split on ``\\n``; ASCII whitespace only is blank; a BOM that
    starts the file is not part of its first line)."""
    if body.startswith(UTF8_BOM):
        body = body[len(UTF8_BOM):]
    return sum(1 for part in body.split(b"\n") if part.strip())


def rejection_lines(out: Path) -> list[dict[str, Any]]:
    found = []
    for p in sorted((out / "rejected").glob("*.jsonl")):
        found += [orjson.loads(x) for x in p.read_bytes().splitlines() if x.strip()]
    return found


def shard_lines(out: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in out.glob("part_*.jsonl"))


def run_ingest(root: Path, inp: Path, **keys: Any) -> dict[str, Any] | CuratorError:
    out = root / "out"
    before = files_under(root)
    try:
        report: dict[str, Any] | CuratorError = ingest(str(inp), out, **keys)
    except CuratorError as exc:
        assert exc.error_id != "internal_error", exc
        report = exc
    after = files_under(root)
    escaped = {p for p in after - before if not p.startswith("out")}
    assert not escaped, f"written outside the output dir: {sorted(escaped)[:5]}"
    for p in out.rglob("*"):
        rel = p.relative_to(out)
        assert ".." not in rel.parts and "\x00" not in str(rel) and len(p.name) <= 255
    return report


@examples(30)
@given(body=st.lists(lines, max_size=12).map(lambda ls: b"\n".join(ls)),
       fmt=st.sampled_from(["jsonl", "gz", "zst"]),
       ending=st.sampled_from([b"", b"\n", b"\r\n", b"\n\n"]),
       ids=st.booleans())
def test_ingest_reads_any_file_with_balanced_counts(body: bytes, fmt: str, ending: bytes,
                                                   ids: bool) -> None:
    body += ending
    with sandbox() as root:
        name = "c.jsonl" + ("" if fmt == "jsonl" else f".{fmt}")
        (root / "in").mkdir()
        (root / "in" / name).write_bytes(compress(body, fmt))
        keys: dict[str, Any] = {"on_duplicate": "drop", "keep_fields": ["url", "extra"]}
        if ids:
            keys.update(id_from="id", source_from="source")
        report = run_ingest(root, root / "in", **keys)
        report = written_report(root / "out", report)
        assert report["documents_seen"] == expected_lines(body)
        assert report["balance"]["ok"], report["balance"]
        assert report["documents_accepted"] == shard_lines(root / "out")
        rejected = rejection_lines(root / "out")
        assert len(rejected) == report["documents_rejected"]
        assert all(r["reason"] in {*REASONS, "duplicate_id"} for r in rejected), rejected


def written_report(out: Path, result: dict[str, Any] | CuratorError) -> dict[str, Any]:
    """The run's report; a run refused for content is ``no_usable_documents`` (every
    line rejected, or none), and its report on disk still balances."""
    if isinstance(result, dict):
        return result
    assert result.error_id == "no_usable_documents", result
    report = orjson.loads((out / "ingest_report.json").read_bytes())
    assert report["documents_accepted"] == 0, report
    return report


# -- Parquet input: any schema, or a corrupted file ----------------------------------------

TYPES: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "string": (pa.string(), st.text(max_size=20)),
    "int": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "float": (pa.float64(), st.floats()),
    "bool": (pa.bool_(), st.booleans()),
    "binary": (pa.binary(), st.binary(max_size=20)),
    "list": (pa.list_(pa.int64()), st.lists(st.integers(-5, 5), max_size=3)),
    "struct": (pa.struct([("a", pa.string())]),
               st.fixed_dictionaries({"a": st.text(max_size=5)})),
    "timestamp": (pa.timestamp("us"), st.datetimes()),
}


@st.composite
def parquet_tables(draw: st.DrawFn) -> pa.Table:
    rows = draw(st.integers(0, 6))
    names = draw(st.lists(st.sampled_from(["text", "id", "source", "url", "x", "Text", ""]),
                          unique=True, max_size=5))
    columns = {}
    for name in names:
        typ, values = TYPES[draw(st.sampled_from(sorted(TYPES)))]
        columns[name] = pa.array(draw(st.lists(st.none() | values, min_size=rows,
                                               max_size=rows)), type=typ)
    return pa.table(columns) if columns else pa.table({"empty": pa.array([], pa.int8())})


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@examples(30)
@given(table=parquet_tables(), damage=st.sampled_from(["none", "truncate", "flip", "bytes"]),
       where=st.floats(0, 1), junk=st.binary(min_size=1, max_size=64), ids=st.booleans())
def test_ingest_reads_any_parquet_file_with_balanced_counts(
        table: pa.Table, damage: str, where: float, junk: bytes, ids: bool) -> None:
    data = parquet_bytes(table)
    cut = int(len(data) * where)
    if damage == "truncate":
        data = data[:cut]
    elif damage == "flip":
        data = data[:cut] + junk + data[cut + len(junk):]
    elif damage == "bytes":
        data = junk
    with sandbox() as root:
        (root / "in").mkdir()
        (root / "in" / "c.parquet").write_bytes(data)
        keys: dict[str, Any] = {"on_duplicate": "drop", "keep_fields": ["url"]}
        if ids:
            keys.update(id_from="id", source_from="source")
        report = run_ingest(root, root / "in", **keys)
        if isinstance(report, CuratorError) and report.error_id != "no_usable_documents":
            assert damage != "none", report  # a damaged file: partition_failed
            assert report.error_id == "partition_failed", report
            return
        report = written_report(root / "out", report)
        if damage == "none":
            assert report["documents_seen"] == table.num_rows
        assert report["balance"]["ok"], report["balance"]
        assert report["documents_accepted"] == shard_lines(root / "out")
        assert len(rejection_lines(root / "out")) == report["documents_rejected"]
