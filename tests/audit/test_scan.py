"""The audit's scan (curator/audit/scan.py and the modules it is split into: unit,
summary, keys): its batched, column-wise reading gives what the plain per-line reading
gives, on hostile files too; a unit writes that scan and sends its multisets to the
exchange; the driver's merge refuses scans it cannot use.

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
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
import zstandard

from curator.audit import keys as keys_mod
from curator.audit import unit as unit_mod
from curator.audit.keys import id_key, row_key, row_keys
from curator.audit.scan import FileScan, scan_file
from curator.audit.summary import NON_OBJECT, TRUNCATED, UNPARSABLE
from curator.corpus import reading
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
        k, _ = row_keys([dict(zip(FIELDS, orjson.loads(value), strict=True))], FIELDS, SPEC)
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
@pytest.mark.parametrize(("batch", "chunk"), [(8192, 8 << 20), (2, 8 << 20), (8192, 1), (2, 5)])
def test_the_batched_scan_reads_what_the_line_by_line_scan_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, suffix: str,
        batch: int, chunk: int) -> None:
    """Batches of lines, or a file read a few bytes at a time, find what the line by line
    scan and the independent reference scan find."""
    monkeypatch.setattr(unit_mod, "BATCH_LINES", batch)
    monkeypatch.setattr(reading, "CHUNK_BYTES", chunk)
    path = _write(tmp_path, name, HOSTILE[name], suffix)
    fast = scan_file(path, SPEC, want_ids=True, comparison_fields=FIELDS, fingerprint=True)
    exact = scan_file(path, SPEC, want_ids=True, comparison_fields=FIELDS, fingerprint=True,
                      exact=True)
    assert fast.to_json() == {**exact.to_json()}
    expected, keyed = reference_scan(path, SPEC, fields=FIELDS)
    got = comparable(fast)
    assert got == expected
    assert_same_keys(fast.keys, fast.missing_keys, keyed, expected["missing_keys"])


@pytest.mark.parametrize("chunk", [8 << 20, 4])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_rejected_file_is_read_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              name: str, chunk: int) -> None:
    monkeypatch.setattr(reading, "CHUNK_BYTES", chunk)
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


def test_a_file_that_fails_to_read_midway_is_not_readable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An I/O error after some chunks were read and counted: the file is ``not
    readable``, and nothing read of it counts; a compressed file cut short or damaged
    too (a truncated .zst was read as an empty file, a damaged stream escaped)."""
    path = _write(tmp_path, "clean", HOSTILE["clean"] * 3, "")

    class Failing(io.BytesIO):
        reads = 0

        def readinto(self, buffer: Any) -> int:
            Failing.reads += 1
            if Failing.reads > 2:
                raise OSError(5, "Input/output error")
            return super().readinto(buffer)

    monkeypatch.setattr(reading, "CHUNK_BYTES", 16)
    monkeypatch.setattr(reading, "open", lambda p, mode: Failing(Path(p).read_bytes()),
                        raising=False)
    got = scan_file(path, SPEC, want_ids=True, comparison_fields=FIELDS, fingerprint=True)
    assert Failing.reads == 3
    assert got.fault == {"kind": "not readable", "offset": 0,
                         "detail": "OSError: [Errno 5] Input/output error"}
    assert (got.rows, got.documents, got.ids, got.keys, got.fingerprint) == (0, 0, {}, {}, None)
    monkeypatch.undo()
    many = HOSTILE["clean"] * 200
    zst = zstandard.ZstdCompressor().compress(many)
    for name, data in {"cut.jsonl.gz": gzip.compress(many)[:-9],
                       "bad.jsonl.gz": gzip.compress(many)[:10] + b"\xff" * 40,
                       "cut.jsonl.zst": zst[:-9], "half.jsonl.zst": zst[:len(zst) // 2],
                       "bad.jsonl.zst": b"not zstd"}.items():
        broken = tmp_path / name
        broken.write_bytes(data)
        got = scan_file(str(broken), SPEC, want_ids=True)
        assert got.fault is not None and got.fault["kind"] == "not readable", name
        assert got.rows == 0, name


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


@pytest.mark.parametrize("spec", [None, SPEC])
def test_containment_keys_depend_on_the_values_only(spec: RecordSpec | None) -> None:
    def row_key(record: dict[str, Any], fields: tuple[str, ...]) -> str | None:
        return keys_mod.row_key(record, fields, spec)

    def row_keys(records: list[dict[str, Any]], fields: tuple[str, ...]) -> Any:
        return keys_mod.row_keys(records, fields, spec)

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


def test_with_the_id_and_text_as_fields_a_key_is_the_fingerprint_row_digest() -> None:
    """Comparison fields the id and the text (either order): a string row's key is the
    first 16 bytes of its corpus-fingerprint row digest; any other row keeps the
    canonical-JSON key; without the spec (or with other fields) the polars key."""
    def digest_key(doc_id: str, text: str) -> str:
        key = fingerprint_key(doc_id, text_digest(text)).encode("utf-8", "surrogatepass")
        return hashlib.sha256(key).digest()[:16].hex()

    rows = [{"id": "x", "text": "hello"}, {"id": "x\u0000y", "text": "h\u00e9\u2028"},
            {"id": "", "text": ""}]
    for row in rows:
        assert row_key(row, FIELDS, SPEC) == digest_key(row["id"], row["text"])
        assert row_key(row, ("text", "id"), SPEC) == digest_key(row["id"], row["text"])
        assert row_key(row, FIELDS) != digest_key(row["id"], row["text"])
    odd = {"id": 1, "text": "hello"}
    assert row_key(odd, FIELDS, SPEC) == hashlib.sha256(canonical([1, "hello"])).hexdigest()
    other = RecordSpec(text_field="text", id_field="url")
    assert row_key(rows[0], FIELDS, other) == row_key(rows[0], FIELDS)
    # a batch with an odd row keys the string rows the same way
    batch, missing = row_keys([*rows, odd, {"id": "z"}], FIELDS, SPEC)
    assert missing == 1
    assert batch == Counter(row_key(r, FIELDS, SPEC) for r in [*rows, odd])
    assert keys_mod.Keys(FIELDS, SPEC).scheme != keys_mod.Keys(FIELDS).scheme


def test_an_id_without_escapes_is_its_canonical_json() -> None:
    """The scan writes a string id that needs no escape as '"' + id + '"'; orjson
    escapes exactly the characters of ``_JSON_ESCAPED``."""
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    escaped = pl.Series(chars).str.contains(keys_mod.JSON_ESCAPED).to_list()
    for s, found in zip(chars, escaped, strict=True):
        plain = orjson.dumps(s) == f'"{s}"'.encode()
        assert plain == (not found), hex(ord(s))


def _put_scan(work: Path, scan: dict[str, Any]) -> None:
    from curator.audit.scan import scan_path
    out = scan_path(work, scan["path"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(scan))


def test_scans_that_keyed_rows_two_ways_are_not_mixed(tmp_path: Path) -> None:
    from curator.audit.scan import load_scans
    from curator.errors import CuratorError

    paths = []
    for i, scheme in enumerate(["polars 0.0 ...", None]):
        path = f"/data/part_{i}.jsonl"
        _put_scan(tmp_path, FileScan(path=path, keys={"k": 1}, key_scheme=scheme).to_json())
        paths.append(path)
    with pytest.raises(CuratorError) as err:
        load_scans(tmp_path, paths)
    assert err.value.error_id == "audit_scan_mixed"
    assert set(load_scans(tmp_path, paths[:1])) == {paths[0]}


def test_a_scan_from_before_the_exchange_is_refused_unless_it_is_whole(tmp_path: Path
                                                                       ) -> None:
    """A checkpointed scan holds the driver-side join's fields (removed): empty, as every
    unit on the exchange wrote them, they are dropped; a lines table or a deferred
    target (a scan that left its multisets to the join) is refused."""
    from curator.audit.scan import load_scans
    from curator.errors import CuratorError

    retired = {"line_table": None, "deferred": None, "in_table": []}
    whole = {**FileScan(path="/data/a.jsonl", rows=2, documents=2).to_json(), **retired}
    _put_scan(tmp_path, whole)
    assert load_scans(tmp_path, ["/data/a.jsonl"])["/data/a.jsonl"] == \
        FileScan(path="/data/a.jsonl", rows=2, documents=2)
    for field, value in [("line_table", "polars 1.0 ..."), ("in_table", ["ids"]),
                         ("deferred", {"want_ids": True})]:
        _put_scan(tmp_path, {**whole, field: value})
        with pytest.raises(CuratorError) as err:
            load_scans(tmp_path, ["/data/a.jsonl"])
        assert err.value.error_id == "audit_scan_mixed", field


def test_a_unit_writes_the_files_scan_and_sends_its_multisets_to_the_exchange(
        tmp_path: Path) -> None:
    """Each unit's result is the file's full scan without its multisets (ids, keys,
    removed ids), which are the exchange's rows, one per key and multiset, for each role
    the file plays (a file both target and reference sends both)."""
    from curator.audit import netting
    from curator.audit.scan import ScanStage, load_scans, scan_path
    from curator.exchange import Exchange
    from curator.tasks import FileGroupTask

    target = _write(tmp_path, "target", HOSTILE["clean"], "")
    ref = _write(tmp_path, "ref", HOSTILE["clean"] + HOSTILE["bad lines"], ".zst")
    rows = [{"id": "a", "text": "x", "removed_by": "words"},
            {"id": "a", "text": "y", "removed_by": "lang"}, {"line": "z", "failed": "x"}]
    rej = _write(tmp_path, "rejected", _jsonl(rows), "")
    both = _write(tmp_path, "both", HOSTILE["string ids"], "")
    exchange = Exchange.open(tmp_path / "exchange", 3)
    stage = ScanStage(work_dir=str(tmp_path / "work"), spec=SPEC, want_ids=True,
                      comparison_fields=FIELDS, keyed=frozenset([target, ref, both]),
                      rejected=frozenset([rej]), digested=frozenset([target, both]),
                      exchange=exchange, fingerprinted=frozenset([ref, both]),
                      referenced=frozenset([ref, both]))
    paths = [target, ref, rej, both]
    for path in paths:
        stage.process(FileGroupTask(data=[path]))
    full = {target: scan_file(target, SPEC, want_ids=True, comparison_fields=FIELDS),
            ref: scan_file(ref, SPEC, want_ids=True, comparison_fields=FIELDS,
                           fingerprint=True, digest=False),
            rej: scan_file(rej, SPEC, want_ids=True, rejected=True, digest=False),
            both: scan_file(both, SPEC, want_ids=True, comparison_fields=FIELDS,
                            fingerprint=True)}
    for path in paths:
        raw = orjson.loads(scan_path(tmp_path / "work", path).read_bytes())
        assert raw == {**full[path].to_json(), "ids": {}, "keys": {}, "removed_ids": {}}, path
    assert load_scans(tmp_path / "work", paths)[rej].removed_by == {"words": 1, "lang": 1}
    sent: Counter[tuple[str, int]] = Counter()
    for b in range(exchange.buckets):
        for k, m, n in exchange.read(b, netting.SCHEMA).iter_rows():
            sent[(k, m)] += n
    want: Counter[tuple[str, int]] = Counter()
    for path, scan in full.items():
        for m, held in [(netting.REF_ID, scan.ids if path in (ref, both) else {}),
                        (netting.REF_KEY, scan.keys if path in (ref, both) else {}),
                        (netting.OUT_ID, scan.ids if path in (target, both) else {}),
                        (netting.TARGET_KEY, scan.keys if path in (target, both) else {})]:
            want.update({(k, m): n for k, n in held.items()})
    want[('"a"', netting.REMOVED_ID)] = 2  # one id removed by two gates
    assert sent == want and full[target].ids and full[ref].keys
