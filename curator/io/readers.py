"""JSONL and Parquet readers: one source partition in, one document batch out."""

from __future__ import annotations

import gzip
import io
import mmap
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from curator.io.partitioning import (
    JSONL_EXTENSIONS,
    PARQUET_EXTENSIONS,
    FilePartitioningStage,
    PathSpec,
)
from curator.stages import CompositeStage, ProcessingStage
from curator.tasks import DocumentBatch, FileGroupTask


def read_bytes(path: str, byte_range: tuple[int, int] | None = None) -> bytes:
    """The bytes of a (possibly .gz/.zst) file, or of the whole lines starting in a range."""
    lower = path.lower()
    if lower.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read()
    if lower.endswith(".zst"):
        import zstandard

        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as f:
            return f.read()
    with open(path, "rb") as f:
        if byte_range is None:
            return f.read()
        start, end = byte_range
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                f.readline()  # the line holding `start` belongs to the previous range
        pos = f.tell()
        if pos >= end:
            return b""
        data = f.read(end - pos)
        if data and not data.endswith(b"\n"):
            data += f.readline()
        return data


def map_lines(path: str, byte_range: tuple[int, int] | None = None
              ) -> tuple[bytes | mmap.mmap, int, int]:
    """What :func:`read_bytes` returns, as ``(buffer, start, end)``: the bytes are
    ``buffer[start:end]``.

    For an uncompressed, non-empty file the buffer is a read-only memory map of the
    whole file (pre-faulted with ``MAP_POPULATE`` where there is one): no copy of
    the file into fresh memory, which costs about a tenth of what parsing it does.
    As with any memory map (polars maps its input too), the file must not be
    truncated while the buffer is in use. Otherwise the buffer is ``read_bytes``'.
    """
    lower = path.lower()
    if lower.endswith((".gz", ".zst")):
        data = read_bytes(path, byte_range)
        return data, 0, len(data)
    with open(path, "rb") as f:
        try:
            mm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                           prot=mmap.PROT_READ)
        except ValueError:  # an empty file cannot be mapped
            return b"", 0, 0
        except (AttributeError, TypeError, OSError):  # no POSIX mmap flags: read it
            data = read_bytes(path, byte_range)
            return data, 0, len(data)
    size = len(mm)
    if byte_range is None:
        return mm, 0, size
    start, end = byte_range
    if start > 0 and mm[start - 1] != 10:  # the line holding `start` belongs to the previous range
        nl = mm.find(b"\n", start)
        start = size if nl < 0 else nl + 1
    end = min(end, size)
    if start >= end:
        return b"", 0, 0
    if mm[end - 1] != 10:
        nl = mm.find(b"\n", end)
        end = size if nl < 0 else nl + 1
    return mm, start, end


def _select(df: pl.DataFrame, fields: Sequence[str] | None) -> pl.DataFrame:
    if fields is None:
        return df
    return df.select(
        [pl.col(c) if c in df.columns else pl.lit(None).alias(c) for c in fields]
    )


@dataclass
class JsonlReaderStage(ProcessingStage[FileGroupTask, DocumentBatch]):
    """Read a partition's JSONL files (or byte range) into one :class:`DocumentBatch`."""

    fields: Sequence[str] | None = None
    name: str = "jsonl_reader"

    def process(self, task: FileGroupTask) -> DocumentBatch:
        frames = []
        for path in task.data:
            data = read_bytes(path, task.byte_range)
            if data.strip():
                frames.append(pl.read_ndjson(io.BytesIO(data), infer_schema_length=None))
        df = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
        return DocumentBatch(
            dataset_name=task.dataset_name,
            data=_select(df, self.fields),
            _metadata=dict(task._metadata),
        )


@dataclass
class ParquetReaderStage(ProcessingStage[FileGroupTask, DocumentBatch]):
    """Read a partition's Parquet files into one :class:`DocumentBatch`."""

    fields: Sequence[str] | None = None
    name: str = "parquet_reader"

    def process(self, task: FileGroupTask) -> DocumentBatch:
        tables = [pq.read_table(path) for path in task.data]
        table = pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})
        return DocumentBatch(
            dataset_name=task.dataset_name,
            data=_select(pl.from_arrow(table), self.fields),  # type: ignore[arg-type]
            _metadata=dict(task._metadata),
        )


@dataclass
class JsonlReader(CompositeStage[FileGroupTask, DocumentBatch]):
    """Partition JSONL input (``.jsonl/.json/.ndjson``, also ``.gz``/``.zst``) and read it."""

    file_paths: PathSpec = ""
    files_per_partition: int | None = None
    blocksize: int | str | None = None
    fields: Sequence[str] | None = None
    file_extensions: Sequence[str] = field(default_factory=lambda: list(JSONL_EXTENSIONS))
    name: str = "jsonl_reader"

    def decompose(self) -> list[ProcessingStage]:
        return [
            FilePartitioningStage(
                file_paths=self.file_paths,
                files_per_partition=self.files_per_partition,
                blocksize=self.blocksize,
                file_extensions=self.file_extensions,
            ),
            JsonlReaderStage(fields=self.fields),
        ]


@dataclass
class ParquetReader(CompositeStage[FileGroupTask, DocumentBatch]):
    """Partition Parquet input and read it."""

    file_paths: PathSpec = ""
    files_per_partition: int | None = None
    blocksize: int | str | None = None
    fields: Sequence[str] | None = None
    name: str = "parquet_reader"

    def decompose(self) -> list[ProcessingStage]:
        return [
            FilePartitioningStage(
                file_paths=self.file_paths,
                files_per_partition=self.files_per_partition,
                blocksize=self.blocksize,
                file_extensions=PARQUET_EXTENSIONS,
                split_files=False,
            ),
            ParquetReaderStage(fields=self.fields),
        ]
