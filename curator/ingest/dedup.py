"""Phase 2 of ingest: what happens to duplicate ids, decided one key bucket at a time.

"The first copy" is the one earliest in input order: sorted input path, then byte
offset (JSONL) or row (Parquet). This never depends on partitioning, the executor, the
worker count, the bucket count or interruptions.

The parse phase sends every accepted record's id and position through the exchange
(:mod:`curator.exchange`), keyed by the id, so all copies of an id meet in one bucket;
in ``suffix`` mode it also sends a *claim* for every id of the form ``<base>-<n>``
(``n`` a positive integer without leading zeros), keyed by ``base``. A bucket's unit
(:class:`DuplicateStage`) then decides alone:

- ``drop``: every later copy is dropped, with a rejection record naming the first;
- ``suffix``: the later copies of ``x``, in input order, are renamed ``x-<k>`` with
  the smallest ``k >= 1`` that no record holds as its id and no earlier copy took.
  Only ids claimed under ``x`` can be ``x-<k>``, and ``x-<k>`` names of different
  bases never coincide, so the bucket of ``x`` holds everything the choice needs. (It
  is the sequential rule "the next free suffix, starting at the copy's rank" that a
  single process applied over all ids: the j-th later copy gets the j-th free ``k``.)

Each unit writes its decisions by partition, ``decisions/<partition>/b<bucket>.parquet``
(what the shard writers read), and a summary ``summary/b<bucket>.json`` (counts, its
first examples, drops per partition): the driver reads summaries, never ids.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from curator.exchange import BucketTask, Exchange, read_summaries, write_summary
from curator.io import shared
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

#: A record's id and where it is, as the parse phase sends it through the exchange.
ID_SCHEMA: dict[str, Any] = {
    "id": pl.String, "ord_file": pl.Int32, "ord_pos": pl.Int64, "line": pl.Int64,
    "part": pl.String, "row": pl.Int64,
}
#: An id of the form ``<base>-<k>``: ``k`` is taken under ``base``.
CLAIM_SCHEMA: dict[str, Any] = {"base": pl.String, "k": pl.Int64}
#: One row per later copy: where it is (``row`` is its index in the partition's staging
#: table) and what happens to it; ``id`` is its id before a rename; ``rejection`` the
#: rejection record's JSON line of a dropped copy.
DECISIONS_SCHEMA: dict[str, Any] = {
    "part": pl.String, "row": pl.Int64, "ord_file": pl.Int32, "ord_pos": pl.Int64,
    "id": pl.String, "action": pl.String, "new_id": pl.String, "rejection": pl.Binary,
}
EXAMPLES = 3  # duplicate groups shown in the report, the earliest first copies
_SUFFIXED = r"^(.*)-([1-9][0-9]{0,17})$"


def exchange_rows(table: pl.DataFrame, part: str) -> pl.DataFrame:
    """A staging table's ids and positions, as the exchange carries them."""
    return table.select("id", "ord_file", "ord_pos", "line").with_columns(
        part=pl.lit(part), row=pl.int_range(pl.len(), dtype=pl.Int64)
    ).cast(ID_SCHEMA)  # type: ignore[arg-type]


def claim_rows(ids: pl.Series) -> pl.DataFrame:
    """``(base, k)`` of every id of the form ``<base>-<k>``."""
    found = ids.str.extract_groups(_SUFFIXED).struct.unnest()
    return found.select(base=pl.col("1"), k=pl.col("2").cast(pl.Int64)).drop_nulls()


def _location(files: list[str], fmt: str, row: dict[str, Any]) -> dict[str, Any]:
    loc: dict[str, Any] = {"path": files[row["ord_file"]]}
    if fmt == "parquet":
        loc.update(line=None, row=row["line"], byte_offset=None)
    else:
        loc.update(line=row["line"], byte_offset=row["ord_pos"])
    return loc


def _free_suffixes(wanted: int, taken: set[int]) -> list[int]:
    """The ``wanted`` smallest integers ``k >= 1`` not in ``taken``."""
    out, k = [], 1
    while len(out) < wanted:
        if k not in taken:
            out.append(k)
        k += 1
    return out


@dataclass
class BucketDecisions:
    """What one bucket decided."""

    decisions: pl.DataFrame
    duplicate_ids: int = 0  # copies beyond the first
    duplicate_groups: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)  # each with its "first"


def resolve_bucket(ids: pl.DataFrame, claims: pl.DataFrame | None, mode: str,
                   files: list[str], fmt: str) -> BucketDecisions:
    """The decisions of one bucket: all copies of its ids are in ``ids``."""
    empty = pl.DataFrame(schema=DECISIONS_SCHEMA)
    dups = (
        ids.filter(pl.col("id").is_duplicated())
        .sort(["ord_file", "ord_pos"])
        .with_columns(rank=pl.col("id").cum_count().over("id") - 1)
    )
    if dups.is_empty():
        return BucketDecisions(decisions=empty)
    groups = dups["id"].n_unique()
    result = BucketDecisions(decisions=empty, duplicate_ids=dups.height - groups,
                             duplicate_groups=groups)
    firsts = dups.filter(pl.col("rank") == 0)
    first = {r["id"]: r for r in firsts.iter_rows(named=True)}
    for r in firsts.head(EXAMPLES).iter_rows(named=True):  # sorted by position already
        copies = dups.filter(pl.col("id") == r["id"])
        result.examples.append(
            {"id": r["id"], "copies": copies.height, "first": [r["ord_file"], r["ord_pos"]],
             "at": [_location(files, fmt, c) for c in copies.head(3).iter_rows(named=True)]}
        )
    later = dups.filter(pl.col("rank") > 0)
    base = later.select("part", "row", "ord_file", "ord_pos", "id")
    if mode == "drop":
        lines = [orjson.dumps({**_location(files, fmt, r), "reason": "duplicate_id",
                               "id": r["id"], "first_copy": _location(files, fmt, first[r["id"]])})
                 for r in later.iter_rows(named=True)]
        result.decisions = base.with_columns(
            action=pl.lit("drop"), new_id=pl.lit(None, pl.String),
            rejection=pl.Series(lines, dtype=pl.Binary))
    elif mode == "suffix":
        taken: dict[str, set[int]] = {}
        if claims is not None and not claims.is_empty():
            wanted = claims.filter(pl.col("base").is_in(later["id"].unique().implode()))
            for b, ks in wanted.group_by("base").agg("k").iter_rows():
                taken[b] = set(ks)
        new_ids: list[str] = []
        counts = later.group_by("id", maintain_order=True).len()
        free = {i: _free_suffixes(n, taken.get(i, set())) for i, n in counts.iter_rows()}
        for doc_id, rank in later.select("id", "rank").iter_rows():
            new_ids.append(f"{doc_id}-{free[doc_id][rank - 1]}")
        result.decisions = base.with_columns(
            action=pl.lit("rename"), new_id=pl.Series(new_ids, dtype=pl.String),
            rejection=pl.lit(None, pl.Binary))
    result.decisions = result.decisions.cast(DECISIONS_SCHEMA)  # type: ignore[arg-type]
    return result


def decisions_folder(work: str | Path, part: str) -> Path:
    return Path(work) / "decisions" / part


def read_decisions(work: str | Path, part: str) -> pl.DataFrame:
    """Every bucket's decisions about one partition (any node's, through the area)."""
    files = shared.listing(decisions_folder(work, part), "*.parquet")
    frames = [pl.read_parquet(shared.localize(f)) for f in files]
    if not frames:
        return pl.DataFrame(schema=DECISIONS_SCHEMA)
    return pl.concat(frames).sort(["ord_file", "ord_pos"])


@dataclass
class DuplicateStage(ProcessingStage[BucketTask, FileGroupTask]):
    """One bucket of ids: decide its duplicates, write the decisions by partition."""

    ids: Exchange
    claims: Exchange | None
    mode: str
    files: list[str]
    fmt: str
    work_dir: str
    name: str = "ingest_duplicates"

    def process(self, task: BucketTask) -> FileGroupTask:
        bucket = task.data
        ids = self.ids.read(bucket, ID_SCHEMA)
        claims = self.claims.read(bucket, CLAIM_SCHEMA) if self.claims is not None else None
        found = resolve_bucket(ids, claims, self.mode, self.files, self.fmt)
        drops: dict[str, int] = {}
        for (part,), mine in found.decisions.partition_by("part", as_dict=True,
                                                          maintain_order=True).items():
            buf = io.BytesIO()
            mine.write_parquet(buf, statistics=False)
            write_atomic(decisions_folder(self.work_dir, str(part)) / f"b{bucket:05d}.parquet",
                         buf.getvalue())
            if self.mode == "drop":
                drops[str(part)] = mine.height
        summary = {"bucket": bucket, "ids": ids.height, "duplicate_ids": found.duplicate_ids,
                   "duplicate_groups": found.duplicate_groups, "examples": found.examples,
                   "drops": dict(sorted(drops.items()))}
        target = write_summary(self.work_dir, bucket, summary)
        self.stat_update("ids", ids.height)
        self.stat_update("duplicate_ids", found.duplicate_ids)
        return FileGroupTask(data=[str(target)], _metadata={"rows": ids.height})


@dataclass
class DedupResult:
    """The whole corpus's duplicates, summed from the buckets' summaries."""

    mode: str
    duplicate_ids: int = 0
    duplicate_groups: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    drops: dict[str, int] = field(default_factory=dict)  # partition -> dropped rows

    @property
    def dropped(self) -> int:
        return sum(self.drops.values())


def summarise(work: str | Path, buckets: int, mode: str) -> DedupResult:
    """The buckets' summaries, added up; the earliest :data:`EXAMPLES` groups kept."""
    result = DedupResult(mode=mode)
    examples: list[dict[str, Any]] = []
    for summary in read_summaries(work, buckets, "the duplicate check"):
        result.duplicate_ids += summary["duplicate_ids"]
        result.duplicate_groups += summary["duplicate_groups"]
        for part, n in summary["drops"].items():
            result.drops[part] = result.drops.get(part, 0) + n
        examples = sorted([*examples, *summary["examples"]], key=lambda e: e["first"])
        del examples[EXAMPLES:]
    result.examples = [{k: v for k, v in e.items() if k != "first"} for e in examples]
    return result


@dataclass
class RejectionStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """``rejected/duplicates.jsonl`` written by one unit (:class:`curator.stages.OneUnit`),
    not the driver: one line per dropped copy, in input order, streamed partition by
    partition from the buckets' decisions (``parts``: the partitions with drops, in
    input order)."""

    target: str
    work_dir: str
    parts: list[str]
    name: str = "ingest_duplicate_rejections"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        rows = 0
        with atomic_file(Path(self.target)) as f:
            for part in self.parts:
                for line in read_decisions(self.work_dir, part)["rejection"].drop_nulls():
                    f.write(line + b"\n")
                    rows += 1
        self.stat_update("rows", rows)
        return FileGroupTask(data=[], _metadata={"rows": rows})
