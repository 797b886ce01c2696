"""The engine's exchange: a shuffle through storage, in two ordinary phases.

A *map* phase's units each write their records partitioned by a key's hash
(:func:`~curator.exchange.keyhash.bucket_of`) into buckets of the step's work area,
one file per (bucket, source partition); a *reduce* phase has one unit per bucket
(:class:`BucketPartitioning`), which reads every file of its bucket. Both are phases
like any other: run on the executor, checkpointed per unit, resumable. Nothing of the
records passes through the driver, which only plans the buckets.

Layout under the exchange's root (a folder of the step's work area; a URL's local copy
on a cluster, :mod:`curator.io.shared`)::

    buckets.json                 the bucket count, fixed when the run starts
    n<count>/b<bucket>/<source>.parquet

A map unit that runs again (after a crash before its checkpoint) writes the same
files again, atomically. The bucket count is pinned in ``buckets.json`` the first
time, so a resume with another ``execution.exchange_buckets`` keeps the count its
completed map units used. A bucket's files are read in name order; its rows carry no
meaningful order, so a reducer sorts by its own keys: what it decides must not depend
on which bucket a key landed in (the same bytes for any bucket count is tested per
step).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from curator.errors import CuratorError
from curator.exchange.keyhash import bucket_of, range_of
from curator.io import shared
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, Task

#: bytes of map input a bucket is planned for (the issue's 64-256 MB a bucket)
BUCKET_BYTES = 128 << 20
#: the most buckets a run plans on its own (``execution.exchange_buckets`` may set more)
MAX_BUCKETS = 4096
PINNED = "buckets.json"
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,127}$")


def choose_buckets(map_bytes: int, wanted: int | None = None) -> int:
    """The bucket count: ``wanted`` when given, else one bucket per
    :data:`BUCKET_BYTES` of the map phase's input, between 1 and :data:`MAX_BUCKETS`."""
    if wanted is not None:
        if wanted < 1:
            raise CuratorError("config_error",
                               f"execution.exchange_buckets must be at least 1, not {wanted}")
        return int(wanted)
    return max(1, min(MAX_BUCKETS, math.ceil(map_bytes / BUCKET_BYTES)))


def _file_name(source: str) -> str:
    """A source id as a file name: as it is when it is a plain token, else its digest
    (a source id never escapes its bucket folder)."""
    if _SAFE.match(source):
        return f"{source}.parquet"
    return f"h{hashlib.sha256(source.encode()).hexdigest()[:24]}.parquet"


@dataclass(frozen=True)
class Exchange:
    """One exchange of a step: where its buckets live and how many there are."""

    root: str
    buckets: int

    @classmethod
    def open(cls, root: str | Path, buckets: int) -> Exchange:
        """The exchange at ``root``: the count pinned there by an earlier run of the same
        work area, else ``buckets``, pinned now (driver only)."""
        pinned = shared.localize(Path(root) / PINNED)
        if pinned.is_file():
            try:
                count = int(json.loads(pinned.read_text())["buckets"])
            except (ValueError, KeyError, TypeError) as exc:
                raise CuratorError(
                    "work_file_missing", f"{pinned} is not an exchange's bucket count: "
                    f"{exc}; remove the step's work area to start over") from exc
            return cls(str(root), count)
        write_atomic(Path(root) / PINNED, json.dumps({"buckets": buckets}) + "\n")
        return cls(str(root), buckets)

    def folder(self, bucket: int) -> Path:
        return Path(self.root) / f"n{self.buckets}" / f"b{bucket:05d}"

    def write(self, source: str, frame: pl.DataFrame, key: str,
              ranged: bool = False) -> dict[int, int]:
        """A map unit's records, each to the bucket of its ``key`` column; return the rows
        written per bucket. Empty buckets get no file. ``ranged``: ``key`` is already a
        uint64 hash, and buckets are ranges of it (:func:`range_of`), not its modulo."""
        if frame.is_empty():
            return {}
        where = (range_of(frame[key].to_numpy(), self.buckets) if ranged
                 else bucket_of(frame[key], self.buckets))
        parts = frame.with_columns(
            _bucket=pl.Series(where)
        ).partition_by("_bucket", as_dict=True, maintain_order=True, include_key=False)
        written = {}
        name = _file_name(source)
        for (bucket,), part in sorted(parts.items()):
            buf = io.BytesIO()
            part.write_parquet(buf, compression="zstd", compression_level=1, statistics=False)
            write_atomic(self.folder(int(bucket)) / name, buf.getvalue())
            written[int(bucket)] = part.height
        return written

    def files(self, bucket: int) -> list[Path]:
        """The files of ``bucket`` (one per map unit that sent it records), in name order;
        read each through :func:`curator.io.shared.localize`."""
        return shared.listing(self.folder(bucket), "*.parquet")

    def read(self, bucket: int, schema: dict[str, pl.DataType]) -> pl.DataFrame:
        """Every record of ``bucket`` (from all map units), as one frame of ``schema``."""
        frames = [pl.read_parquet(shared.localize(f)) for f in self.files(bucket)]
        if not frames:
            return pl.DataFrame(schema=schema)
        return pl.concat(frames, how="vertical_relaxed").cast(schema)  # type: ignore[arg-type]

    def remove(self) -> None:
        shared.remove_tree(self.root)


def summary_file(work: str | Path, bucket: int) -> Path:
    """Where a reduce unit leaves its bucket's summary (counts, a few examples) for the
    driver."""
    return Path(work) / "summary" / f"b{bucket:05d}.json"


def write_summary(work: str | Path, bucket: int, summary: dict[str, Any]) -> Path:
    """A reduce unit's summary of its bucket, atomically; returns its path."""
    return write_atomic(summary_file(work, bucket), json.dumps(summary, sort_keys=True) + "\n")


def read_summaries(work: str | Path, buckets: int, what: str) -> Iterator[dict[str, Any]]:
    """Every bucket's summary, in bucket order (the driver's whole view of a reduce
    phase); one that a completed unit should have left and cannot be read is
    ``checkpoint_output_mismatch``."""
    for bucket in range(buckets):
        path = shared.localize(summary_file(work, bucket))
        try:
            yield json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise CuratorError(
                "checkpoint_output_mismatch",
                f"bucket {bucket} of {what} is recorded complete but its summary {path} "
                f"cannot be read ({exc}); use a new checkpoint_path or remove the old "
                "one") from exc


@dataclass
class BucketTask(Task[int]):
    """One bucket of an exchange: a reduce unit."""

    data: int = 0
    exchange: Exchange | None = None

    @property
    def num_items(self) -> int:
        return 1

    def get_deterministic_id(self) -> str:
        # not the root: a local copy's path may differ on the driver that resumes
        count = self.exchange.buckets if self.exchange is not None else 0
        key = f"exchange|{count}|{self.data}"
        return "b" + hashlib.sha256(key.encode()).hexdigest()[:12]


@dataclass
class BucketPartitioning(ProcessingStage[EmptyTask, BucketTask]):
    """The source stage of a reduce phase: one unit per bucket, in bucket order."""

    exchange: Exchange
    name: str = "exchange_buckets"

    def process(self, task: EmptyTask) -> list[BucketTask]:
        return [BucketTask(data=b, exchange=self.exchange) for b in range(self.exchange.buckets)]
