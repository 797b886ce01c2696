"""Every ``curate ingest`` config key and every ``on_duplicate`` mode, in this process
(inline executor), on real files in ``tmp_path``."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curator.artifacts import file_digest
from curator.errors import CuratorError
from curator.steps.ingest import IngestConfig
from tests.ingest._support import (
    artifacts,
    ingest,
    ingest_error,
    jline,
    read_jsonl,
    read_report,
    recipe_id,
    rejections,
    shard_names,
    shard_records,
    write_lines,
    write_records,
)


def _docs(n: int, tag: str = "d") -> list[dict]:
    return [{"text": f"{tag} text {i}", "url": f"https://{tag}/{i}"} for i in range(n)]


# -- input -------------------------------------------------------------------------------


def _input_tree(root: Path) -> dict[str, list[dict]]:
    """A tree with every readable extension, a subdirectory, a sidecar and a stray file."""
    files = {
        "a.jsonl": _docs(2, "a"),
        "b.json": _docs(1, "b"),
        "c.ndjson": _docs(1, "c"),
        "sub/d.jsonl": _docs(2, "d"),
    }
    for rel, docs in files.items():
        write_records(root / rel, docs)
    # Not input: a sidecar report of another step and a file with another extension.
    write_records(root / "profile_report.json", [{"text": "sidecar, never a document"}])
    write_records(root / "notes.txt", [{"text": "not a corpus extension"}])
    return files


def test_input_as_a_directory_reads_every_corpus_file_in_path_order(tmp_path: Path) -> None:
    files = _input_tree(tmp_path / "in")
    report = ingest(str(tmp_path / "in"), tmp_path / "out")
    expected = [d["text"] for rel in sorted(files) for d in files[rel]]
    assert [r["text"] for r in shard_records(tmp_path / "out")] == expected
    assert report["input"]["files"] == 4
    assert report["input"]["glob"] == str(tmp_path / "in")


def test_input_as_a_recursive_glob(tmp_path: Path) -> None:
    files = _input_tree(tmp_path / "in")
    report = ingest(str(tmp_path / "in" / "**" / "*.jsonl"), tmp_path / "out")
    expected = [d["text"] for rel in ("a.jsonl", "sub/d.jsonl") for d in files[rel]]
    assert [r["text"] for r in shard_records(tmp_path / "out")] == expected
    assert report["input"]["files"] == 2


def test_input_as_a_list_is_sorted_and_unique(tmp_path: Path) -> None:
    files = _input_tree(tmp_path / "in")
    listed = [str(tmp_path / "in" / "sub" / "d.jsonl"), str(tmp_path / "in" / "a.jsonl"),
              str(tmp_path / "in" / "a.jsonl")]
    report = ingest(listed, tmp_path / "out")
    expected = [d["text"] for rel in ("a.jsonl", "sub/d.jsonl") for d in files[rel]]
    assert [r["text"] for r in shard_records(tmp_path / "out")] == expected
    assert report["input"]["files"] == 2
    assert report["documents_seen"] == 4


# -- output_dir --------------------------------------------------------------------------


def test_output_dir_default_is_output_ingested_under_the_working_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_records(tmp_path / "in" / "a.jsonl", _docs(3))
    monkeypatch.chdir(tmp_path)
    cfg = IngestConfig(input=str(tmp_path / "in"))
    assert cfg.output_dir == "./output/ingested"
    from curator.steps.ingest import run_ingest

    report = run_ingest(cfg)
    out = tmp_path / "output" / "ingested"
    assert report["output_dir"] == str(out)
    assert shard_names(out) == ["part_0.jsonl"]
    assert read_report(out)["documents_accepted"] == 3


def test_output_dir_holds_shards_rejections_and_report_and_nothing_else(tmp_path: Path) -> None:
    write_lines(tmp_path / "in" / "a.jsonl", [jline(d) for d in _docs(2)] + ["{bad"])
    out = tmp_path / "deep" / "out"
    ingest(str(tmp_path / "in"), out)
    produced = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    rejected = [p.name for p in (out / "rejected").iterdir()]
    assert len(rejected) == 1
    assert produced == sorted([
        Path("in/a.jsonl"), Path("deep/out/part_0.jsonl"), Path("deep/out/ingest_report.json"),
        Path("deep/out/rejected") / rejected[0],
    ])


def test_a_rerun_replaces_the_previous_artifacts(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", _docs(7))
    ingest(str(tmp_path / "in"), tmp_path / "out", shard_size=2)
    assert len(shard_names(tmp_path / "out")) == 4
    write_records(tmp_path / "in" / "a.jsonl", _docs(3))
    ingest(str(tmp_path / "in"), tmp_path / "out", shard_size=2)
    assert shard_names(tmp_path / "out") == ["part_0.jsonl", "part_1.jsonl"]
    assert len(shard_records(tmp_path / "out")) == 3


# -- format ------------------------------------------------------------------------------


def _parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("fmt", ["auto", "jsonl"])
def test_format_jsonl(tmp_path: Path, fmt: str) -> None:
    write_records(tmp_path / "in" / "a.jsonl", _docs(2))
    report = ingest(str(tmp_path / "in"), tmp_path / "out", format=fmt)
    assert report["input"]["format"] == "jsonl"
    assert len(shard_records(tmp_path / "out")) == 2


@pytest.mark.parametrize("fmt", ["auto", "parquet"])
def test_format_parquet(tmp_path: Path, fmt: str) -> None:
    _parquet(tmp_path / "in" / "a.parquet", _docs(2))
    _parquet(tmp_path / "in" / "b.pq", _docs(1, "b"))
    report = ingest(str(tmp_path / "in"), tmp_path / "out", format=fmt)
    assert report["input"]["format"] == "parquet"
    assert report["encodings_used"] == {"parquet": 3}
    assert [r["text"] for r in shard_records(tmp_path / "out")] == [
        "d text 0", "d text 1", "b text 0"]


@pytest.mark.parametrize("fmt", ["auto", "jsonl", "parquet"])
def test_format_refuses_a_mixed_set(tmp_path: Path, fmt: str) -> None:
    write_records(tmp_path / "in" / "a.jsonl", _docs(2))
    _parquet(tmp_path / "in" / "b.parquet", _docs(2, "b"))
    exc = ingest_error(str(tmp_path / "in"), tmp_path / "out", format=fmt)
    assert exc.error_id == "mixed_formats"
    assert not shard_names(tmp_path / "out")


# -- text_field --------------------------------------------------------------------------


def test_text_field_names_the_column_that_becomes_text(tmp_path: Path) -> None:
    recs = [{"content": "the body", "url": "u0", "text": "not this"},
            {"text": "no content field", "url": "u1"}]
    write_records(tmp_path / "in" / "a.jsonl", recs)
    report = ingest(str(tmp_path / "in"), tmp_path / "out", text_field="content",
                    id_fields=["url", "content"], keep_fields=["url", "text"])
    [doc] = shard_records(tmp_path / "out")
    assert doc == {"text": "the body", "id": recipe_id(recs[0], ["url", "content"]),
                   "source": "unknown", "url": "u0"}
    [rej] = rejections(tmp_path / "out")
    assert (rej["line"], rej["reason"]) == (2, "missing_text")
    assert report["counts"]["skipped_missing_text"] == 1


# -- identity: id_from, id_fields, id_prefix ---------------------------------------------


def test_id_from_takes_ids_verbatim_as_strings(tmp_path: Path) -> None:
    recs = [{"doc_id": "A-1", "text": "one"}, {"doc_id": 7, "text": "two"},
            {"text": "no id"}, {"doc_id": "  ", "text": "blank id"}, {"doc_id": None, "text": "x"}]
    write_records(tmp_path / "in" / "a.jsonl", recs)
    report = ingest(str(tmp_path / "in"), tmp_path / "out", id_from="doc_id")
    assert [(r["id"], r["text"]) for r in shard_records(tmp_path / "out")] == [
        ("A-1", "one"), ("7", "two")]
    assert [(r["line"], r["reason"]) for r in rejections(tmp_path / "out")] == [
        (3, "missing_id"), (4, "missing_id"), (5, "missing_id")]
    assert report["identity"]["source"] == "corpus"
    assert report["identity"]["field"] == "doc_id"
    assert report["counts"]["skipped_missing_id"] == 3


def test_id_from_does_not_require_text_in_id_fields(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", [{"doc_id": "x", "text": "t"}])
    ingest(str(tmp_path / "in"), tmp_path / "out", id_from="doc_id", id_fields=["url"])
    assert shard_records(tmp_path / "out")[0]["id"] == "x"


RECIPE_RECORDS = [
    {"text": "plain", "url": "https://a/1"},
    {"text": "no url"},
    {"text": "Grüße, 東京 — “quoted”", "url": "https://ü/2"},  # ensure_ascii=False matters
    {"text": "nested", "url": "u", "meta": {"b": 1, "a": [2, {"z": 0, "y": None}]}},
    {"text": "numbers", "url": 12, "meta": 1.5},
    {"text": "bool", "url": True, "meta": None},
]


@pytest.mark.parametrize(
    ("id_fields", "prefix"),
    [(["url", "text"], ""), (["text"], ""), (["meta", "text", "url"], "web-"),
     (["text", "missing"], "p:")],
)
def test_minted_ids_follow_the_documented_recipe(tmp_path: Path, id_fields: list[str],
                                                 prefix: str) -> None:
    write_records(tmp_path / "in" / "a.jsonl", RECIPE_RECORDS)
    report = ingest(str(tmp_path / "in"), tmp_path / "out", id_fields=id_fields,
                    id_prefix=prefix)
    ids = [r["id"] for r in shard_records(tmp_path / "out")]
    assert ids == [recipe_id(r, id_fields, prefix) for r in RECIPE_RECORDS]
    assert all(i.startswith(prefix) and re.fullmatch(r"[0-9a-f]{64}", i[len(prefix):])
               for i in ids)
    ident = report["identity"]
    assert (ident["source"], ident["fields"], ident["prefix"]) == ("minted", id_fields, prefix)


def test_minted_ids_from_parquet_values_use_default_str(tmp_path: Path) -> None:
    rows = [{"text": "t0", "ts": dt.datetime(2024, 5, 1, 12, 30), "n": 1},
            {"text": "t1", "ts": dt.datetime(1999, 12, 31, 23, 59, 59), "n": 2}]
    _parquet(tmp_path / "in" / "a.parquet", rows)
    ingest(str(tmp_path / "in"), tmp_path / "out", id_fields=["ts", "text"],
           keep_fields=["ts", "n"])
    values = pq.read_table(tmp_path / "in" / "a.parquet").to_pylist()
    out = shard_records(tmp_path / "out")
    assert [r["id"] for r in out] == [recipe_id(v, ["ts", "text"]) for v in values]
    # Datetimes are written in ISO format; other kept values unchanged.
    assert [(r["ts"], r["n"]) for r in out] == [("2024-05-01T12:30:00", 1),
                                                ("1999-12-31T23:59:59", 2)]


def test_id_fields_without_text_field_is_refused(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", _docs(2))
    [(error_id, _)] = IngestConfig(input="x", id_fields=["url"]).preflight()
    assert error_id == "invalid_identity_fields"
    exc = ingest_error(str(tmp_path / "in"), tmp_path / "out", id_fields=["url"],
                       text_field="text")
    assert exc.error_id == "invalid_identity_fields"
    exc = ingest_error(str(tmp_path / "in"), tmp_path / "out", text_field="body")
    assert exc.error_id == "invalid_identity_fields"


# -- source_from / source ----------------------------------------------------------------


def test_source_from_a_column_missing_values_become_unknown(tmp_path: Path) -> None:
    recs = [{"text": "a", "site": "wiki"}, {"text": "b"}, {"text": "c", "site": ""},
            {"text": "d", "site": None}, {"text": "e", "site": 42}]
    write_records(tmp_path / "in" / "a.jsonl", recs)
    ingest(str(tmp_path / "in"), tmp_path / "out", source_from="site")
    assert [r["source"] for r in shard_records(tmp_path / "out")] == [
        "wiki", "unknown", "unknown", "unknown", "42"]


def test_source_constant(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "a", "source": "ignored"},
                                                {"text": "b"}])
    ingest(str(tmp_path / "in"), tmp_path / "out", source="common-crawl")
    assert [r["source"] for r in shard_records(tmp_path / "out")] == ["common-crawl"] * 2


def test_source_defaults_to_unknown(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "a", "source": "in the data"}])
    ingest(str(tmp_path / "in"), tmp_path / "out")
    assert shard_records(tmp_path / "out")[0]["source"] == "unknown"


def test_source_from_and_source_together_are_refused(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", _docs(1))
    exc = ingest_error(str(tmp_path / "in"), tmp_path / "out", source_from="s", source="c")
    assert exc.error_id == "config_error"


# -- keep_fields -------------------------------------------------------------------------


def test_keep_fields_keeps_only_the_listed_columns_in_order(tmp_path: Path) -> None:
    recs = [{"text": "a", "url": "u", "lang": "en", "junk": 1, "html": "<p>"},
            {"text": "b", "lang": "fr", "extra": {"x": 1}}]
    write_records(tmp_path / "in" / "a.jsonl", recs)
    ingest(str(tmp_path / "in"), tmp_path / "out", keep_fields=["lang", "url"])
    lines = (tmp_path / "out" / "part_0.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    assert [list(d) for d in docs] == [["text", "id", "source", "lang", "url"]] * 2
    assert [(d["lang"], d["url"]) for d in docs] == [("en", "u"), ("fr", None)]


def test_keep_fields_default_is_url_and_empty_keeps_none(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "a", "url": "u", "lang": "en"}])
    ingest(str(tmp_path / "in"), tmp_path / "out")
    assert list(shard_records(tmp_path / "out")[0]) == ["text", "id", "source", "url"]
    ingest(str(tmp_path / "in"), tmp_path / "out2", keep_fields=[])
    assert list(shard_records(tmp_path / "out2")[0]) == ["text", "id", "source"]


def test_keep_fields_cannot_override_text_id_or_source(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl",
                  [{"body": "real text", "text": "other", "id": "in-data", "source": "s"}])
    ingest(str(tmp_path / "in"), tmp_path / "out", text_field="body", id_fields=["body"],
           keep_fields=["text", "id", "source", "body"])
    [doc] = shard_records(tmp_path / "out")
    assert doc == {"text": "real text", "id": recipe_id({"body": "real text"}, ["body"]),
                   "source": "unknown"}


# -- shard_size and partition_size -------------------------------------------------------


def test_shard_size_cuts_accepted_records_in_input_order(tmp_path: Path) -> None:
    docs = _docs(7)
    write_records(tmp_path / "in" / "a.jsonl", docs)
    report = ingest(str(tmp_path / "in"), tmp_path / "out", shard_size=3)
    out = tmp_path / "out"
    assert shard_names(out) == ["part_0.jsonl", "part_1.jsonl", "part_2.jsonl"]
    assert [len(read_jsonl(out / n)) for n in shard_names(out)] == [3, 3, 1]
    assert [r["text"] for r in shard_records(out)] == [d["text"] for d in docs]
    assert report["shards"] == [
        {"name": f"part_{i}.jsonl", "rows": rows, "sha256": file_digest(out / f"part_{i}.jsonl")}
        for i, rows in enumerate([3, 3, 1])
    ]


def test_shard_size_across_many_partitions_and_dropped_duplicates(tmp_path: Path) -> None:
    """Shards are cut over the concatenation of partitions, after duplicates are dropped."""
    files = {f"f{i}.jsonl": _docs(5, f"f{i}") for i in range(4)}
    files["f2.jsonl"][1] = dict(files["f0.jsonl"][3])  # a later copy, dropped
    for name, docs in files.items():
        write_records(tmp_path / "in" / name, docs)
    report = ingest(str(tmp_path / "in"), tmp_path / "out", shard_size=4, partition_size=200,
                    on_duplicate="drop")
    assert report["partitions"]["parse"] >= 4
    out = tmp_path / "out"
    expected = [d["text"] for n in sorted(files) for d in files[n]]
    del expected[5 * 2 + 1]
    assert [r["text"] for r in shard_records(out)] == expected
    assert [len(read_jsonl(out / n)) for n in shard_names(out)] == [4, 4, 4, 4, 3]


def _big_file(path: Path) -> list[str]:
    """A file worth splitting: BOM, CRLF lines, blank lines, bad lines, duplicates."""
    lines = []
    for i in range(300):
        if i % 41 == 7:
            lines.append("{not json")
        elif i % 53 == 11:
            lines.append("")
        elif i % 37 == 5:
            lines.append(jline({"text": "dup " + str(i % 3), "url": "same"}))
        else:
            lines.append(jline({"text": f"doc {i} " + "x" * (i % 50), "url": f"u{i}"}))
    data = "\ufeff" + "".join(line + ("\r\n" if i % 5 == 0 else "\n")
                              for i, line in enumerate(lines))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8"))
    return lines


def test_partition_size_splits_a_big_file_with_identical_output(tmp_path: Path) -> None:
    _big_file(tmp_path / "in" / "big.jsonl")
    size = (tmp_path / "in" / "big.jsonl").stat().st_size
    whole = ingest(str(tmp_path / "in"), tmp_path / "whole", on_duplicate="drop", shard_size=40)
    split = ingest(str(tmp_path / "in"), tmp_path / "split", on_duplicate="drop", shard_size=40,
                   partition_size=size // 9)
    assert whole["partitions"]["parse"] == 1
    assert split["partitions"]["parse"] >= 9
    for name in shard_names(tmp_path / "whole"):
        assert (tmp_path / "whole" / name).read_bytes() == (tmp_path / "split" / name).read_bytes()
    assert shard_names(tmp_path / "whole") == shard_names(tmp_path / "split")
    assert rejections(tmp_path / "whole") == rejections(tmp_path / "split")
    assert len(rejections(tmp_path / "whole")) > 5
    keys = ("documents_seen", "documents_accepted", "rejections_by_reason", "counts", "shards",
            "encodings_used", "files_with_bom")
    assert {k: whole[k] for k in keys} == {k: split[k] for k in keys}
    assert whole["files_with_bom"] == 1


def test_partition_size_accepts_units(tmp_path: Path) -> None:
    _big_file(tmp_path / "in" / "big.jsonl")
    report = ingest(str(tmp_path / "in"), tmp_path / "out", on_duplicate="drop",
                    partition_size="2KiB")
    size = (tmp_path / "in" / "big.jsonl").stat().st_size
    assert report["partitions"]["parse"] in range(size // 2048 - 1, size // 2048 + 3)


# -- on_duplicate ------------------------------------------------------------------------


def _dup_corpus(root: Path) -> dict[str, list[dict]]:
    """Ids given in the data (id_from) so copies of one id can differ in text.

    Groups: X (4 copies: in path order b/1.jsonl:2, b/1.jsonl:4, c.jsonl:1, c.jsonl:3),
    Y (2), Z (2), W (2); "X-1" is a real id.
    """
    files = {
        "a/2.jsonl": [{"doc_id": "Y", "text": "Y first"}, {"doc_id": "X-1", "text": "real X-1"},
                      {"doc_id": "W", "text": "W first"}],
        "b/1.jsonl": [{"doc_id": "Z", "text": "Z first"}, {"doc_id": "X", "text": "X first"},
                      {"doc_id": "Y", "text": "Y second"}, {"doc_id": "X", "text": "X second"}],
        "c.jsonl": [{"doc_id": "X", "text": "X third"}, {"doc_id": "Z", "text": "Z second"},
                    {"doc_id": "X", "text": "X fourth"}, {"doc_id": "W", "text": "W second"},
                    {"doc_id": "U", "text": "unique"}],
    }
    for rel, recs in files.items():
        write_records(root / rel, recs)
    return files


def test_on_duplicate_refuse_reports_counts_and_three_examples(tmp_path: Path) -> None:
    _dup_corpus(tmp_path / "in")
    with pytest.raises(CuratorError) as info:
        ingest(str(tmp_path / "in"), tmp_path / "out", id_from="doc_id")
    exc = info.value
    assert exc.error_id == "duplicate_documents"
    # 12 records, groups X(4) Y(2) Z(2) W(2): 6 later copies in 4 groups.
    assert "6 duplicate copies in 4 groups" in exc.message
    examples = exc.details["examples"]
    # the three groups whose first copy comes first in input order: Y, W (a/2), Z (b/1)
    assert [e["id"] for e in examples] == ["Y", "W", "Z"]
    for ex in examples:
        assert f"{ex['id']} x{ex['copies']}" in exc.message
    assert "X x4" not in exc.message
    a2 = str(tmp_path / "in" / "a" / "2.jsonl")
    b1 = str(tmp_path / "in" / "b" / "1.jsonl")
    assert examples[0]["at"] == [{"path": a2, "line": 1, "byte_offset": 0},
                                 {"path": b1, "line": 3,
                                  "byte_offset": (tmp_path / "in/b/1.jsonl").read_bytes()
                                  .index(b'{"doc_id": "Y"')}]
    assert f"{a2}:1" in exc.message
    report = read_report(tmp_path / "out")
    assert report["error"]["error_id"] == "duplicate_documents"
    assert report["duplicates"]["copies"] == 6 and report["duplicates"]["groups"] == 4
    assert report["counts"]["duplicate_ids"] == 6
    assert not shard_names(tmp_path / "out")


def test_on_duplicate_refuse_is_the_default(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", _docs(2) + _docs(1))
    assert IngestConfig(input="x").on_duplicate == "refuse"
    exc = ingest_error(str(tmp_path / "in"), tmp_path / "out")
    assert exc.error_id == "duplicate_documents"
    assert "1 duplicate copies in 1 groups" in exc.message


def test_on_duplicate_drop_keeps_the_first_copy_in_path_then_line_order(tmp_path: Path) -> None:
    files = _dup_corpus(tmp_path / "in")
    # Many partitions and a two-record shard size: "first" must not depend on them.
    report = ingest(str(tmp_path / "in"), tmp_path / "out", id_from="doc_id",
                    on_duplicate="drop", partition_size=40, shard_size=2)
    out = shard_records(tmp_path / "out")
    assert [(r["id"], r["text"]) for r in out] == [
        ("Y", "Y first"), ("X-1", "real X-1"), ("W", "W first"), ("Z", "Z first"),
        ("X", "X first"), ("U", "unique")]
    dup_file = tmp_path / "out" / "rejected" / "duplicates.jsonl"
    dups = read_jsonl(dup_file)
    path = {rel: str(tmp_path / "in" / rel) for rel in files}

    def at(rel: str, line: int) -> dict:
        data = (tmp_path / "in" / rel).read_bytes()
        offset = sum(len(x) + 1 for x in data.split(b"\n")[: line - 1])
        return {"path": path[rel], "line": line, "byte_offset": offset}

    def dup(rel: str, line: int, doc_id: str, first: tuple[str, int]) -> dict:
        return {**at(rel, line), "reason": "duplicate_id", "id": doc_id,
                "first_copy": at(*first)}

    assert dups == [
        dup("b/1.jsonl", 3, "Y", ("a/2.jsonl", 1)),
        dup("b/1.jsonl", 4, "X", ("b/1.jsonl", 2)),
        dup("c.jsonl", 1, "X", ("b/1.jsonl", 2)),
        dup("c.jsonl", 2, "Z", ("b/1.jsonl", 1)),
        dup("c.jsonl", 3, "X", ("b/1.jsonl", 2)),
        dup("c.jsonl", 4, "W", ("a/2.jsonl", 3)),
    ]
    assert report["rejections_by_reason"] == {"duplicate_id": 6}
    assert report["counts"]["duplicate_ids"] == 6 and report["counts"]["duplicate_groups"] == 4
    assert report["balance"] == {"seen": 12, "accepted": 6, "rejected": 6, "ok": True}
    assert report["counts"]["written"] == 6


def test_on_duplicate_drop_with_minted_ids_across_files(tmp_path: Path) -> None:
    same = {"text": "same", "url": "u"}
    write_records(tmp_path / "in" / "b.jsonl", [same, {"text": "b", "url": "u"}])
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "a", "url": "u"}, same, same])
    report = ingest(str(tmp_path / "in"), tmp_path / "out", on_duplicate="drop")
    assert [r["text"] for r in shard_records(tmp_path / "out")] == ["a", "same", "b"]
    a = str(tmp_path / "in" / "a.jsonl")
    dups = read_jsonl(tmp_path / "out" / "rejected" / "duplicates.jsonl")
    assert [(d["path"], d["line"], d["first_copy"]["line"]) for d in dups] == [
        (a, 3, 2), (str(tmp_path / "in" / "b.jsonl"), 1, 2)]
    assert {d["id"] for d in dups} == {recipe_id(same)}
    assert report["counts"]["duplicate_ids"] == 2


def test_on_duplicate_suffix_renames_later_copies_uniquely(tmp_path: Path) -> None:
    _dup_corpus(tmp_path / "in")
    report = ingest(str(tmp_path / "in"), tmp_path / "out", id_from="doc_id",
                    on_duplicate="suffix", partition_size=40)
    out = shard_records(tmp_path / "out")
    assert [r["text"] for r in out] == [
        "Y first", "real X-1", "W first", "Z first", "X first", "Y second", "X second",
        "X third", "Z second", "X fourth", "W second", "unique"]
    by_text = {r["text"]: r["id"] for r in out}
    ids = [r["id"] for r in out]
    assert len(set(ids)) == len(ids) == 12
    # first copies and the real "X-1" keep their ids
    assert [by_text[t] for t in ("X first", "Y first", "Z first", "W first", "real X-1")] == [
        "X", "Y", "Z", "W", "X-1"]
    for base, later in (("Y", ["Y second"]), ("Z", ["Z second"]), ("W", ["W second"]),
                        ("X", ["X second", "X third", "X fourth"])):
        renamed = [by_text[t] for t in later]
        assert all(re.fullmatch(rf"{base}-\d+", i) for i in renamed), renamed
        assert [int(i.rsplit("-", 1)[1]) for i in renamed] == sorted(
            int(i.rsplit("-", 1)[1]) for i in renamed)
    assert "X-1" not in [by_text[t] for t in ("X second", "X third", "X fourth")]
    assert not (tmp_path / "out" / "rejected" / "duplicates.jsonl").exists()
    assert report["balance"] == {"seen": 12, "accepted": 12, "rejected": 0, "ok": True}
    assert report["counts"]["duplicate_ids"] == 6


def test_on_duplicate_suffix_is_deterministic_across_partitioning(tmp_path: Path) -> None:
    _dup_corpus(tmp_path / "in")
    ingest(str(tmp_path / "in"), tmp_path / "one", id_from="doc_id", on_duplicate="suffix")
    ingest(str(tmp_path / "in"), tmp_path / "many", id_from="doc_id", on_duplicate="suffix",
           partition_size=30)
    assert artifacts(tmp_path / "one") == artifacts(tmp_path / "many")


def _suffix_corpus(root: Path) -> None:
    """Two groups of duplicate ids, ``p`` and ``q``, and real ids ``p-1`` and ``p-2``.

    Input order is the sorted path, then the byte offset: ``q third`` sits at offset 0 of
    the second file, yet comes after both copies of ``q`` in the first file.
    """
    write_records(root / "a" / "1.jsonl", [
        {"doc_id": "p", "text": "p first"},
        {"doc_id": "p-1", "text": "real p-1"},
        {"doc_id": "p-2", "text": "real p-2"},
        {"doc_id": "q", "text": "q first"},
        {"doc_id": "p", "text": "p second"},  # p-1 and p-2 are taken: p-3
        {"doc_id": "q", "text": "q second " + "padding " * 20},  # q-1
    ])
    write_records(root / "b" / "2.jsonl", [
        {"doc_id": "q", "text": "q third"},  # q-2
        {"doc_id": "p", "text": "p third"},  # p-2 is real, p-3 is p second's: p-4
        {"doc_id": "r", "text": "unique"},
    ])


def test_suffix_resolves_an_id_that_collides_more_than_once(tmp_path: Path) -> None:
    """``p-1`` and ``p-2`` both exist, so the second ``p`` needs two steps to a free
    id, and the third must also step over the id the second was given."""
    _suffix_corpus(tmp_path / "in")
    report = ingest(str(tmp_path / "in"), tmp_path / "out", id_from="doc_id",
                    on_duplicate="suffix", partition_size=40)
    out = shard_records(tmp_path / "out")
    ids = [r["id"] for r in out]
    assert len(set(ids)) == len(ids) == 9
    by_text = {r["text"]: r["id"] for r in out}
    assert by_text["real p-1"] == "p-1" and by_text["real p-2"] == "p-2"
    assert (by_text["p first"], by_text["p second"], by_text["p third"]) == ("p", "p-3", "p-4")
    assert report["balance"] == {"seen": 9, "accepted": 9, "rejected": 0, "ok": True}


def test_suffix_numbers_are_exact_and_follow_input_order(tmp_path: Path) -> None:
    """The exact ids, in input order (path, then byte offset), not just a pattern."""
    _suffix_corpus(tmp_path / "in")
    report = ingest(str(tmp_path / "in"), tmp_path / "out", id_from="doc_id",
                    on_duplicate="suffix", partition_size=40)
    out = shard_records(tmp_path / "out")
    assert [(r["text"].split(" padding")[0], r["id"]) for r in out] == [
        ("p first", "p"), ("real p-1", "p-1"), ("real p-2", "p-2"), ("q first", "q"),
        ("p second", "p-3"), ("q second", "q-1"), ("q third", "q-2"), ("p third", "p-4"),
        ("unique", "r"),
    ]
    assert report["counts"]["duplicate_ids"] == 4
    assert report["counts"]["duplicate_groups"] == 2
    assert not (tmp_path / "out" / "rejected" / "duplicates.jsonl").exists()


def test_integers_beyond_64_bits_are_exact_in_ids_and_kept_fields(tmp_path: Path) -> None:
    """The recipe hashes the values ``json.loads`` gives: big integers stay integers."""
    lines = ['{"text": "big", "url": 123456789012345678901234567890, "n": 18446744073709551616}',
             '{"text": "nested", "url": {"k": [99999999999999999999999]}, "n": 1}',
             '{"text": "small", "url": 9223372036854775807, "n": 2.5}']
    write_lines(tmp_path / "in" / "a.jsonl", lines)
    ingest(str(tmp_path / "in"), tmp_path / "out", keep_fields=["url", "n"])
    out = shard_records(tmp_path / "out")
    recs = [json.loads(line) for line in lines]
    assert [d["id"] for d in out] == [recipe_id(r) for r in recs]
    assert [(d["url"], d["n"]) for d in out] == [(r["url"], r["n"]) for r in recs]
    raw = (tmp_path / "out" / "part_0.jsonl").read_text()
    assert '"url":123456789012345678901234567890' in raw.replace(" ", "")


def test_stale_temp_files_of_a_killed_run_do_not_survive(tmp_path: Path) -> None:
    """A writer killed mid-write leaves ``.<name>.tmp-<pid>`` beside its target."""
    write_lines(tmp_path / "in" / "a.jsonl", [jline(d) for d in _docs(3)] + ["{bad"])
    out = tmp_path / "out"
    stale = [out / ".part_0.jsonl.tmp-999999", out / ".part_7.jsonl.tmp-999998",
             out / ".ingest_report.json.tmp-999999", out / "rejected" / ".abc.jsonl.tmp-99999"]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b'{"text": "half a rec')
    ingest(str(tmp_path / "in"), out)
    assert [p for p in stale if p.exists()] == []
    assert sorted(p.name for p in out.iterdir()) == ["ingest_report.json", "part_0.jsonl",
                                                    "rejected"]
