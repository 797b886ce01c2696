"""``output_format: jsonl+parquet`` is made by the units on the executor, not by the
driver (issue 26, :mod:`curator.io.parquet_copy`): on the process pool, the copy and the
completion artifact's ``parquet`` block are byte for byte what the one-process export
(:func:`curator.io.parquet_export.export_parquet`) makes of the same JSONL shards, and
the driver (this process; the pool's workers are spawned) opens no shard."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import curator.io.parquet_copy as parquet_copy
import curator.io.parquet_export as parquet_export
from curator.io.parquet_export import export_parquet, shard_order
from curator.steps.filter import FilterConfig, run_filter
from executors import make_executor
from tests.filter._support import corpus_records, filter_keys, manifest, write_shards


def _extras(i: int, n: int) -> dict[str, Any]:
    """Fields whose types differ between shards (and within each): every case the
    one-process export resolves by converting a shard again or widening it."""
    early = i < n // 2
    rec: dict[str, Any] = {
        "kind": i if early else f"k{i}",  # int, then string: JSON text for the step
        "score": i if early else i + 0.5,  # int, then float: widened
        "meta": {"a": i} if early else {"a": i, "b": str(i)},  # a struct gains a field
        "mix": i if i % 2 else str(i),  # mixed inside every shard
    }
    if not early:
        rec["tags"] = [f"t{i}", "x"]  # absent from the early shards
    return rec


def test_the_units_write_the_one_process_copy(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    records = corpus_records(120, seed=5)
    records = [{**r, **_extras(i, len(records))} for i, r in enumerate(records)]
    inp = write_shards(tmp_path / "in", records, shards=3)

    def no_driver_read(path: Path) -> list[dict[str, Any]]:
        raise AssertionError(f"the driver read shard {path}")

    monkeypatch.setattr(parquet_export, "_records", no_driver_read)
    monkeypatch.setattr(parquet_copy, "_records", no_driver_read)
    out = tmp_path / "out"
    cfg = FilterConfig(**filter_keys(inp, out, partition_size="16KB", output_format="jsonl+parquet",
                                     quality_filters={"min_words": None, "max_words": None},
                                     language_codes=[]),
                       execution={"executor": "local", "workers": 2})
    with make_executor("local", 2, None) as pool:
        run_filter(cfg, pool)
    monkeypatch.undo()
    got = manifest(out)["parquet"]
    shards = shard_order(out.glob("part_*.jsonl"))
    assert len(shards) >= 4 and got["rows"] == len(records)

    ref = tmp_path / "ref"
    ref.mkdir()
    for shard in shards:
        shutil.copyfile(shard, ref / shard.name)
    want = export_parquet(ref, shard_order(ref.glob("part_*.jsonl")))
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    assert {"kind", "mix"} <= set(want["json_columns"])  # the cases above were exercised
    assert want["columns"]["score"] == "Float64"
    for entry in want["shards"]:
        assert (out / entry["name"]).read_bytes() == (ref / entry["name"]).read_bytes()
    assert sorted(p.name for p in (out / "parquet").iterdir()) == sorted(
        p.name for p in (ref / "parquet").iterdir())
