"""The audit's scan (curator/audit/scan.py): its batched, column-wise reading gives what
the plain per-line reading gives, on hostile files too.

Three readings are compared: ``scan_file`` (batches parsed by one ``map``), ``scan_file``
with ``exact=True`` (every line parsed alone, with its offset), and an independent
per-line reference written here the way the scan was first written (the kernel's
``split_lines``, ``classify_record``, ``RowDigest.add`` per document). Containment keys
are compared as multisets up to their names (the reference keys by sha256 of canonical
JSON, the scan mostly by polars hashes): same missing count, same multiplicities, and a
key shared by two rows exactly when their values are equal.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard

from curator.audit import scan as scan_mod
from curator.audit.scan import (
    NON_OBJECT,
    TRUNCATED,
    UNPARSABLE,
    FileScan,
    id_key,
    row_key,
    row_keys,
    scan_file,
)
from curator.corpus.fingerprint import RowDigest, fingerprint_key, text_digest
from curator.corpus.reading import read_bytes, split_lines
from curator.corpus.records import RecordSpec, Rejection, classify_record, id_of, source_of

SPEC = RecordSpec(text_field="text", id_field="id", source_field="source")
FIELDS = ("id", "text")


def reference_scan(path: str, spec: RecordSpec, *, fields: tuple[str, ...],
                   rejected: bool = False) -> tuple[dict[str, Any], list[Any]]:
    """The scan as first written: one line at a time. Returns the scan's fields (keys
    aside) and each keyed row's values (for the key comparison)."""
    out: dict[str, Any] = {"rows": 0, "bad_records": 0, "fault": None, "documents": 0,
                           "rejections": Counter(), "per_source": Counter(), "ids": Counter(),
                           "missing_keys": 0, "removed_by": Counter(),
                           "removed_ids": Counter(), "failed": Counter()}
    raw = Path(path).read_bytes()
    out["bytes"] = len(raw)
    out["sha256"] = "sha256:" + hashlib.sha256(raw).hexdigest()
    data = read_bytes(path)
    if data and not data.endswith(b"\n"):
        out["fault"] = {"kind": TRUNCATED, "offset": data.rfind(b"\n") + 1}
    digest = RowDigest()
    keyed: list[Any] = []

    def bad(kind: str, offset: int, reason: str) -> None:
        out["bad_records"] += 1
        out["rejections"][reason] += 1
        f = out["fault"]
        if f is None or (f["kind"] == TRUNCATED and f["offset"] > offset):
            out["fault"] = {"kind": kind, "offset": offset}

    for offset, line in split_lines(data):
        out["rows"] += 1
        try:
            obj = json.loads(line.decode("utf-8"))  # the stdlib, not orjson: independent
            orjson.loads(line)  # what orjson refuses (lone surrogates...) is unparsable too
        except (ValueError, UnicodeDecodeError):
            bad(UNPARSABLE, offset, "unparsable_line")
            continue
        if not isinstance(obj, dict):
            bad(NON_OBJECT, offset, "not_an_object")
            continue
        if rejected:
            gate, reason = obj.get("removed_by"), obj.get("failed")
            if isinstance(gate, str):
                out["removed_by"][gate] += 1
                out["removed_ids"][f"{id_key(obj.get('id'))}|{gate}"] += 1
            else:
                out["failed"][reason if isinstance(reason, str) else "__unknown__"] += 1
            continue
        out["per_source"][source_of(obj, spec.source_field)] += 1
        if fields:
            try:
                keyed.append([obj[f] for f in fields])
            except KeyError:
                out["missing_keys"] += 1
        record = classify_record(obj, spec)
        if type(record) is Rejection:
            out["rejections"][record.reason] += 1
            continue
        out["documents"] += 1
        digest.add(fingerprint_key(id_of(record, spec), text_digest(record[spec.text_field])))
        out["ids"][id_key(obj.get(spec.id_field) if spec.id_field else None)] += 1
    out["fingerprint"] = digest.to_json()
    return {k: dict(v) if isinstance(v, Counter) else v for k, v in out.items()}, keyed


def comparable(s: FileScan, *, fingerprint: bool = True) -> dict[str, Any]:
    d = s.to_json()
    for k in ("path", "keys", "key_scheme"):
        d.pop(k)
    if not fingerprint:
        d.pop("fingerprint")
    return d


def canonical(values: list[Any]) -> bytes:
    return orjson.dumps(values, option=orjson.OPT_SORT_KEYS)


def assert_same_keys(keys: dict[str, int], missing: int, keyed: list[Any],
                     ref_missing: int) -> None:
    """``keys`` is the multiset of ``keyed`` rows' values up to names."""
    assert missing == ref_missing
    by_value = Counter(canonical(v) for v in keyed)
    assert sorted(keys.values()) == sorted(by_value.values())
    # one key per distinct value: each value's key, alone, is one of the scan's keys
    names = {}
    for value in by_value:
        k, _ = row_keys([dict(zip(FIELDS, orjson.loads(value), strict=True))], FIELDS)
        names[value] = next(iter(k))
    assert len(set(names.values())) == len(names)
    assert {names[v]: n for v, n in by_value.items()} == keys


LINES_OK = [
    {"id": "a", "text": "one", "source": "s1"},
    {"id": "b", "text": "two \\ \" quoted", "source": "s2"},
    {"id": "c\"q", "text": "ctrl \x01 and \u2028 and é and 😀", "source": None},
    {"id": 7, "text": "int id", "source": 1},
    {"id": 7.0, "text": "float id", "source": 1.0},
    {"id": True, "text": "bool id", "source": True},
    {"id": None, "text": "null id", "source": "s1"},
    {"id": ["x", 1], "text": "list id", "source": {"n": 1}},
    {"text": "no id", "source": "s1"},
    {"id": "d", "text": "", "source": "s1"},
    {"id": "e", "text": " \t\n\x1c\u3000", "source": "s1"},
    {"id": "f", "text": None, "source": "s1"},
    {"id": "g", "source": "s1"},
    {"id": "h", "text": 5, "source": "s1"},
    {"id": "i", "text": ["list"], "source": "s1"},
    {"id": "a", "text": "one", "source": "s1"},  # a duplicate row
    {"id": "ab", "text": "c"},
    {"id": "a", "text": "bc"},
    {"id": "1", "text": "x"},
    {"id": 1, "text": "x"},
]


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


HOSTILE = {
    "clean": _jsonl(LINES_OK),
    "bom": b"\xef\xbb\xbf" + _jsonl(LINES_OK),
    "bad lines": (b'{"id":"a","text":"x"}\nnot json\n{"id":"b","text":"y"}\nnull\n5\n"str"\n'
                  b'[1,2]\n{"id":"c","text":"z"} trailing\n{"id":"d","text":"w"}\n'),
    "invalid utf-8": b'{"id":"a","text":"x\xff"}\n{"id":"b","text":"y"}\n',
    "lone surrogate": b'{"id":"a","text":"x\\ud800"}\n{"id":"b","text":"y\\ud83d\\ude00"}\n',
    "truncated valid": b'{"id":"a","text":"x"}\n{"id":"b","text":"y"}',
    "truncated invalid": b'{"id":"a","text":"x"}\n{"id":"b","text":"y',
    "truncated blank": b'{"id":"a","text":"x"}\n   ',
    "blank lines": b'\n{"id":"a","text":"x"}\n\n  \t\n\r\n{"id":"b","text":"y"}\n\n',
    "crlf": b'{"id":"a","text":"x"}\r\n{"id":"b","text":"y"}\r\n',
    "duplicate keys": b'{"id":"a","text":"x","text":5}\n{"id":"b","text":5,"text":"y"}\n',
    "escaped keys": b'{"id":"a","te\\u0078t":"x"}\n{"\\u0069d":"b","text":"y"}\n',
    "empty": b"",
    "only bom": b"\xef\xbb\xbf",
    "u2028 line": '{"id":"a","text":"x\u2028y"}\n{"id":"b","text":"y"}\n'.encode(),
    "string ids": _jsonl([{"id": i, "text": "t"} for i in
                          ["é", 'q"', "b\\s", "tab\t", "x\x7f", "", "a", "a", "\u2028"]]),
    "ascii ids": _jsonl([{"id": i, "text": "t"} for i in ["", "a", "a", " ~!", "b"]]),
    "cr inside": b'{"id":"a","text":"x"}\r{"id":"b","text":"y"}\n',
}


def _write(tmp: Path, name: str, data: bytes, suffix: str) -> str:
    path = tmp / f"{name.replace(' ', '_')}.jsonl{suffix}"
    if suffix == ".gz":
        path.write_bytes(gzip.compress(data))
    elif suffix == ".zst":
        path.write_bytes(zstandard.ZstdCompressor().compress(data))
    else:
        path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("suffix", ["", ".gz", ".zst"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("batch", [8192, 2])
def test_the_batched_scan_reads_what_the_line_by_line_scan_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, suffix: str,
        batch: int) -> None:
    monkeypatch.setattr(scan_mod, "BATCH_LINES", batch)
    path = _write(tmp_path, name, HOSTILE[name], suffix)
    fast = scan_file(path, SPEC, want_ids=True, comparison_fields=FIELDS, fingerprint=True)
    exact = scan_file(path, SPEC, want_ids=True, comparison_fields=FIELDS, fingerprint=True,
                      exact=True)
    assert fast.to_json() == {**exact.to_json()}
    expected, keyed = reference_scan(path, SPEC, fields=FIELDS)
    got = comparable(fast)
    assert got == expected
    assert_same_keys(fast.keys, fast.missing_keys, keyed, expected["missing_keys"])


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_rejected_file_is_read_the_same_way(tmp_path: Path, name: str) -> None:
    rows = [{"id": "a", "text": "x", "removed_by": "words"},
            {"id": 3, "text": "y", "removed_by": "words"},
            {"id": "b", "removed_by": 5}, {"line": "zz", "failed": "unparsable_line"}, {}]
    data = HOSTILE[name] + _jsonl(rows)
    if name.startswith("truncated"):
        data = _jsonl(rows) + HOSTILE[name]
    path = _write(tmp_path, name, data, "")
    fast = scan_file(path, SPEC, want_ids=True, rejected=True)
    exact = scan_file(path, SPEC, want_ids=True, rejected=True, exact=True)
    assert fast.to_json() == exact.to_json()
    expected, _ = reference_scan(path, SPEC, fields=(), rejected=True)
    got = comparable(fast, fingerprint=False)
    assert got == {k: v for k, v in expected.items() if k != "fingerprint"} | {
        "rejections": expected["rejections"]}


def test_without_id_or_source_fields(tmp_path: Path) -> None:
    spec = RecordSpec(text_field="text")
    path = _write(tmp_path, "clean", HOSTILE["clean"] + HOSTILE["bad lines"], "")
    fast = scan_file(path, spec, want_ids=True, comparison_fields=("text",), fingerprint=True)
    expected, keyed = reference_scan(path, spec, fields=("text",))
    assert comparable(fast) == expected
    assert fast.missing_keys == expected["missing_keys"]
    assert sorted(fast.keys.values()) == sorted(Counter(canonical(v) for v in keyed).values())


def test_only_the_digested_files_are_hashed(tmp_path: Path) -> None:
    path = _write(tmp_path, "clean", HOSTILE["clean"], "")
    assert scan_file(path, SPEC, want_ids=False, digest=False).sha256 is None
    assert scan_file(path, SPEC, want_ids=False).sha256 == \
        "sha256:" + hashlib.sha256(HOSTILE["clean"]).hexdigest()


def test_containment_keys_depend_on_the_values_only() -> None:
    a = {"id": "x", "text": "hello", "source": "one"}
    b = {"source": "two", "text": "hello", "id": "x", "extra": [1]}
    assert row_key(a, FIELDS) == row_key(b, FIELDS)
    different = [{"id": "x", "text": "hello!"}, {"id": "y", "text": "hello"},
                 {"id": "xh", "text": "ello"}, {"id": 1, "text": "hello"},
                 {"id": "1", "text": "hello"}, {"id": None, "text": "hello"},
                 {"id": "x", "text": ["hello"]}]
    keys = [row_key(r, FIELDS) for r in [a, *different]]
    assert len(set(keys)) == len(keys)
    assert row_key({"text": "t"}, FIELDS) is None
    # a batch keys each record as the record alone does
    batch, missing = row_keys([a, b, *different, {"text": "t"}], FIELDS)
    assert missing == 1
    assert batch == Counter(k for k in keys[:1] * 2 + keys[1:])


def test_an_id_without_escapes_is_its_canonical_json() -> None:
    """The scan writes a string id that needs no escape as '"' + id + '"'; orjson
    escapes exactly the characters of ``_JSON_ESCAPED``."""
    for c in range(0x10000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        s = chr(c)
        plain = orjson.dumps(s) == f'"{s}"'.encode()
        assert plain == (scan_mod._JSON_ESCAPED.search(s) is None), hex(c)


def test_scans_that_keyed_rows_two_ways_are_not_mixed(tmp_path: Path) -> None:
    from curator.audit.scan import load_scans, scan_path
    from curator.errors import CuratorError

    paths = []
    for i, scheme in enumerate(["polars 0.0 ...", None]):
        path = f"/data/part_{i}.jsonl"
        out = scan_path(tmp_path, path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(FileScan(path=path, keys={"k": 1},
                                              key_scheme=scheme).to_json()))
        paths.append(path)
    with pytest.raises(CuratorError) as err:
        load_scans(tmp_path, paths)
    assert err.value.error_id == "audit_scan_mixed"
    assert set(load_scans(tmp_path, paths[:1])) == {paths[0]}
