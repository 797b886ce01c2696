"""The same corpus on every executor gives byte-identical shards and rejection files, and
the same report but for timing: inline, the process pool with 1 and 2 workers, and Ray
(chosen through the config's ``execution`` block, run by the flow); and for any bucket
count of the duplicate check's exchange (1, 7 and 64)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from curator.steps.ingest import IngestConfig, run_ingest
from executors import make_executor
from tests.ingest._support import TIMING, artifacts, read_report, without
from tests.ingest.test_messy_corpus import build

pytestmark = pytest.mark.slow


def _corpus(folder: Path) -> None:
    """The messy corpus plus a file big enough to be split into byte ranges."""
    build(folder)
    rnd = random.Random(5)
    lines = []
    for i in range(600):
        if i % 97 == 13:
            lines.append("{oops")
        elif i % 50 == 0:
            lines.append(json.dumps({"text": "repeated", "url": "same"}))
        else:
            words = " ".join(rnd.choice(["a", "bb", "ccc", "d\u00e9", "\u00fc"]) for _ in range(20))
            lines.append(json.dumps({"text": words, "url": f"u{i}", "lang": "xx"},
                                    ensure_ascii=False))
    (folder / "06-big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


KEYS: dict[str, Any] = {"on_duplicate": "drop", "partition_size": "6KB", "shard_size": 70,
                        "keep_fields": ["url", "lang"]}


def _run(inp: Path, out: Path, executor: str, workers: int | None,
         buckets: int | None = None) -> dict[str, Any]:
    cfg = IngestConfig(input=str(inp), output_dir=str(out), **KEYS,
                       execution={"executor": executor, "workers": workers,
                                  "exchange_buckets": buckets})
    ex = cfg.execution
    return run_ingest(cfg, make_executor(ex.executor, ex.workers, ex.ray_address))


def test_inline_local_and_ray_give_identical_output(
    tmp_path: Path, prefect_api: str, ray_local: None
) -> None:
    from flows.steps import ingest_flow

    inp = tmp_path / "in"
    _corpus(inp)
    runs = {
        "inline": _run(inp, tmp_path / "inline", "inline", None),
        "local-1": _run(inp, tmp_path / "local-1", "local", 1, buckets=7),
        "local-2": _run(inp, tmp_path / "local-2", "local", 2, buckets=64),
        "ray": ingest_flow({"input": str(inp), "output_dir": str(tmp_path / "ray"), **KEYS,
                            "execution": {"executor": "ray", "workers": 2,
                                          "exchange_buckets": 7}}),
    }
    base = runs["inline"]
    assert base["partitions"]["parse"] >= 8
    assert len(base["shards"]) >= 5
    assert set(base["rejections_by_reason"]) >= {"duplicate_id", "unparsable_line",
                                                 "not_an_object", "empty_text"}
    expected = artifacts(tmp_path / "inline")
    assert len([k for k in expected if k.startswith("rejected/")]) >= 3
    for name, report in runs.items():
        assert report == read_report(tmp_path / name)
        assert artifacts(tmp_path / name) == expected, name
        assert without(report, (*TIMING, "partitions.duplicates")) == without(
            base, (*TIMING, "partitions.duplicates")), name
    assert [r["partitions"]["duplicates"] for r in runs.values()] == [1, 7, 64, 7]
