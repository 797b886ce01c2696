"""A failed filter run's report is counted by the units, not by the driver (issue 26).

Its ``n_input`` comes from the counters each finished unit left in the work area plus a
``count`` pass on the executor over the partitions that never finished; its output's
per-source counts from the same counters. The driver (this process: the pool's workers
are spawned processes) reads neither an input file nor a shard, and the figures are
those a count of the files gives: the ledger balances.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import curator.corpus.reading as reading
from curator.errors import CuratorError
from curator.steps.filter import FilterConfig, run_filter
from executors import make_executor
from tests.filter._support import (
    corpus_records,
    filter_keys,
    ledger,
    manifest,
    shard_files,
    write_shards,
)

HAVE_LANG = 120  # records with a ``lang`` field; the rest have none and fail their unit


def test_a_failed_run_is_counted_by_its_units(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    records = corpus_records(200, seed=23)
    for rec in records[:HAVE_LANG]:
        rec["lang"] = "en"
    inp = write_shards(tmp_path / "in", records, shards=4)
    with open(inp / "part_0.jsonl", "a", encoding="utf-8") as f:
        f.write("\n{not json\n")  # a blank line (not a record) and an unparsable one
    lines = sum(1 for p in inp.glob("*.jsonl") for line in p.read_bytes().splitlines()
                if line.strip())
    assert lines == len(records) + 1

    read_here: list[str] = []
    original = reading.read_block

    def spy(path: str, byte_range: Any = None) -> Any:
        read_here.append(str(path))
        return original(path, byte_range)

    monkeypatch.setattr(reading, "read_block", spy)
    out = tmp_path / "out"
    cfg = FilterConfig(**filter_keys(inp, out, metadata_fields=["lang"], partition_size="6KB",
                                     quality_filters={"min_words": None, "max_words": None},
                                     language_codes=[]),
                       execution={"executor": "local", "workers": 2})
    with make_executor("local", 2, None) as pool, pytest.raises(CuratorError) as caught:
        run_filter(cfg, pool)
    assert caught.value.error_id == "metadata_field_absent_from_some_records"

    # the driver read no input and no shard
    assert [p for p in read_here if p.startswith((str(inp), str(out)))] == []
    m, led = manifest(out), ledger(out)
    assert "completed_at" not in m["producer"]
    # the same figures as counting the files (partitions left pending included: the
    # count pass)
    rows = [json.loads(line) for p in shard_files(out) for line in p.read_bytes().splitlines()]
    assert 0 < len(rows) < HAVE_LANG
    assert led["n_input"] == m["input"]["row_count"] == lines
    assert m["output"]["row_count"] == led["n_success"] == len(rows)
    assert m["output"]["per_source"] == dict(sorted(Counter(r["source"] for r in rows).items()))
    assert led["balanced"] is True
    assert led["n_input"] == (led["n_success"] + led["n_filtered"] + led["n_failed"]
                              + led["n_quarantined"])
