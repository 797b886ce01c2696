"""``output_format: jsonl+parquet``: every corpus-writing step's Parquet copy holds the
records of its JSONL shards, in order, with the kernel's JSON semantics, one schema for
the step, and digests in the completion artifact; the copy loads with polars and with
Hugging Face ``datasets``."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from curator.config import CorpusStepConfig, validate_config
from curator.errors import CuratorError
from curator.io.parquet_export import export_parquet, shard_order
from curator.steps.registry import STEPS
from tests.steps._worlds import make_world

CORPUS_STEPS = [pytest.param(s, id=s.key) for s in STEPS
                if issubclass(s.config, CorpusStepConfig)]


def _same(got: Any, want: Any) -> bool:
    """A value read from Parquet against the record's: a struct's extra fields are null."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            _same(got.get(k), want.get(k)) for k in {*got, *want})
    if isinstance(want, list):
        return (isinstance(got, list) and len(got) == len(want)
                and all(_same(g, w) for g, w in zip(got, want, strict=True)))
    if isinstance(want, float) and isinstance(got, float) and math.isnan(want):
        return math.isnan(got)
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    return got == want and (isinstance(want, str) == isinstance(got, str))


def _rows_match(parquet: Path, jsonl: Path, json_columns: list[str]) -> None:
    records = [orjson.loads(line) for line in jsonl.read_bytes().splitlines() if line.strip()]
    rows = pl.read_parquet(parquet).to_dicts()
    assert len(rows) == len(records), (parquet, len(rows), len(records))
    for i, (row, rec) in enumerate(zip(rows, records, strict=True)):
        assert set(rec) <= set(row), (i, set(rec) - set(row))
        for key in row:
            want = rec.get(key)
            if key in json_columns:
                want = None if want is None else orjson.dumps(want).decode()
            assert _same(row[key], want), (parquet.name, i, key, row[key], want)


# -- the export itself ---------------------------------------------------------------


def _shards(folder: Path, *shards: list[str]) -> list[Path]:
    paths = []
    for i, lines in enumerate(shards):
        path = folder / f"part_{i}.jsonl"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        paths.append(path)
    return paths


def test_each_field_keeps_its_type_and_a_mixed_field_is_its_json_text(tmp_path: Path) -> None:
    shards = _shards(
        tmp_path,
        ['{"id": "a", "text": "x", "n": 1, "f": 1, "meta": {"lang": "en"}, "tags": ["p"]}',
         '{"id": "b", "text": "y", "n": 2, "f": 2.5, "meta": {"year": 2020}, "ok": true}',
         # the last of duplicate keys wins, as orjson (the kernel) reads it
         '{"id": "c", "text": "spam", "text": "z", "n": 3, "mix": 1}'],
        ['{"id": "d", "text": "w", "n": 4, "mix": "one", "tags": []}',
         '{"id": "e", "text": "v", "n": 9007199254740993, "mix": {"k": [1, 2]}}'],
        [],  # an empty shard: a file with the step's schema and no rows
    )
    block = export_parquet(tmp_path, shards)
    assert block["columns"] == {"id": "String", "text": "String", "n": "Int64",
                                "f": "Float64", "meta": "Struct({'lang': String, "
                                "'year': Int64})", "tags": "List(String)",
                                "ok": "Boolean", "mix": "String"}
    assert block["json_columns"] == ["mix"]  # a number, a string and an object
    assert block["rows"] == 5
    assert [e["rows"] for e in block["shards"]] == [3, 2, 0]
    for shard, entry in zip(shards, block["shards"], strict=True):
        path = tmp_path / entry["name"]
        assert entry["from"] == shard.name
        assert entry["sha256"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        assert pl.read_parquet_schema(path) == pl.read_parquet_schema(
            tmp_path / block["shards"][0]["name"])  # one schema for the step
        _rows_match(path, shard, block["json_columns"])
    z = pl.read_parquet(tmp_path / "parquet" / "part_0.parquet")
    assert z["text"].to_list() == ["x", "y", "z"]
    assert pl.read_parquet(tmp_path / "parquet" / "part_1.parquet")["mix"].to_list() == [
        '"one"', '{"k":[1,2]}']


def test_a_struct_whose_records_hold_different_fields_stays_a_struct(tmp_path: Path) -> None:
    """Every record has the field, each with other keys (no null among the values): a
    struct of all the keys, the absent ones null, not JSON text (a mutation survived)."""
    shards = _shards(tmp_path, ['{"id": "a", "meta": {"lang": "en"}}',
                                '{"id": "b", "meta": {"year": 2020}}'])
    block = export_parquet(tmp_path, shards)
    assert block["json_columns"] == []
    assert block["columns"]["meta"] == "Struct({'lang': String, 'year': Int64})"
    _rows_match(tmp_path / "parquet" / "part_0.parquet", shards[0], [])


def test_a_field_typed_in_one_shard_and_mixed_in_a_later_one_is_json_everywhere(
        tmp_path: Path) -> None:
    shards = _shards(tmp_path, ['{"id": "a", "x": 1}', '{"id": "b", "x": 2}'],
                     ['{"id": "c", "x": "three"}'])
    block = export_parquet(tmp_path, shards)
    assert block["json_columns"] == ["x"]
    assert pl.read_parquet(tmp_path / "parquet" / "part_0.parquet")["x"].to_list() == ["1", "2"]
    assert pl.read_parquet(tmp_path / "parquet" / "part_1.parquet")["x"].to_list() == [
        '"three"']


def test_polars_coercions_are_refused_value_by_value(tmp_path: Path) -> None:
    """polars would print a nested number as a string, truncate a float in an int list,
    drop a struct field or round an int into a float: each such field is JSON text."""
    shards = _shards(tmp_path, [
        '{"id": "a", "s": {"k": 1}, "l": [1, 2], "big": 9007199254740993}',
        '{"id": "b", "s": {"k": "x"}, "l": [[3]], "big": 0.5}',
    ])
    block = export_parquet(tmp_path, shards)
    assert block["json_columns"] == ["big", "l", "s"]
    _rows_match(tmp_path / "parquet" / "part_0.parquet", shards[0], block["json_columns"])


def test_twelve_shards_are_copied_and_listed_in_numeric_order(tmp_path: Path) -> None:
    """``part_10`` comes after ``part_9``, not after ``part_1``: the shards a step lists
    (``shard_order``, what the steps hand the export), the copy's block and its rows."""
    _shards(tmp_path, *[[json.dumps({"id": i})] for i in range(12)])
    (tmp_path / "part_x.jsonl").write_text('{"id": 12}\n', encoding="utf-8")
    (tmp_path / "part_a.jsonl").write_text('{"id": 13}\n', encoding="utf-8")
    shards = shard_order(tmp_path.glob("part_*.jsonl"))
    assert [p.stem for p in shards] == [f"part_{i}" for i in range(12)] + ["part_a", "part_x"]
    block = export_parquet(tmp_path, shards)
    assert [e["from"] for e in block["shards"]] == [p.name for p in shards]
    ids = [i for e in block["shards"] for i in pl.read_parquet(tmp_path / e["name"])["id"]]
    assert ids == [*range(12), 13, 12]


@pytest.mark.parametrize("line", ['{"id": ', '["not", "an", "object"]'])
def test_a_line_that_is_not_a_record_is_an_error_not_a_lost_row(tmp_path: Path,
                                                                  line: str) -> None:
    shards = _shards(tmp_path, ['{"id": "a"}', line])
    with pytest.raises(CuratorError) as err:
        export_parquet(tmp_path, shards)
    assert err.value.error_id == "parquet_export_failed"


def test_the_same_shards_give_the_same_bytes(tmp_path: Path) -> None:
    lines = [json.dumps({"id": str(i), "text": "w " * i, "score": i / 7}) for i in range(500)]
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        export_parquet(tmp_path / name, _shards(tmp_path / name, lines[:300], lines[300:]))
    for part in ("part_0", "part_1"):
        assert ((tmp_path / "one" / "parquet" / f"{part}.parquet").read_bytes()
                == (tmp_path / "two" / "parquet" / f"{part}.parquet").read_bytes())


# -- every corpus-writing step --------------------------------------------------------


@pytest.mark.parametrize("spec", CORPUS_STEPS)
def test_each_corpus_step_lists_a_parquet_copy_of_what_it_wrote(spec: Any,
                                                                tmp_path: Path) -> None:
    world = make_world(spec.key, spec.input_key, tmp_path)
    out = tmp_path / "out"
    cfg = validate_config(spec.config, world.config(out, output_format="jsonl+parquet"))
    result = spec.run(cfg)
    block = result["parquet"]
    on_disk = json.loads(spec.completion_path(cfg.model_dump()).read_text())
    assert on_disk["parquet"] == block
    jsonl = sorted(p.relative_to(out).as_posix() for p in out.rglob("part_*.jsonl")
                   if p.parent.name not in ("rejected", "removed"))
    assert jsonl, "the world writes a corpus"
    assert sorted(e["from"] for e in block["shards"]) == jsonl
    assert block["rows"] == sum(e["rows"] for e in block["shards"]) > 0
    assert sorted(p.relative_to(out).as_posix() for p in (out / "parquet").rglob("*")
                  if p.is_file()) == sorted(e["name"] for e in block["shards"])
    for entry in block["shards"]:
        path = out / entry["name"]
        assert entry["sha256"] == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        _rows_match(path, out / entry["from"], block["json_columns"])

    # a run without the copy removes the earlier one: the output says what it holds
    # (the filter refuses an output dir holding shards, and a refusal leaves it as it was)
    again = validate_config(spec.config, world.config(out))
    try:
        assert "parquet" not in spec.run(again)
    except CuratorError as err:
        assert err.error_id == "stale_filter_output", err
        assert all((out / e["name"]).is_file() for e in block["shards"])
        return
    assert not (out / "parquet").exists()


def _hf_rows(files: list[Path], kind: str, cache: Path) -> list[dict[str, Any]]:
    datasets = pytest.importorskip("datasets", reason="the test extra installs datasets")
    ds = datasets.load_dataset(kind, data_files=[str(p) for p in files], split="train",
                               cache_dir=str(cache))
    return list(ds)


@pytest.mark.slow
def test_the_filtered_corpus_and_a_tier_load_with_datasets_and_polars(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    by_key = {s.key: s for s in STEPS}
    outputs = {}
    for key in ("filter", "subset"):
        spec = by_key[key]
        world = make_world(key, spec.input_key, tmp_path / key)
        out = tmp_path / key / "out"
        result = spec.run(validate_config(
            spec.config, world.config(out, output_format="jsonl+parquet")))
        outputs[key] = (out, result["parquet"])
    for key, (out, block) in outputs.items():
        entries = block["shards"]
        if key == "subset":  # the smallest tier
            tier = entries[0]["from"].split("/")[0]
            entries = [e for e in entries if e["from"].startswith(tier + "/")]
        jsonl = [out / e["from"] for e in entries]
        records = [orjson.loads(line) for p in jsonl
                   for line in p.read_bytes().splitlines() if line.strip()]
        ids = [r["id"] if "id" in r else r["url"] for r in records]
        id_key = "id" if "id" in records[0] else "url"
        parquet = [out / e["name"] for e in entries]

        frame = pl.read_parquet(parquet)  # polars, the files in manifest order
        assert frame[id_key].to_list() == ids
        assert frame["text"].to_list() == [r["text"] for r in records]
        scanned = pl.scan_parquet(out / "parquet" / "**" / "*.parquet").collect()
        assert scanned.height == block["rows"]

        hf = _hf_rows(parquet, "parquet", tmp_path / "hf" / key)
        assert [r[id_key] for r in hf] == ids
        assert [r["text"] for r in hf] == [r["text"] for r in records]
        # and the JSONL shards themselves, as docs/user-guide.md shows
        hf_json = _hf_rows(jsonl, "json", tmp_path / "hf-json" / key)
        assert [r[id_key] for r in hf_json] == ids
