"""The JSONL reader: one source partition in, one document batch out."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from curator.corpus.formats import JSONL_EXTENSIONS
from curator.corpus.reading import read_bytes
from curator.io.partitioning import FilePartitioningStage, PathSpec
from curator.stages import CompositeStage, ProcessingStage
from curator.tasks import DocumentBatch, FileGroupTask


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
