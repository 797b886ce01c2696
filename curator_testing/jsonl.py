"""Generic JSONL stages for the engine's tests, benchmarks and ``examples/resume_demo.py``.

A table task (:class:`DocumentBatch`), a reader (:func:`jsonl_reader`: the product's
``FilePartitioningStage`` as the source, then :class:`JsonlReaderStage`) and an
idempotent sink (:class:`JsonlWriter`). No curation step uses them: each step brings
its own stages over ``FileGroupTask``. They exercise the engine (lineage ids,
completion, resume, executors) with a plain read -> transform -> write chain, and they
write through the product's durability helpers (``output_stem``, ``write_atomic``,
``clear_stale_temps``). ``curator`` never imports this module.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from curator.corpus.formats import JSONL_EXTENSIONS
from curator.corpus.reading import read_bytes
from curator.io.partitioning import FilePartitioningStage, PathSpec
from curator.io.writers import clear_stale_temps, output_stem, write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask
from curator_testing.batch import DocumentBatch

__all__ = ["DocumentBatch", "JsonlReaderStage", "JsonlWriter", "jsonl_reader"]


def _select(df: pl.DataFrame, fields: Sequence[str] | None) -> pl.DataFrame:
    if fields is None:
        return df
    return df.select(
        [pl.col(c) if c in df.columns else pl.lit(None).alias(c) for c in fields]
    )


@dataclass
class JsonlReaderStage(ProcessingStage[FileGroupTask, DocumentBatch]):
    """Read a partition's JSONL files (or byte range; ``.gz``/``.zst`` too) into one
    :class:`DocumentBatch`; ``fields`` selects columns, a missing one as nulls."""

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


def jsonl_reader(
    file_paths: PathSpec,
    *,
    files_per_partition: int | None = None,
    blocksize: int | str | None = None,
    fields: Sequence[str] | None = None,
    file_extensions: Sequence[str] = JSONL_EXTENSIONS,
) -> list[ProcessingStage]:
    """The two stages that read JSONL input: partition it (the source), then read each
    partition. ``Pipeline("p", [*jsonl_reader("in/*.jsonl"), ..., JsonlWriter(...)])``."""
    return [
        FilePartitioningStage(
            file_paths=file_paths,
            files_per_partition=files_per_partition,
            blocksize=blocksize,
            file_extensions=file_extensions,
        ),
        JsonlReaderStage(fields=fields),
    ]


@dataclass
class JsonlWriter(ProcessingStage[DocumentBatch, FileGroupTask]):
    """A sink writing each batch to ``<path>/<stem>.jsonl`` (named from its source id,
    :func:`~curator.io.writers.output_stem`), atomically; a replay overwrites, never
    appends. Each worker clears dead writers' temp files from ``path`` once per run."""

    path: str | os.PathLike[str] = "."
    fields: list[str] | None = None
    extension: str = ".jsonl"
    name: str = "jsonl_writer"

    def __post_init__(self) -> None:
        # Resolved where the pipeline is built: a worker's directory may differ.
        self.path = os.path.abspath(self.path)

    def setup(self) -> None:
        clear_stale_temps(self.path)

    def encode(self, task: DocumentBatch) -> tuple[bytes, int]:
        """The file's bytes and its row count."""
        df = task.to_polars()
        if self.fields is not None:
            df = df.select(self.fields)
        buf = io.BytesIO()
        if df.height:
            df.write_ndjson(buf)
        return buf.getvalue(), df.height

    def process(self, task: DocumentBatch) -> FileGroupTask:
        target = Path(self.path) / f"{output_stem(task)}{self.extension}"
        payload, rows = self.encode(task)
        write_atomic(target, payload)
        self.stat_update("rows_written", rows)
        return FileGroupTask(
            dataset_name=task.dataset_name,
            data=[str(target)],
            _metadata={**task._metadata, "rows": rows},
        )
