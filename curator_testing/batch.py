"""The table task of the engine's tests and benchmarks (see :mod:`curator_testing.jsonl`).

It has a module of its own so that it is always pickled by reference: the stage
classes of :mod:`curator_testing.jsonl` are shipped to workers by value (an editable
install is not on a worker's ``site-packages`` path, ``curator.execution``), and a
class shipped by value that a worker returns a task of cannot be pickled back.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from curator.tasks import Task


@dataclass
class DocumentBatch(Task[pa.Table | pl.DataFrame]):
    """A batch of documents as one table (Arrow or Polars)."""

    data: pa.Table | pl.DataFrame | None = None

    def to_arrow(self) -> pa.Table:
        if self.data is None:
            return pa.table({})
        if isinstance(self.data, pl.DataFrame):
            return self.data.to_arrow()
        return self.data

    def to_polars(self) -> pl.DataFrame:
        if isinstance(self.data, pl.DataFrame):
            return self.data
        return pl.from_arrow(self.to_arrow())  # type: ignore[return-value]

    @property
    def num_items(self) -> int:
        if self.data is None:
            return 0
        return self.data.height if isinstance(self.data, pl.DataFrame) else self.data.num_rows
