"""The exchange's files: every record lands in its key's bucket, once; the bucket count
is pinned by the first run of a work area; a source id never escapes its folder."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from curator.errors import CuratorError
from curator.exchange import BucketPartitioning, Exchange, bucket_of, choose_buckets
from curator.tasks import EmptyTask

SCHEMA = {"key": pl.String, "value": pl.Int64}


def _frame(lo: int, hi: int) -> pl.DataFrame:
    return pl.DataFrame({"key": [f"k{i % 50}" for i in range(lo, hi)],
                         "value": list(range(lo, hi))}, schema=SCHEMA)


@pytest.mark.parametrize("buckets", [1, 7, 64])
def test_every_record_is_read_back_from_its_keys_bucket_once(tmp_path: Path,
                                                             buckets: int) -> None:
    ex = Exchange.open(tmp_path / "ex", buckets)
    sources = {"s1": _frame(0, 300), "s2": _frame(300, 500), "s3": _frame(0, 0)}
    written: dict[int, int] = {}
    for sid, frame in sources.items():
        for b, n in ex.write(sid, frame, "key").items():
            written[b] = written.get(b, 0) + n
    seen = []
    for b in range(buckets):
        got = ex.read(b, SCHEMA)
        assert got.height == written.get(b, 0)
        assert set(bucket_of(got["key"], buckets).tolist()) <= {b}
        seen += got["value"].to_list()
    assert sorted(seen) == list(range(500))


def test_the_first_count_is_pinned_for_a_resume(tmp_path: Path) -> None:
    assert Exchange.open(tmp_path / "ex", 7).buckets == 7
    assert Exchange.open(tmp_path / "ex", 64).buckets == 7  # a resume keeps 7
    (tmp_path / "ex" / "buckets.json").write_text("{not json")
    with pytest.raises(CuratorError) as info:
        Exchange.open(tmp_path / "ex", 7)
    assert info.value.error_id == "work_file_missing"


def test_a_hostile_source_id_stays_in_its_bucket_folder(tmp_path: Path) -> None:
    ex = Exchange.open(tmp_path / "ex", 1)
    ex.write("../../escape", _frame(0, 10), "key")
    files = [p for p in tmp_path.rglob("*.parquet")]
    assert len(files) == 1 and files[0].parent == ex.folder(0)
    assert ex.read(0, SCHEMA).height == 10


def test_bucket_units_and_counts() -> None:
    ex = Exchange("/nowhere", 5)
    tasks = BucketPartitioning(exchange=ex).process(EmptyTask())
    assert [t.data for t in tasks] == list(range(5))
    ids = [t.get_deterministic_id() for t in tasks]
    assert len(set(ids)) == 5 and all("_" not in i for i in ids)
    assert ids == [t.get_deterministic_id() for t in BucketPartitioning(
        exchange=Exchange("/elsewhere", 5)).process(EmptyTask())]  # not tied to a path
    assert choose_buckets(0) == 1 and choose_buckets(300 << 20) == 3
    assert choose_buckets(10 << 40) == 4096 and choose_buckets(1, wanted=9) == 9
