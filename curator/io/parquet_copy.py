"""``output_format: jsonl+parquet`` made by the units, not the driver (issue 26).

The same files, byte for byte, as :func:`curator.io.parquet_export.export_parquet`
writes in one process, in two engine phases of one unit per JSONL shard:

1. ``parquet_schema``: a unit reads its shard and leaves in the work area the shard's
   own column types (every field typed as if no other shard existed) and the fields its
   values force to JSON text.
2. The driver reads only those small files and decides the step's one schema: a field
   is JSON text where any shard forces it or where the shards' types do not fit one
   type (:func:`plan`). Columns are independent of each other, so this is exactly the
   fixed point the one-process export reaches by converting shards again.
3. ``parquet_copy``: a unit converts its shard with that decision, widens it to the
   step's schema, checks its row count, writes ``<output_dir>/parquet/<rel>.parquet``
   (put to the output URL by the writer) and leaves its name, rows and sha256.

The driver never reads a shard or a Parquet file: it assembles the completion
artifact's ``parquet`` block from the units' summaries (:func:`block`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pyarrow.parquet as pq

from curator.errors import CuratorError
from curator.io import shared
from curator.io.parquet_export import PARQUET_DIR, _frame, _records, _union, parquet_path
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask

#: the phases' names (each checkpointed as a phase of the step)
SCHEMA_PHASE, COPY_PHASE = "parquet_schema", "parquet_copy"


def _schema_bytes(schema: pl.Schema) -> bytes:
    buf = io.BytesIO()
    pl.DataFrame(schema=schema).write_ipc(buf)
    return buf.getvalue()


def _schema_of(data: bytes) -> pl.Schema:
    return pl.read_ipc(io.BytesIO(data)).schema


def _parquet_bytes(df: pl.DataFrame) -> bytes:
    buf = io.BytesIO()  # as parquet_export._write
    df.write_parquet(buf, compression="zstd", statistics=True)
    return buf.getvalue()


def _work_file(work_dir: str | Path, kind: str, out: str | Path, shard: str | Path,
               suffix: str) -> Path:
    rel = Path(shard).relative_to(out).with_suffix(suffix)
    return Path(work_dir) / PARQUET_DIR / kind / rel


@dataclass
class ShardUnits(ProcessingStage[EmptyTask, FileGroupTask]):
    """One unit per JSONL shard (paths under the output; not opened while planning)."""

    shards: tuple[str, ...] = ()
    name: str = "parquet_shards"

    def process(self, task: EmptyTask) -> list[FileGroupTask]:
        return [FileGroupTask(data=[s], dataset_name="parquet") for s in self.shards]


@dataclass
class SchemaStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Phase 1: a shard's own schema and the fields it forces to JSON text."""

    out: str = ""
    work_dir: str = ""
    name: str = SCHEMA_PHASE

    def process(self, task: FileGroupTask) -> FileGroupTask:
        shard = task.data[0]
        records = _records(Path(shard))
        df, mixed = _frame(records, set())
        write_atomic(_work_file(self.work_dir, "schema", self.out, shard, ".arrow"),
                     _schema_bytes(df.schema))
        write_atomic(_work_file(self.work_dir, "schema", self.out, shard, ".json"),
                     orjson.dumps({"mixed": sorted(mixed), "rows": len(records)}))
        self.stat_update("records", len(records))
        return FileGroupTask(data=[], _metadata={"rows": len(records)})


@dataclass
class CopyStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Phase 3: a shard's Parquet copy with the step's decision, and its summary."""

    out: str = ""
    work_dir: str = ""
    as_json: tuple[str, ...] = ()
    schema: bytes = b""  # the step's one schema (an empty Arrow IPC frame)
    name: str = COPY_PHASE

    def process(self, task: FileGroupTask) -> FileGroupTask:
        shard = Path(task.data[0])
        out = Path(self.out)
        target = parquet_path(out, shard)
        union = _schema_of(self.schema)
        records = _records(shard)
        df, _ = _frame(records, set(self.as_json))
        data = _parquet_bytes(df)
        if df.schema != union:  # a column it lacks, a narrower type: widened to the union
            data = _parquet_bytes(pl.concat([pl.DataFrame(schema=union),
                                             pl.read_parquet(io.BytesIO(data))],
                                            how="diagonal_relaxed"))
        written = pq.ParquetFile(io.BytesIO(data)).metadata.num_rows
        if written != len(records):
            raise CuratorError("parquet_export_failed",
                               f"{target}: {written} rows written for the {len(records)} "
                               f"records of {shard}; the JSONL shards are kept")
        with atomic_file(target) as f:
            f.write(data)
        entry = {"name": target.relative_to(out).as_posix(),
                 "from": shard.relative_to(out).as_posix(), "rows": len(records),
                 "sha256": "sha256:" + hashlib.sha256(data).hexdigest()}
        write_atomic(_work_file(self.work_dir, "copy", out, shard, ".json"), orjson.dumps(entry))
        self.stat_update("records", len(records))
        return FileGroupTask(data=[], _metadata={"rows": len(records)})


def plan(out: Path, work_dir: Path, shards: Sequence[Path]) -> tuple[tuple[str, ...], bytes]:
    """The fields stored as JSON text and the step's one schema (IPC bytes), from the
    ``parquet_schema`` units' files (any node's)."""
    own: list[pl.Schema] = []
    forced: set[str] = set()
    for shard in shards:
        own.append(_schema_of(shared.localize(
            _work_file(work_dir, "schema", out, shard, ".arrow")).read_bytes()))
        left = orjson.loads(shared.localize(
            _work_file(work_dir, "schema", out, shard, ".json")).read_bytes())
        forced.update(left["mixed"])

    def decided(as_json: set[str]) -> list[pl.Schema]:
        return [pl.Schema({n: pl.String if n in as_json else d for n, d in s.items()})
                for s in own]

    _, bad = _union(decided(forced))
    as_json = forced | bad
    union, _ = _union(decided(as_json))
    return tuple(sorted(as_json)), _schema_bytes(union)


def block(out: Path, work_dir: Path, shards: Sequence[Path], as_json: Sequence[str],
          schema: bytes) -> dict[str, Any]:
    """The completion artifact's ``parquet`` block, from the ``parquet_copy`` units'
    summaries (as :func:`~curator.io.parquet_export.export_parquet` returns it)."""
    entries = [orjson.loads(shared.localize(
        _work_file(work_dir, "copy", out, shard, ".json")).read_bytes()) for shard in shards]
    return {"dir": PARQUET_DIR,
            "columns": {name: str(dtype) for name, dtype in _schema_of(schema).items()},
            "json_columns": list(as_json),
            "rows": sum(e["rows"] for e in entries),
            "shards": entries}
