"""The duplicate check on the exchange: the decisions of the single-process rule (first
copy kept; ``suffix``: the j-th later copy of ``x`` gets the j-th free ``x-<k>``),
whatever the bucket count, including when ``x`` and ``x-<k>`` land in different buckets;
and a run killed in the middle of the exchange resumes to the same bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from curator.exchange import bucket_of
from tests.ingest._support import (
    TIMING,
    Cli,
    artifacts,
    ingest,
    read_report,
    shard_records,
    without,
    write_config,
    write_records,
)


def _records() -> list[dict[str, Any]]:
    """Ids with many copies, ids that look suffixed (``d3-1``, ``d3-01``, ``d3-0``) and
    copies of those."""
    recs = []
    for i in range(600):
        recs.append({"id": f"d{i % 53}", "text": f"copy {i}"})
        if i % 7 == 0:
            recs.append({"id": f"d{i % 53}-{1 + i % 4}", "text": f"suffixed {i}"})
        if i % 31 == 0:
            recs.append({"id": f"d{i % 53}-0{1 + i % 2}", "text": f"zero {i}"})
            recs.append({"id": f"d{i % 53}-0", "text": f"zero {i}"})
    return recs


def _sequential(recs: list[dict[str, Any]], mode: str) -> list[str]:
    """The ids written, in order, by the rule as one process applies it to all ids."""
    used = {r["id"] for r in recs}
    seen: dict[str, int] = {}
    out = []
    for r in recs:
        rank = seen.get(r["id"], 0)
        seen[r["id"]] = rank + 1
        if rank == 0:
            out.append(r["id"])
        elif mode == "suffix":
            k = rank
            while f"{r['id']}-{k}" in used:
                k += 1
            used.add(f"{r['id']}-{k}")
            out.append(f"{r['id']}-{k}")
    return out


@pytest.mark.parametrize("mode", ["drop", "suffix"])
def test_any_bucket_count_gives_the_single_process_decisions(tmp_path: Path, mode: str) -> None:
    recs = _records()
    inp = write_records(tmp_path / "in" / "a.jsonl", recs[:400])
    write_records(tmp_path / "in" / "b.jsonl", recs[400:])
    ids = sorted({r["id"] for r in recs})
    far = bucket_of(pa.array(ids), 64)
    split = {i for i, b in zip(ids, far, strict=True) if "-" in i
             and far[ids.index(i.rsplit("-", 1)[0])] != b}
    assert split, "no suffixed id in another bucket than its base: the test would prove nothing"

    expected = _sequential(recs, mode)
    assert len(set(expected)) == len(expected)
    runs = {}
    for buckets in (1, 7, 64):
        out = tmp_path / f"b{buckets}"
        runs[buckets] = ingest(str(inp.parent), out, on_duplicate=mode, id_from="id",
                               partition_size="3KB", shard_size=90,
                               execution={"executor": "inline", "exchange_buckets": buckets})
        assert [r["id"] for r in shard_records(out)] == expected, buckets
        assert runs[buckets]["partitions"]["duplicates"] == buckets
    assert runs[1]["partitions"]["parse"] >= 6
    for buckets in (7, 64):
        assert artifacts(tmp_path / f"b{buckets}") == artifacts(tmp_path / "b1")
        keep = (*TIMING, "partitions.duplicates")
        assert without(runs[buckets], keep) == without(runs[1], keep)
    if mode == "drop":
        dropped = [json.loads(x) for x in
                   (tmp_path / "b1" / "rejected" / "duplicates.jsonl").read_text().splitlines()]
        assert len(dropped) == len(recs) - len(expected)
        assert [(d["path"], d["line"]) for d in dropped] == sorted(
            (d["path"], d["line"]) for d in dropped)  # input order
        assert all(d["first_copy"]["line"] < d["line"] or d["first_copy"]["path"] < d["path"]
                   for d in dropped)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_killed_while_reducing_buckets_resumes_to_the_same_bytes(tmp_path: Path,
                                                                 prefect_api: str) -> None:
    recs = _records() * 3
    inp = write_records(tmp_path / "in" / "a.jsonl", recs)
    keys = {"on_duplicate": "suffix", "id_from": "id", "partition_size": "8KB",
            "shard_size": 200}
    ref = ingest(str(inp.parent), tmp_path / "reference", **keys,
                 execution={"executor": "inline", "exchange_buckets": 1})
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    cfg = write_config(tmp_path / "ingest.yaml", {
        "input": str(inp.parent), "output_dir": str(out), **keys,
        "execution": {"executor": "local", "workers": 1, "checkpoint_path": str(ckpt),
                      "exchange_buckets": 64},
    })
    summaries = out / ".staging" / "duplicates" / "summary"
    with Cli(cfg, tmp_path / "logs", "killed-reduce") as cli:
        cli.kill_when(lambda: len(list(summaries.glob("*.json"))) >= 4, "four buckets",
                      timeout=120)
    done = len(list(summaries.glob("*.json")))
    assert 4 <= done < 64, f"{done} of 64 buckets reduced: not cut midway"
    assert not list(out.glob("part_*.jsonl"))
    with Cli(cfg, tmp_path / "logs", "resumed") as cli:
        assert cli.wait(180) == 0, cli.stderr()[-3000:]
    report = read_report(out)
    assert artifacts(out) == artifacts(tmp_path / "reference")
    assert report["was_resumed"] is True and report["partitions"]["duplicates"] == 64
    keep = (*TIMING, "partitions", "was_resumed", "documents_skipped_resumed")
    assert without(report, keep) == without(ref, keep)
