"""curate dedup writes the same bytes for any bucket count, worker count, executor and
partitioning (the shards' concatenation, for partitioning)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dedup._support import concatenated, data, dedup, planted, write


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("dedup") / "in", planted(seed=4, bases=120))


def _counts(report: dict) -> dict:
    return {k: report[k] for k in ("documents_in", "removed", "components",
                                   "component_sizes", "candidate_pairs", "verified_pairs",
                                   "removed_by_source", "shards", "removed_shards")}


def test_any_bucket_count_and_worker_count_give_the_same_bytes(tmp_path: Path,
                                                               corpus: Path) -> None:
    ref = dedup(corpus, tmp_path / "ref", partition_size="48KB",
                execution={"exchange_buckets": 1})
    assert ref["removed"] > 50 and ref["largest_component"] >= 3
    reference = data(tmp_path / "ref")
    for name, execution in (("b64", {"exchange_buckets": 64}),
                            ("pool", {"exchange_buckets": 7, "executor": "local",
                                      "workers": 2})):
        report = dedup(corpus, tmp_path / name, partition_size="48KB", execution=execution)
        assert data(tmp_path / name) == reference, name
        assert _counts(report) == _counts(ref), name


def test_any_partitioning_gives_the_same_concatenation(tmp_path: Path, corpus: Path) -> None:
    small = dedup(corpus, tmp_path / "small", partition_size="8KB")
    whole = dedup(corpus, tmp_path / "whole", partition_size="64MB")
    assert small["partitions"]["signatures"] > 10 and whole["partitions"]["signatures"] == 1
    assert concatenated(tmp_path / "small") == concatenated(tmp_path / "whole")
    assert small["removed"] == whole["removed"] > 0


def test_ray_gives_the_same_bytes(tmp_path: Path, corpus: Path, ray_local: None) -> None:
    dedup(corpus, tmp_path / "ref", partition_size="48KB", execution={"exchange_buckets": 3})
    dedup(corpus, tmp_path / "ray", partition_size="48KB",
          execution={"exchange_buckets": 3, "executor": "ray", "workers": 2})
    assert data(tmp_path / "ray") == data(tmp_path / "ref")
