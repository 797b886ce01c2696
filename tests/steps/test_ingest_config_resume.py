"""Ingest never resumes another configuration's partial results (the case that did)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.config import validate_config
from curator.errors import CuratorError
from curator.steps.ingest import IngestConfig, run_ingest


def _records(n: int) -> list[dict[str, str]]:
    rows = [{"url": f"https://e.example/{i}", "text": f"document number {i} of the test",
             "source": "s"} for i in range(n)]
    return rows + rows[:3]  # three duplicate copies


def test_a_failed_ingest_is_not_resumed_by_a_different_config(tmp_path: Path) -> None:
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in _records(40)))
    base = {"input": str(raw), "output_dir": str(tmp_path / "out"), "partition_size": "1KB",
            "execution": {"executor": "inline", "checkpoint_path": str(tmp_path / "ckpt")}}
    first = validate_config(IngestConfig, {**base, "keep_fields": ["url"],
                                           "on_duplicate": "refuse"})
    with pytest.raises(CuratorError) as info:
        run_ingest(first)
    assert info.value.error_id == "duplicate_documents"
    assert list((tmp_path / "ckpt" / "ingest").rglob("*.mdb")), "the parse phase finished"

    second = validate_config(IngestConfig, {**base, "keep_fields": [], "on_duplicate": "drop"})
    report = run_ingest(second)
    assert report["was_resumed"] is False and report["producer"]["resumed_partitions"] == 0
    shards = sorted((tmp_path / "out").glob("part_*.jsonl"))
    rows = [json.loads(line) for p in shards for line in p.read_text().splitlines()]
    assert len(rows) == 40 and not any("url" in r for r in rows)

    fresh = validate_config(IngestConfig, {**base, "output_dir": str(tmp_path / "fresh"),
                                           "keep_fields": [], "on_duplicate": "drop",
                                           "execution": {"executor": "inline"}})
    run_ingest(fresh)
    assert [p.read_bytes() for p in shards] == [
        p.read_bytes() for p in sorted((tmp_path / "fresh").glob("part_*.jsonl"))]
