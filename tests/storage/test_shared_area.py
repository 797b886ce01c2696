"""The shared area's reads of what another node wrote: a file only under the URL (this
node's copy empty) is listed, its Parquet footer read by range, and fetched on demand;
the exchange's buckets read through it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from curator.exchange import Exchange
from curator.io import shared
from tests.storage.conftest import s3_objects


def test_another_nodes_files_are_seen_through_the_url(s3_server: str, bucket: str,
                                                      tmp_path: Path) -> None:
    url = f"s3://{bucket}/area"
    writer = shared.SharedArea(local=str(tmp_path / "node-a"), url=url)
    reader = shared.SharedArea(local=str(tmp_path / "node-a"), url=url)  # same path
    table = pl.DataFrame({"id": [f"d{i}" for i in range(1000)], "v": list(range(1000))})
    with shared.driving(writer):
        ex = Exchange.open(tmp_path / "node-a" / "ex", 3)
        ex.write("s1", table, "id")
        path = tmp_path / "node-a" / "staging" / "t.parquet"
        path.parent.mkdir(parents=True)
        table.write_parquet(path)
        shared.wrote(path)
    assert "staging/t.parquet" in s3_objects(s3_server, bucket, "area")
    for p in (tmp_path / "node-a").rglob("*"):  # the other node's disk has none of it
        if p.is_file():
            p.unlink()
    with shared.driving(reader):
        assert shared.parquet_rows(path) == 1000
        assert not path.exists()  # the footer was read by range: nothing fetched
        assert shared.parquet_rows(path.with_name("missing.parquet")) is None
        again = Exchange.open(tmp_path / "node-a" / "ex", 64)
        assert again.buckets == 3  # the pinned count, from the URL
        rows = sum(again.read(b, {"id": pl.String, "v": pl.Int64}).height for b in range(3))
        assert rows == 1000
    assert shared.parquet_rows(path) is None  # no area, no local file
