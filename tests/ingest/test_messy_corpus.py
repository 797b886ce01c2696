"""A messy corpus built here, line by line: every input record is accounted for exactly
once, in the shards or in ``rejected/*.jsonl`` with its reason, path, line and offset."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from tests.ingest._support import (
    ingest,
    ingest_error,
    read_jsonl,
    read_report,
    recipe_id,
    rejections,
    shard_records,
)

KEEP = ["url", "lang"]


@dataclass
class Line:
    raw: str  # the line as written (without its line ending)
    reason: str | None = None  # None: a document; "blank": not a record
    record: dict[str, Any] | None = None  # the parsed record of a document
    encoding: str = "utf-8"
    ending: str = "\n"
    # filled in by MessyFile.write
    path: str = ""
    line: int = 0
    offset: int = 0


def doc(rec: dict[str, Any], encoding: str = "utf-8", ending: str = "\n") -> Line:
    return Line(json.dumps(rec, ensure_ascii=False), record=rec, encoding=encoding,
                ending=ending)


def bad(raw: str, reason: str, ending: str = "\n") -> Line:
    return Line(raw, reason=reason, ending=ending)


def blank(raw: str = "", ending: str = "\n") -> Line:
    return Line(raw, reason="blank", ending=ending)


@dataclass
class MessyFile:
    name: str
    lines: list[Line]
    encoding: str = "utf-8"
    bom: bool = False
    compress: str = ""  # "", "gz" or "zst"
    last_newline: bool = True
    data: bytes = field(default=b"", init=False)  # uncompressed bytes

    def write(self, folder: Path) -> Path:
        path = folder / self.name
        data = b"\xef\xbb\xbf" if self.bom else b""
        for i, ln in enumerate(self.lines, start=1):
            ln.path, ln.line, ln.offset = str(path), i, len(data)
            data += ln.raw.encode(self.encoding)
            if i < len(self.lines) or self.last_newline:
                data += ln.ending.encode()
        self.data = data
        if self.compress == "gz":
            path.write_bytes(gzip.compress(data))
        elif self.compress == "zst":
            path.write_bytes(zstandard.ZstdCompressor().compress(data))
        else:
            path.write_bytes(data)
        return path


def rec(text: Any, url: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"text": text}
    if url is not None:
        out["url"] = url
    out.update(extra)
    return out


SHARED = rec("Shared across files.", "https://shared/1", lang="en")
CP1252_TEXTS = [
    "Caf\u00e9 \u201cna\u00efve\u201d \u2013 d\u00e9j\u00e0 vu for \u20ac5",
    "\u2018Single\u2019 quotes, \u00e0 la cr\u00e8me br\u00fbl\u00e9e\u2026",
    "Se\u00f1or Mu\u00f1oz \u2014 \u00bfqu\u00e9 tal?",
]


def messy_files() -> list[MessyFile]:
    valid = [
        doc(rec("The first document.", "https://a/1", lang="en", junk=1)),
        blank(),
        doc(rec("  Spaces at both ends are kept.  ", "https://a/2")),
        blank("   \t "),
        bad('{"text": "unterminated', "unparsable_line"),
        bad("[1, 2, 3]", "not_an_object"),
        bad("42", "not_an_object"),
        bad('"just a string"', "not_an_object"),
        bad(json.dumps({"url": "https://a/no-text"}), "missing_text"),
        bad(json.dumps({"text": None, "url": "https://a/null"}), "missing_text"),
        bad(json.dumps({"text": 3.5, "url": "https://a/num"}), "text_not_a_string"),
        bad(json.dumps({"text": ["a", "list"]}), "text_not_a_string"),
        bad(json.dumps({"text": ""}), "empty_text"),
        bad(json.dumps({"text": " \t\n  "}), "empty_text"),
        doc(rec("The first document.", "https://a/1", lang="en", junk=2)),  # dup in file
        doc(rec("CRLF ended line.", "https://a/3"), ending="\r\n"),
        blank("", ending="\r\n"),
        doc(SHARED),
        doc(rec("Last line has no newline.", "https://a/4")),
    ]
    cp1252 = [
        doc(rec(CP1252_TEXTS[0], "https://cp/1", lang="fr"), encoding="cp1252"),
        doc(rec(CP1252_TEXTS[1], "https://cp/2"), encoding="cp1252"),
        bad('{"text": "Unterminated \u201cquote', "unparsable_line"),
        doc(rec(CP1252_TEXTS[2], "https://cp/3", lang="es"), encoding="cp1252"),
    ]
    bom = [
        doc(rec("After a byte order mark: na\u00efve \u6771\u4eac.", "https://bom/1")),
        doc(rec("Second BOM-file line.", "https://bom/2")),
    ]
    gz = [
        doc(rec("From a gzip file.", "https://gz/1")),
        bad("{\"text\": \"oops\",}", "unparsable_line"),
        doc(SHARED),  # duplicate across files
        doc(rec("From a gzip file.", "https://gz/1")),  # duplicate within the file
    ]
    zst = [
        doc(rec("From a zstd file.", "https://zst/1")),
        bad("null", "not_an_object"),
        doc(rec("Second zstd line.", None, lang="de")),
    ]
    return [
        MessyFile("01-valid.jsonl", valid, last_newline=False),
        MessyFile("02-cp1252.jsonl", cp1252, encoding="cp1252"),
        MessyFile("03-bom.jsonl", bom, bom=True),
        MessyFile("04-gzip.jsonl.gz", gz, compress="gz"),
        MessyFile("05-zstd.jsonl.zst", zst, compress="zst"),
    ]


def build(folder: Path) -> list[MessyFile]:
    folder.mkdir(parents=True, exist_ok=True)
    files = messy_files()
    for f in files:
        f.write(folder)
    return files


def expected_outcome(files: list[MessyFile]) -> tuple[list[Line], list[dict[str, Any]]]:
    """(accepted documents in order, rejections as dicts: path, line, byte_offset, reason,
    and for a later copy its id and first_copy)."""
    accepted: list[Line] = []
    rejected: list[dict[str, Any]] = []
    first: dict[str, Line] = {}
    for f in sorted(files, key=lambda f: f.name):
        for ln in f.lines:
            if ln.reason == "blank":
                continue
            where = {"path": ln.path, "line": ln.line, "byte_offset": ln.offset}
            if ln.reason is not None:
                rejected.append({**where, "reason": ln.reason})
                continue
            assert ln.record is not None
            key = recipe_id(ln.record)
            if key in first:
                f0 = first[key]
                rejected.append({**where, "reason": "duplicate_id", "id": key, "first_copy": {
                    "path": f0.path, "line": f0.line, "byte_offset": f0.offset}})
            else:
                first[key] = ln
                accepted.append(ln)
    return accepted, rejected


def test_every_record_is_accounted_for_exactly_once(tmp_path: Path) -> None:
    files = build(tmp_path / "in")
    out = tmp_path / "out"
    report = ingest(str(tmp_path / "in"), out, on_duplicate="drop", keep_fields=KEEP)
    want_docs, want_rej = expected_outcome(files)

    # Documents: in input order, text exactly as written, ids by the recipe.
    got = shard_records(out)
    assert got == [
        {"text": ln.record["text"], "id": recipe_id(ln.record), "source": "unknown",
         "url": ln.record.get("url"), "lang": ln.record.get("lang")}
        for ln in want_docs if ln.record is not None
    ]
    texts = [d["text"] for d in got]
    assert all(t in texts for t in CP1252_TEXTS)
    assert "  Spaces at both ends are kept.  " in texts

    # Rejections: one line each, with reason, path, line and byte offset (and for a
    # duplicate, its id and where the kept first copy is); the raw line of the others.
    got_rej = rejections(out)
    keys = ("path", "line", "byte_offset", "reason", "id", "first_copy")
    assert [{k: r[k] for k in keys if k in r} for r in got_rej] == \
        sorted(want_rej, key=lambda r: (r["path"], r["line"]))
    lines_by_where = {(ln.path, ln.line): ln for f in files for ln in f.lines}
    for r in got_rej:
        if r["reason"] != "duplicate_id":
            assert r["raw"] == lines_by_where[(r["path"], r["line"])].raw  # cp1252 decoded
    # The offsets point at the line in the (uncompressed) bytes.
    by_name = {f.name: f for f in files}
    for r in got_rej:
        f = by_name[Path(r["path"]).name]
        ln = lines_by_where[(r["path"], r["line"])]
        raw = ln.raw.encode(f.encoding)
        assert f.data[r["byte_offset"]:r["byte_offset"] + len(raw)] == raw
    plain = (tmp_path / "in" / "01-valid.jsonl").read_bytes()
    some = [r for r in got_rej if r["path"].endswith("01-valid.jsonl")]
    assert [plain[r["byte_offset"]:].split(b"\n")[0] for r in some[:3]] == [
        b'{"text": "unterminated', b"[1, 2, 3]", b"42"]

    # Exactly once: documents + rejections = every non-blank line.
    records = [ln for f in files for ln in f.lines if ln.reason != "blank"]
    assert len(got) + len(got_rej) == len(records)
    want_reasons = Counter(r["reason"] for r in want_rej)
    assert report["rejections_by_reason"] == dict(sorted(want_reasons.items()))
    assert report["balance"] == {"seen": len(records), "accepted": len(got),
                                 "rejected": len(got_rej), "ok": True}
    assert report["documents_seen"] == report["documents_accepted"] + report["documents_rejected"]
    assert len({r["id"] for r in got_rej if r["reason"] == "duplicate_id"}) == 3
    assert report["counts"] == {
        "records_read": len(records),
        "unparsable_lines": want_reasons["unparsable_line"],
        "skipped_non_mapping": want_reasons["not_an_object"],
        "skipped_missing_text": want_reasons["missing_text"] + want_reasons["text_not_a_string"]
        + want_reasons["empty_text"],
        "skipped_missing_id": 0,
        "duplicate_ids": want_reasons["duplicate_id"],
        "duplicate_groups": len({r["id"] for r in got_rej if r["reason"] == "duplicate_id"}),
        "written": len(got),
    }
    # Encodings of the documents parsed (before duplicates are resolved).
    parsed = [ln for f in files for ln in f.lines if ln.reason is None]
    assert report["encodings_used"] == {
        "cp1252": len(CP1252_TEXTS), "utf-8": len(parsed) - len(CP1252_TEXTS)}
    assert report["lossy_documents"] == 0
    assert report["files_with_bom"] == 1
    assert report["input"] == {"glob": str(tmp_path / "in"), "format": "jsonl", "files": 5,
                               "skipped_own_output": 0}
    assert report["columns_available"] == ["junk", "lang", "text", "url"]
    assert report["completed_normally"] is True and report["error"] is None
    assert read_report(out) == report
    # The report file: indent 2, sorted keys, UTF-8 (not ASCII-escaped), UTC timestamps.
    assert (out / "ingest_report.json").read_text(encoding="utf-8") == json.dumps(
        report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report["completed_at"])


def test_cp1252_text_comes_out_exactly_as_written(tmp_path: Path) -> None:
    f = MessyFile("only.jsonl", [doc(rec(t, f"u{i}"), encoding="cp1252")
                                 for i, t in enumerate(CP1252_TEXTS)], encoding="cp1252")
    (tmp_path / "in").mkdir()
    f.write(tmp_path / "in")
    with pytest.raises(UnicodeDecodeError):
        f.data.decode("utf-8")  # really not UTF-8
    report = ingest(str(tmp_path / "in"), tmp_path / "out")
    assert [d["text"] for d in shard_records(tmp_path / "out")] == CP1252_TEXTS
    assert report["encodings_used"] == {"cp1252": 3}
    raw = (tmp_path / "out" / "part_0.jsonl").read_bytes().decode("utf-8")
    assert "\u201cna\u00efve\u201d" in raw  # written as UTF-8, not \u-escaped


def test_utf8_bom_is_not_part_of_the_first_record(tmp_path: Path) -> None:
    f = MessyFile("bom.jsonl", [doc(rec("first", "u1")), doc(rec("second", "u2"))], bom=True)
    (tmp_path / "in").mkdir()
    f.write(tmp_path / "in")
    ingest(str(tmp_path / "in"), tmp_path / "out")
    assert [d["id"] for d in shard_records(tmp_path / "out")] == [
        recipe_id(rec("first", "u1")), recipe_id(rec("second", "u2"))]


PARQUET_ROWS = [
    {"text": "Row zero.", "url": "https://pq/0", "lang": "en", "score": 0.5, "tags": ["a"],
     "ts": dt.datetime(2024, 1, 2, 3, 4, 5), "extra": 1},
    {"text": None, "url": "https://pq/1", "lang": "en", "score": 1.0, "tags": [],
     "ts": None, "extra": 2},
    {"text": "", "url": "https://pq/2", "lang": None, "score": None, "tags": None,
     "ts": None, "extra": 3},
    {"text": "Row three, caf\u00e9.", "url": None, "lang": "fr", "score": 2.0, "tags": ["b", "c"],
     "ts": dt.datetime(2020, 2, 29), "extra": 4},
    {"text": "Row zero.", "url": "https://pq/0", "lang": "xx", "score": 9.0, "tags": ["z"],
     "ts": None, "extra": 5},
    {"text": "   ", "url": "https://pq/5", "lang": "en", "score": 0.0, "tags": [],
     "ts": None, "extra": 6},
]


def test_parquet_with_extra_columns(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "messy.parquet"
    pq.write_table(pa.Table.from_pylist(PARQUET_ROWS), path)
    out = tmp_path / "out"
    report = ingest(str(path), out, on_duplicate="drop", keep_fields=["url", "lang", "tags", "ts"])
    values = pq.read_table(path).to_pylist()
    assert shard_records(out) == [
        {"text": "Row zero.", "id": recipe_id(values[0]), "source": "unknown",
         "url": "https://pq/0", "lang": "en", "tags": ["a"], "ts": "2024-01-02T03:04:05"},
        {"text": "Row three, caf\u00e9.", "id": recipe_id(values[3]), "source": "unknown",
         "url": None, "lang": "fr", "tags": ["b", "c"], "ts": "2020-02-29T00:00:00"},
    ]
    got = [{k: r.get(k) for k in ("path", "line", "row", "byte_offset", "reason")}
           for r in rejections(out)]
    where = {"path": str(path), "line": None, "byte_offset": None}
    assert got == [
        {**where, "row": 1, "reason": "missing_text"},
        {**where, "row": 2, "reason": "empty_text"},
        {**where, "row": 4, "reason": "duplicate_id"},
        {**where, "row": 5, "reason": "empty_text"},
    ]
    [dup] = read_jsonl(out / "rejected" / "duplicates.jsonl")
    assert dup["first_copy"] == {**where, "row": 0}
    assert report["columns_available"] == sorted(PARQUET_ROWS[0])
    assert report["rejections_by_reason"] == {"duplicate_id": 1, "empty_text": 2,
                                              "missing_text": 1}
    assert report["balance"] == {"seen": 6, "accepted": 2, "rejected": 4, "ok": True}
    assert report["encodings_used"] == {"parquet": 3}
    assert report["input"]["format"] == "parquet"


def test_a_mixed_jsonl_and_parquet_set_is_refused(tmp_path: Path) -> None:
    build(tmp_path / "in")
    pq.write_table(pa.Table.from_pylist(PARQUET_ROWS), tmp_path / "in" / "messy.parquet")
    exc = ingest_error(str(tmp_path / "in"), tmp_path / "out", on_duplicate="drop")
    assert exc.error_id == "mixed_formats"
    assert "'jsonl': 5" in exc.message and "'parquet': 1" in exc.message
    assert not (tmp_path / "out").exists()  # a refusal before the output is touched


def test_a_stray_undefined_byte_does_not_garble_a_cp1252_file(tmp_path: Path) -> None:
    """One byte that cp1252 leaves undefined (0x81) must not switch the whole file to another
    guessed encoding: the other lines still come out exactly as written, and only the line
    holding that byte is decoded lossily (and counted as such)."""
    (tmp_path / "in").mkdir()
    texts = ["He said \u201chello\u201d \u2013 it\u2019s d\u00e9j\u00e0 vu\u2026 \u20ac5",
             "Another \u201cquoted\u201d line, na\u00efve."]
    lines = [json.dumps(rec("plain ascii", "u0")).encode()]
    lines += [json.dumps(rec(t, f"u{i + 1}"), ensure_ascii=False).encode("cp1252")
              for i, t in enumerate(texts)]
    lines.append(b'{"text": "odd \x81 byte", "url": "u3"}')
    (tmp_path / "in" / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    report = ingest(str(tmp_path / "in"), tmp_path / "out")
    out = shard_records(tmp_path / "out")
    assert [d["text"] for d in out] == ["plain ascii", *texts, "odd \ufffd byte"]
    assert report["encodings_used"] == {"cp1252": 2, "utf-8": 1, "utf-8-lossy": 1}
    assert report["lossy_documents"] == 1


def test_control_and_separator_characters_survive_exactly(tmp_path: Path) -> None:
    texts = ["ctl \x00\x01\x1f\x7f end", 'quote " backslash \\ slash / nl \n tab \t cr \r',
             "line sep \u2028 para sep \u2029 nel \x85", "emoji \U0001f600 max \U0010ffff",
             "bidi \u202e zero width \u200b\ufeff", "\u00a0non-breaking\u00a0"]
    recs = [{"text": t, "url": i, "copy": t} for i, t in enumerate(texts)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    ingest(str(tmp_path / "in"), tmp_path / "out", keep_fields=["copy"])
    out = shard_records(tmp_path / "out")
    assert [(d["text"], d["copy"], d["id"]) for d in out] == [
        (t, t, recipe_id(r)) for t, r in zip(texts, recs, strict=True)]
    raw = (tmp_path / "out" / "part_0.jsonl").read_bytes()
    assert raw.count(b"\n") == len(texts)  # one record per line
