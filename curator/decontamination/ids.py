"""The training split's ids, checked for uniqueness and fingerprinted without holding
them in one process.

The scan units send each training document's id through the exchange
(:mod:`curator.exchange`), keyed by the id, as UTF-8 bytes (``surrogatepass``: what
the JSON reader can produce). One unit per bucket (:class:`TrainIdStage`) sorts its
ids, counts the ids that occur more than once (keeping the three smallest), and writes
its sorted unique ids. The driver sums the buckets' summaries; one unit
(:class:`FingerprintStage`) computes the spec's split fingerprint, sha256 over the
sorted unique ids each followed by ``\0``, by a streaming merge of the buckets' sorted
files (:func:`ids_fingerprint_merged`): its memory is one batch per bucket, whatever the
corpus size, and the batches shrink as the buckets grow in number (:func:`batch_rows`:
about :data:`MERGE_ROWS` ids in all). UTF-8 byte order is code point order, so this is
the digest of ``sorted(set(ids))`` of Python strings.

The merge reads every id once, in one process (a worker's: on a cluster no id travels
to the driver): the digest is over the ids in sorted order, and the buckets are cut by
the ids' hash, not by ranges of ids, so no bucket's digest is a piece of it (a
per-bucket digest would be another fingerprint: docs/decontamination.md).
"""

from __future__ import annotations

import hashlib
import heapq
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from curator.exchange import BucketTask, Exchange, read_summaries, write_summary
from curator.io import shared
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

ID_SCHEMA: dict[str, Any] = {"id": pl.Binary}
EXAMPLES = 3
_BATCH = 65_536
#: the ids the fingerprint's merge holds decoded at once, across all buckets
MERGE_ROWS = 1 << 20


def batch_rows(buckets: int) -> int:
    """Ids per row group of a bucket's sorted file, and per batch of the merge:
    :data:`MERGE_ROWS` shared by the buckets, between 256 and 65,536."""
    return max(256, min(_BATCH, MERGE_ROWS // max(1, buckets)))


def id_frame(ids: list[str]) -> pl.DataFrame:
    """Ids as the exchange carries them."""
    return pl.DataFrame({"id": [i.encode("utf-8", "surrogatepass") for i in ids]},
                        schema=ID_SCHEMA)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogatepass")


def sorted_file(work: str | Path, bucket: int) -> Path:
    return Path(work) / "sorted" / f"b{bucket:05d}.parquet"


@dataclass
class TrainIdStage(ProcessingStage[BucketTask, FileGroupTask]):
    """One bucket of training ids: sorted, unique, its repeated ids counted."""

    ids: Exchange
    work_dir: str
    name: str = "train_ids"

    def process(self, task: BucketTask) -> FileGroupTask:
        bucket = task.data
        frame = self.ids.read(bucket, ID_SCHEMA)
        counts = frame.group_by("id").len().sort("id")
        repeated = counts.filter(pl.col("len") > 1)["id"]
        unique = counts.select("id")
        target = sorted_file(self.work_dir, bucket)
        buf = io.BytesIO()
        unique.write_parquet(buf, compression="zstd", compression_level=1, statistics=False,
                             row_group_size=batch_rows(self.ids.buckets))
        write_atomic(target, buf.getvalue())
        summary = {"documents": frame.height, "unique": unique.height,
                   "repeated": repeated.len(),
                   "examples": [_text(r) for r in repeated.head(EXAMPLES).to_list()]}
        write_summary(self.work_dir, bucket, summary)
        self.stat_update("ids", frame.height)
        return FileGroupTask(data=[], _metadata={"rows": frame.height})


@dataclass
class IdSummary:
    documents: int
    repeated: int
    examples: list[str]


def summarise(work: str | Path, buckets: int) -> IdSummary:
    """The buckets' summaries, added up; the :data:`EXAMPLES` smallest repeated ids."""
    total = IdSummary(0, 0, [])
    for s in read_summaries(work, buckets, "the training ids"):
        total.documents += s["documents"]
        total.repeated += s["repeated"]
        total.examples = sorted([*total.examples, *s["examples"]])[:EXAMPLES]
    return total


def _sorted_ids(path: Path) -> Iterator[bytes]:
    """A sorted file's ids, one row group (:func:`batch_rows` ids) at a time: not
    ``iter_batches``, whose reader holds more of the file the further it reads (about
    20 bytes an id more at 1 M ids than at 200,000: docs/benchmarks.md section 13)."""
    file = pq.ParquetFile(path)
    for group in range(file.num_row_groups):
        yield from file.read_row_group(group, columns=["id"]).column(0).to_pylist()


def ids_fingerprint_merged(work: str | Path, buckets: int) -> str:
    """sha256 over the sorted unique ids, each then ``\\0``: the buckets' sorted files
    merged as they are read (ids are unique across buckets: one id, one bucket)."""
    h = hashlib.sha256()
    files = [shared.localize(sorted_file(work, b)) for b in range(buckets)]
    for raw in heapq.merge(*(_sorted_ids(f) for f in files)):
        h.update(raw + b"\0")
    return "sha256:" + h.hexdigest()


def fingerprint_file(work: str | Path) -> Path:
    return Path(work) / "fingerprint.txt"


@dataclass
class FingerprintStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """The split fingerprint (:func:`ids_fingerprint_merged`) computed by one unit
    (:class:`curator.stages.OneUnit`), not the driver, and written beside the sorted
    files (:func:`fingerprint_file`): on a cluster the ids never travel to the driver."""

    work_dir: str
    buckets: int
    name: str = "ids_fingerprint"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        digest = ids_fingerprint_merged(self.work_dir, self.buckets)
        write_atomic(fingerprint_file(self.work_dir), digest.encode())
        self.stat_update("buckets", self.buckets)
        return FileGroupTask(data=[], _metadata={"rows": 0})
