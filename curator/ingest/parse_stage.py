"""Phase 1 of ingest: each partition parsed into a staging table and its rejections."""

from __future__ import annotations

import contextlib
import io
import mmap
from dataclasses import dataclass
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from curator.corpus.formats import is_parquet
from curator.corpus.reading import UTF8_BOM, iter_parquet_rows, map_lines, parquet_column_names
from curator.exchange import Exchange
from curator.ingest.dedup import claim_rows, exchange_rows
from curator.ingest.records import IdentitySpec, PartitionRecords, parse_jsonl
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask


def write_jsonl_atomic(path: Path, rows: list[dict]) -> None:
    """Rows as JSONL (atomic); an empty list removes a stale file instead."""
    if not rows:
        path.unlink(missing_ok=True)
        return
    write_atomic(path, b"".join(orjson.dumps(r) + b"\n" for r in rows))


def records_path(staging: Path) -> Path:
    """The records file of a staging table: its accepted records' output lines, in order."""
    return staging.with_suffix(".jsonl")


def staging_bytes(table: pa.Table) -> bytes:
    """A staging table as Parquet, as cheap to write and read back as Parquet gets.

    The staging table is temporary and read back twice (duplicates, shards):
    compression, dictionaries and statistics would only cost CPU (ids are hashes,
    which do not compress).
    """
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none", use_dictionary=False,
                   write_statistics=False)
    return buf.getvalue()


@dataclass
class ParseStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Decode, parse and validate one partition; mint or take ids.

    Writes ``<staging_dir>/<source>.jsonl`` (the accepted records' output lines, in
    input order), ``<staging_dir>/<source>.parquet`` (their ids, positions and where
    each line ends in that file) and ``<rejected_dir>/<source>.jsonl`` (one line per
    rejected record, with a reason). Sends each accepted record's id and position
    through the ``ids`` exchange, and in ``suffix`` mode its claim through ``claims``
    (:mod:`curator.ingest.dedup`).
    """

    spec: IdentitySpec
    file_index: dict[str, int]
    staging_dir: str
    rejected_dir: str
    ids: Exchange | None = None
    claims: Exchange | None = None
    name: str = "ingest_parse"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        staging = Path(self.staging_dir) / f"{sid}.parquet"
        with atomic_file(records_path(staging)) as lines:  # complete before the table
            records = PartitionRecords(self.spec, lines=lines)
            for path in task.data:
                self._read(path, task, records)
        table = records.table()
        write_atomic(staging, staging_bytes(table))
        if self.ids is not None:
            sent = exchange_rows(pl.from_arrow(table), sid)  # type: ignore[arg-type]
            self.ids.write(sid, sent, "id")
            if self.claims is not None:
                self.claims.write(sid, claim_rows(sent["id"]), "base")
        write_jsonl_atomic(Path(self.rejected_dir) / f"{sid}.jsonl", records.rejections)
        for key, value in records.counts.items():
            self.stat_update(key, value)
        for name in records.column_names:
            self.stat_update(f"column.{name}")
        return FileGroupTask(data=[str(staging)], _metadata={"rows": records.accepted})

    def _read(self, path: str, task: FileGroupTask, records: PartitionRecords) -> None:
        index = self.file_index[path]
        if is_parquet(path):
            self._parquet(path, index, records)
            return
        rng = task.byte_range
        data, start, end = map_lines(path, rng)
        if data[start:start + len(UTF8_BOM)] == UTF8_BOM and (rng is None or rng[0] == 0):
            self.stat_update("files_with_bom")
        try:
            parse_jsonl(
                data, records, path=path, file_index=index,
                first_line=int(task._metadata.get("first_line", 1)),
                base_offset=rng[0] if rng else 0, start=start, end=end,
            )
        finally:
            if isinstance(data, mmap.mmap):
                with contextlib.suppress(BufferError):  # a view is still alive: GC closes it
                    data.close()

    def _parquet(self, path: str, index: int, records: PartitionRecords) -> None:
        for row, obj in enumerate(iter_parquet_rows(path)):
            records.add(obj, path=path, file_index=index, pos=row, line=None, offset=None,
                        encoding="parquet", raw=None, row=row)
        records.column_names.update(parquet_column_names(path))  # a URL too
