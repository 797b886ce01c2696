"""Ids and sources are data, never paths: hostile values are kept verbatim and nothing is
written outside ``output_dir``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.ingest._support import ingest, read_jsonl, rejections, shard_records, write_records

HOSTILE = ["../../etc/x", "/abs/path", "..", ".", "a/../../b", "~/x", "..\\..\\win",
           "part_0.jsonl", "../ingest_report.json", ".staging/../../y", "nul\u0000byte"]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()}


@pytest.mark.parametrize("mode", ["drop", "suffix"])
def test_hostile_ids_and_sources_stay_data(tmp_path: Path, mode: str) -> None:
    inp = tmp_path / "a" / "in"
    recs = [{"doc_id": v, "text": f"text {i}", "site": v} for i, v in enumerate(HOSTILE)]
    recs += [{"doc_id": v, "text": f"copy {i}", "site": v} for i, v in enumerate(HOSTILE[:4])]
    write_records(inp / "c.jsonl", recs)
    out = tmp_path / "a" / "b" / "out"
    before_tmp = _files(tmp_path)
    abs_before = os.path.exists("/abs/path"), os.path.exists("/etc/x")

    report = ingest(str(inp), out, id_from="doc_id", source_from="site", on_duplicate=mode,
                    partition_size=64)

    docs = shard_records(out)
    if mode == "drop":
        assert [(d["id"], d["source"], d["text"]) for d in docs] == [
            (v, v, f"text {i}") for i, v in enumerate(HOSTILE)]
        assert [r["id"] for r in rejections(out)] == HOSTILE[:4]
    else:
        assert [(d["id"], d["source"]) for d in docs[:len(HOSTILE)]] == [
            (v, v) for v in HOSTILE]
        assert [d["id"] for d in docs[len(HOSTILE):]] == [f"{v}-1" for v in HOSTILE[:4]]
    assert report["documents_seen"] == len(recs)

    # Everything new is under output_dir, named by the tool, not by the data.
    new = _files(tmp_path) - before_tmp
    assert new and all(n.startswith("a/b/out/") for n in new), sorted(new)
    names = {Path(n).relative_to("a/b/out").as_posix() for n in new}
    shards = {n for n in names if n.startswith("part_")}
    others = names - shards - {"ingest_report.json"}
    assert all(n.startswith("rejected/") for n in others), others
    for name in others:
        assert Path(name).name == "duplicates.jsonl" or len(Path(name).stem) == 12
    assert before_tmp <= _files(tmp_path)
    assert not (tmp_path / "a" / "etc").exists() and not (tmp_path / "etc").exists()
    assert (os.path.exists("/abs/path"), os.path.exists("/etc/x")) == abs_before


def test_hostile_source_constant_and_prefix(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "t", "url": "u"}])
    before = _files(tmp_path)
    ingest(str(tmp_path / "in"), tmp_path / "out", source="../../etc/x", id_prefix="/abs/path/")
    [doc] = shard_records(tmp_path / "out")
    assert doc["source"] == "../../etc/x"
    assert doc["id"].startswith("/abs/path/")
    assert _files(tmp_path) - before == {"out/part_0.jsonl", "out/ingest_report.json"}
    assert read_jsonl(tmp_path / "out" / "part_0.jsonl") == [doc]
