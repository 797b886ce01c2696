"""The corpus kernel (curator/corpus): one classification of a line, one line reader, and
the same counts for the same malformed file in every step's report."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curator.corpus.formats import (
    COMPRESSED_SUFFIXES,
    JSONL_EXTENSIONS,
    JSONL_NAMES,
    PARQUET_NAMES,
    file_format,
    has_extension,
)
from curator.corpus.reading import iter_lines, iter_records, read_bytes, split_lines
from curator.corpus.records import (
    REASONS,
    RecordSpec,
    Rejection,
    classify_line,
    classify_record,
    rejections_by_reason,
    source_of,
)
from curator.ingest import records as ingest_records
from curator.steps.filter import FilterConfig, run_filter
from curator.steps.ingest import IngestConfig, run_ingest
from curator.steps.profile import ProfileConfig, run_profile
from tests.profile._support import LANGPACKS, corpus_records

SPEC = RecordSpec(text_field="text", id_field="id", source_field="source")
WITH_ID = RecordSpec(text_field="text", id_field="id", require_id=True)

# -- formats -------------------------------------------------------------------------------


def test_jsonl_names_cover_every_extension_with_and_without_compression() -> None:
    assert set(JSONL_NAMES) == {e + c for e in JSONL_EXTENSIONS
                                for c in ("", *COMPRESSED_SUFFIXES)}
    assert len(JSONL_NAMES) == 9 and ".jsonl.zst" in JSONL_NAMES and ".ndjson" in JSONL_NAMES
    assert has_extension("A/B.JSONL.GZ", JSONL_EXTENSIONS)
    assert not has_extension("a.jsonl.bz2", JSONL_EXTENSIONS)
    assert file_format("x.parquet") == file_format("x.pq.zst") == "parquet"
    assert file_format("x.jsonl.gz") == "jsonl" and ".pq.gz" in PARQUET_NAMES


# -- the classifier ------------------------------------------------------------------------

CASES: list[tuple[str, RecordSpec, str | None]] = [
    ('{"text": "a document", "id": "1"}', SPEC, None),
    ('{"text": "a document"}', RecordSpec(), None),
    ('{"text": "no closing brace"', SPEC, "unparsable_line"),
    ("not json at all", SPEC, "unparsable_line"),
    ('{"text": NaN}', SPEC, "unparsable_line"),
    ('{"text": "\\ud800"}', SPEC, "unparsable_line"),  # a lone surrogate
    ("[1, 2, 3]", SPEC, "not_an_object"),
    ('"just a string"', SPEC, "not_an_object"),
    ("42", SPEC, "not_an_object"),
    ("null", SPEC, "not_an_object"),
    ('{"id": "x"}', SPEC, "missing_text"),
    ('{"text": null}', SPEC, "missing_text"),
    ('{"TEXT": "wrong case"}', SPEC, "missing_text"),
    ('{"text": 42}', SPEC, "text_not_a_string"),
    ('{"text": ["a", "b"]}', SPEC, "text_not_a_string"),
    ('{"text": {"a": 1}}', SPEC, "text_not_a_string"),
    ('{"text": true}', SPEC, "text_not_a_string"),
    ('{"text": ""}', SPEC, "empty_text"),
    ('{"text": " \\t\\n\\r "}', SPEC, "empty_text"),
    ('{"text": "\\u3000\\u00a0\\u2028"}', SPEC, "empty_text"),  # Unicode whitespace only
    ('{"text": "\\u200b"}', SPEC, None),  # a zero-width space is not whitespace
    ('{"text": "ok", "id": "1"}', WITH_ID, None),
    ('{"text": "ok", "id": 0}', WITH_ID, None),
    ('{"text": "ok"}', WITH_ID, "missing_id"),
    ('{"text": "ok", "id": null}', WITH_ID, "missing_id"),
    ('{"text": "ok", "id": "  "}', WITH_ID, "missing_id"),
    ('{"text": "", "id": null}', WITH_ID, "empty_text"),  # checks run in REASONS order
    ('{"text": "ok"}', SPEC, None),  # an id that is not required may be absent
]


@pytest.mark.parametrize(("line", "spec", "reason"), CASES)
def test_classify_line(line: str, spec: RecordSpec, reason: str | None) -> None:
    for form in (line, line.encode("utf-8"), memoryview(line.encode("utf-8"))):
        got = classify_line(form, spec)
        if reason is None:
            assert got == json.loads(line)
        else:
            assert isinstance(got, Rejection) and got.reason == reason


def test_every_reason_is_covered_and_unparsable_lines_say_why() -> None:
    assert {r for _, _, r in CASES} - {None} == set(REASONS)
    assert REASONS == ("unparsable_line", "not_an_object", "missing_text", "text_not_a_string",
                       "empty_text", "missing_id")
    got = classify_line(b'{"text": "cut', SPEC)
    assert isinstance(got, Rejection) and got.detail
    bad_utf8 = classify_line(b'{"text": "caf\xe9"}', SPEC)
    assert isinstance(bad_utf8, Rejection) and bad_utf8.reason == "unparsable_line"
    assert classify_record(["a"], SPEC) == Rejection("not_an_object")


def test_source_and_reason_counts() -> None:
    assert source_of({"source": "a"}, "source") == "a"
    assert source_of({"source": 7}, "source") == "7"
    assert source_of({}, "source") == source_of({"source": None}, "source") == "__missing__"
    assert source_of({"source": "a"}, None, "shard.jsonl") == "shard.jsonl"
    assert rejections_by_reason({"missing_text": 2, "empty_text": 0, "unparsable_line": 1.0,
                                 "other": 9}) == {"missing_text": 2, "unparsable_line": 1}


# -- the reader ----------------------------------------------------------------------------

RAW = (b"\xef\xbb\xbf" + b'{"text": "first"}\n'
       b"\n"
       b"   \t\n"
       b'{"text": "crlf"}\r\n'
       b"[1]\n"
       b'{"text": "\xe2\x80\xa8 not a line end"}\n'
       b'{"text": "no final newline"}')


def _expected_lines(raw: bytes) -> list[tuple[int, bytes]]:
    """Every non-blank line with its offset, worked out by hand for RAW."""
    out, pos = [], 3  # the BOM is not part of the first line
    for line in raw[3:].split(b"\n"):
        if line.strip():
            out.append((pos, line))
        pos += len(line) + 1
    return out


def _compressed(tmp_path: Path) -> dict[str, Path]:
    files = {"plain": tmp_path / "c.jsonl", "gz": tmp_path / "c.jsonl.gz",
             "zst": tmp_path / "c.jsonl.zst"}
    files["plain"].write_bytes(RAW)
    files["gz"].write_bytes(gzip.compress(RAW, mtime=0))
    files["zst"].write_bytes(zstandard.ZstdCompressor().compress(RAW))
    return files


def test_iter_lines_over_plain_gz_and_zst(tmp_path: Path) -> None:
    expected = _expected_lines(RAW)
    assert [line for _, line in expected][1] == b'{"text": "crlf"}\r'  # only \n ends a line
    assert len(expected) == 5
    for kind, path in _compressed(tmp_path).items():
        assert list(iter_lines(str(path))) == expected, kind
        assert list(iter_lines(str(path), (0, 10))) == (expected if kind != "plain"
                                                        else expected[:1]), kind
    assert list(split_lines(RAW[3:], base_offset=3)) == expected


def test_a_damaged_or_cut_short_stream_is_never_read_as_less(tmp_path: Path) -> None:
    """Every frame or member of a compressed file is read; a stream cut short raises
    EOFError (zstandard's stream reader used to return nothing for a truncated .zst,
    so every step read it as an empty file); a damaged one an OSError."""
    from curator.corpus.reading import DamagedStream, read_bytes
    z = zstandard.ZstdCompressor()
    many = b"".join(b'{"text": "%d"}\n' % i for i in range(5000))
    cases = {
        "two.jsonl.zst": (z.compress(RAW) + z.compress(b'{"text": "more"}\n'), None),
        "two.jsonl.gz": (gzip.compress(RAW) + gzip.compress(b'{"text": "more"}\n'), None),
        "cut.jsonl.zst": (z.compress(many)[:-9], EOFError),
        "half.jsonl.zst": (z.compress(many)[:len(z.compress(many)) // 2], EOFError),
        "cut.jsonl.gz": (gzip.compress(many)[:-9], EOFError),
        "bad.jsonl.zst": (b"not zstd at all", DamagedStream),
        "bad.jsonl.gz": (gzip.compress(RAW)[:10] + b"\xff" * 40, DamagedStream),
    }
    for name, (data, error) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        if error is None:
            assert read_bytes(str(path)) == RAW + b'{"text": "more"}\n', name
            continue
        with pytest.raises(error):
            read_bytes(str(path))
    assert issubclass(DamagedStream, OSError)  # reported as unreadable wherever OSError is


def test_byte_ranges_hold_every_line_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(1)
    lines = [json.dumps({"text": "x" * rng.randint(0, 40)}) if rng.random() < 0.9 else ""
             for _ in range(300)]
    raw = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "r.jsonl"
    path.write_bytes(raw)
    whole = list(iter_lines(str(path)))
    assert list(split_lines(raw)) == whole
    for block in (1, 7, 64, 500, len(raw)):
        got = [item for start in range(0, len(raw), block)
               for item in iter_lines(str(path), (start, min(start + block, len(raw))))]
        assert got == whole, block
    assert read_bytes(str(path), (len(raw), len(raw) + 5)) == b""


def test_iter_records_classifies_jsonl_and_parquet(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(RAW)
    got = [(pos, r.reason if isinstance(r, Rejection) else r["text"])
           for pos, _, r in iter_records(str(path), None, SPEC)]
    assert [g[1] for g in got] == ["first", "crlf", "not_an_object", "\u2028 not a line end",
                                   "no final newline"]
    table = pa.table({"text": ["a", "", None, " "], "id": ["1", "2", "3", "4"]})
    pq.write_table(table, tmp_path / "t.parquet")
    rows = [(pos, line, r.reason if isinstance(r, Rejection) else r["id"])
            for pos, line, r in iter_records(str(tmp_path / "t.parquet"), None, SPEC)]
    assert rows == [(0, None, "1"), (1, None, "empty_text"), (2, None, "missing_text"),
                    (3, None, "empty_text")]


# -- ingest's own loop classifies as the kernel does -----------------------------------------

HOSTILE = [
    '{"text": "plain", "url": "u"}', "", "  ", "\t", "\x0b\x0c", '{"text": "a"} ',
    ' {"text": "leading space"}', '{"text": "cut', "[]", "[1, 2]", '"s"', "3", "null", "true",
    "{}", '{"text": null}', '{"text": 1.5}', '{"text": 10000000000000000000000000}',
    '{"text": []}', '{"text": {}}', '{"text": false}', '{"text": ""}', '{"text": "   "}',
    '{"text": "\\u3000"}', '{"text": "\\u0085"}', '{"text": "\\u200b"}', '{"text": "\\u001c"}',
    '{"text": "x\\u0000y"}', '{"text": "\\ud83d\\ude00"}', '{"text": "\\udc00"}',
    '{"text": "dup", "text": ""}', '{"text": "", "text": "dup"}', '{"Text": "case"}',
    '{"text": "ok", "url": 100000000000000000000000}', '{"text": "ok", "url": 1.0}',
    '{"text": "ok", "url": [1, {"a": 2.5}]}', '{"text": "ok", "id": null}',
    '{"text": "ok", "id": ""}', '{"text": "ok", "id": " "}', '{"text": "ok", "id": 0}',
    '{"text": "ok", "source": null}', "NaN", '{"text": Infinity}', "{'text': 'single'}",
    '{"text": "trailing comma",}', '{"text": "a"}{"text": "b"}', "\x00",
    '{"text": "tab\tinside"}', '{"text": "ok"}\r', "\r", '{"text": "\u2028"}', "\ufeff{}",
]


def _hostile(rng: random.Random) -> bytes:
    lines = list(HOSTILE)
    for _ in range(400):
        lines.append(rng.choice(HOSTILE) if rng.random() < 0.5 else json.dumps(
            {"text": rng.choice(["", " ", "x", "\u3000", 3, None, "y" * rng.randint(1, 9)]),
             rng.choice(["url", "id", "source"]): rng.choice(["", "a", None, 2, 1.5, " "])}))
    rng.shuffle(lines)
    return b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8") + rng.choice([b"", b"\n"])


@pytest.mark.parametrize("identity", [
    ingest_records.IdentitySpec(source_from="source"),             # the inline accept path
    ingest_records.IdentitySpec(id_from="id", keep_fields=()),     # every record through add
])
def test_ingest_parse_loop_classifies_like_the_kernel(identity: Any) -> None:
    """Ingest parses with its own loop for speed (curator/ingest/records.py parse_jsonl):
    on a hostile UTF-8 file it must see the same lines at the same offsets and give each
    the kernel's verdict."""
    for seed in range(3):
        data = _hostile(random.Random(seed))
        records = ingest_records.PartitionRecords(identity)
        ingest_records.parse_jsonl(data, records, path="h.jsonl", file_index=0)
        got = {r["byte_offset"]: r["reason"] for r in records.rejections}
        got.update((pos, "accepted") for pos in records.ord_pos)
        spec = identity.record_spec
        want = {}
        for offset, line in split_lines(data):
            verdict = classify_line(line, spec)
            want[offset] = verdict.reason if isinstance(verdict, Rejection) else "accepted"
        assert got == want
        assert set(want.values()) >= {"accepted", "unparsable_line", "not_an_object",
                                      "missing_text", "text_not_a_string", "empty_text"}
        assert ("missing_id" in want.values()) == (identity.id_from is not None)


# -- the same malformed file, three steps, one account ----------------------------------------

MALFORMED = ['{"text": "half a rec', "[1, 2, 3]", '"a string"',
             '{"url": "https://x.example/no-text", "source": "s"}', '{"text": null}',
             '{"text": 42, "source": "s"}', '{"text": "", "source": "s"}',
             '{"text": " \\t ", "source": "s"}']
EXPECTED = {"empty_text": 2, "missing_text": 2, "not_an_object": 2, "text_not_a_string": 1,
            "unparsable_line": 1}


@pytest.fixture(scope="module")
def malformed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("malformed")
    good = [json.dumps(r, ensure_ascii=False) for r in corpus_records(60, seed=11)]
    lines = good[:30] + MALFORMED[:4] + [""] + good[30:] + MALFORMED[4:] + ["  "]
    path = root / "in" / "corpus.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8") + b"\r\n")
    return path, len(good)


def test_every_step_reports_the_same_rejections(malformed: tuple[Path, int],
                                                tmp_path: Path) -> None:
    path, n_good = malformed
    n_lines = n_good + len(MALFORMED)

    ingest = run_ingest(IngestConfig(input=str(path), output_dir=str(tmp_path / "ingested")))
    assert ingest["rejections_by_reason"] == EXPECTED
    assert ingest["documents_seen"] == n_lines and ingest["documents_accepted"] == n_good
    on_disk = json.loads((tmp_path / "ingested" / "ingest_report.json").read_text())
    assert on_disk["rejections_by_reason"] == EXPECTED
    rejected_lines = [json.loads(x) for p in (tmp_path / "ingested" / "rejected").glob("*.jsonl")
                      for x in p.read_text().splitlines()]
    assert sorted(r["reason"] for r in rejected_lines) == sorted(
        r for r, n in EXPECTED.items() for _ in range(n))

    profile = run_profile(ProfileConfig(
        input_glob=str(path), output_dir=str(tmp_path / "profile"), language="en",
        langpack_dir=str(LANGPACKS), signals=["word_count", "stopword_ratio"]))
    corpus = profile["corpus"]
    assert corpus["rejections_by_reason"] == EXPECTED
    assert corpus["records_read"] == n_lines and corpus["document_count"] == n_good
    assert corpus["unparsable_lines"] == EXPECTED["unparsable_line"] + EXPECTED["not_an_object"]
    assert corpus["records_without_text"] == (EXPECTED["missing_text"]
                                              + EXPECTED["text_not_a_string"]
                                              + EXPECTED["empty_text"])
    on_disk = json.loads((tmp_path / "profile" / "profile_report.json").read_text())
    assert on_disk["corpus"]["rejections_by_reason"] == EXPECTED

    out = tmp_path / "filtered"
    manifest = run_filter(FilterConfig(input_glob=str(path), output_dir=str(out),
                                       language_codes=[]))
    ledger = json.loads((out / "curation_ledger.json").read_text())
    assert {u["reason"]: u["records"] for u in ledger["failed_units"]} == EXPECTED
    assert ledger["n_input"] == n_lines and ledger["n_success"] == n_good
    assert manifest["input"]["row_count"] == n_lines
    assert manifest["input"]["unparsable_rows"] == sum(EXPECTED.values())
    failed: dict[str, int] = {}
    for p in (out / "rejected").glob("*.jsonl"):
        for line in p.read_text().splitlines():
            reason = json.loads(line)["failed"]
            failed[reason] = failed.get(reason, 0) + 1
    assert failed == EXPECTED
