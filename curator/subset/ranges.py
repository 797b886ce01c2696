"""The subset's plan on the engine's exchange: no per-document state in the driver.

The count pass sends every document (its order hash, id, units, source, score, and
where it is: partition and row) through the exchange, **range-partitioned by its order
hash** (:func:`curator.exchange.range_of`): range ``r`` holds one contiguous slice of
the global order ``(stable_uint64(seed, id), id)``, and every document of range ``r``
comes before every document of range ``r + 1``.

- **rank** (one unit per range): the range's documents sorted into the global order;
  repeated ids found (equal ids have equal hashes: they meet in one range); each
  document's stratum named; ``<work>/ranked/r<r>.parquet`` written; its summary is the
  range's column of the table strata x ranges (documents, units, shortest document per
  stratum) and its repeated ids (a count and the three that come first in the input).
- the **driver** adds the columns up: the strata's totals, the quotas (D'Hondt), and
  for each tier and stratum the range where its prefix ends and the quota left there
  (:func:`curator.subset.planning.plan_table`). That is all it holds: strata x ranges.
- **select** (one unit per range): each document's first tier: in a tier when its range
  is before the range where its stratum's prefix ends, or in that range and within the
  quota left (the exact cut, resolved only there). It writes the range's id file
  ``<output>/plan_ids/r<r>.parquet`` (id, stratum, first_budget, in the global order),
  the chosen rows back by partition, ``<work>/parts/<partition>/r<r>.parquet`` (row,
  first tier: what that partition's writer reads), and in its summary what the cut
  ranges took (documents, units).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from curator.errors import CuratorError
from curator.exchange import BucketTask, Exchange, read_summaries, write_summary
from curator.io import shared
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.subset.planning import EXAMPLES, Cuts, stratum_keys
from curator.tasks import FileGroupTask

#: what the count pass sends through the exchange, one row a document
MAP_SCHEMA: dict[str, Any] = {
    "hash": pl.UInt64, "id": pl.String, "tokens": pl.Int64, "source": pl.String,
    "score": pl.Float64, "part": pl.Int32, "row": pl.Int64}
#: the folder of ``plan.json``'s per-range id files, beside it in the output
IDS_DIR = "plan_ids"


def ranked_file(work: str | Path, r: int) -> Path:
    return Path(work) / "ranked" / f"r{r:05d}.parquet"


def parts_folder(work: str | Path, part: int) -> Path:
    """Where the select units leave a partition's chosen rows, one file per range."""
    return Path(work) / "parts" / str(part)


def ids_file(output: str | Path, r: int) -> Path:
    return Path(output) / IDS_DIR / f"r{r:05d}.parquet"


def rank_work(work: str | Path) -> Path:
    return Path(work) / "rank"


def select_work(work: str | Path) -> Path:
    return Path(work) / "select"


def _parquet(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf, compression="zstd", statistics=False)
    return buf.getvalue()


@dataclass
class RankStage(ProcessingStage[BucketTask, FileGroupTask]):
    """One range: sorted, repeated ids found, strata named (the module docstring)."""

    exchange: Exchange
    bands: list[int]
    cut_points: list[float] | None  # None: no score field
    work_dir: str
    name: str = "rank"

    def process(self, task: BucketTask) -> FileGroupTask:
        r = task.data
        df = self.exchange.read(r, MAP_SCHEMA).sort(["hash", "id"])
        dup = df.filter(pl.col("id").is_duplicated())
        examples: list[dict[str, Any]] = []
        if dup.height:
            first = dup.sort(["part", "row"]).unique("id", keep="first", maintain_order=True)
            examples = [{"id": i, "first": [p, w]} for i, p, w in
                        first.head(EXAMPLES).select("id", "part", "row").iter_rows()]
        keys = stratum_keys(df["source"].to_numpy(), df["tokens"].to_numpy(),
                            df["score"].to_numpy(), self.bands, self.cut_points)
        ranked = df.select("hash", "id", "tokens", "part", "row").with_columns(
            stratum=pl.Series(keys.tolist(), dtype=pl.String))
        write_atomic(ranked_file(self.work_dir, r), _parquet(ranked))
        table = ranked.group_by("stratum").agg(
            docs=pl.len(), tokens=pl.col("tokens").sum(),
            shortest=pl.col("tokens").min()).sort("stratum")
        summary = {"range": r, "documents": df.height,
                   "strata": {s: [int(d), int(t), int(m)] for s, d, t, m in table.iter_rows()},
                   "repeated_ids": dup["id"].n_unique() if dup.height else 0,
                   "examples": examples}
        target = write_summary(rank_work(self.work_dir), r, summary)
        self.stat_update("documents", df.height)
        return FileGroupTask(data=[str(target)], _metadata={"rows": df.height})


@dataclass
class Table:
    """The rank units' summaries added up: the table strata x ranges, and repeated ids."""

    strata: list[str]
    docs: np.ndarray  # int64 [stratum, range]
    tokens: np.ndarray
    shortest: list[int]
    repeated: int
    examples: list[str]


def gather(work: str | Path, ranges: int) -> Table:
    """Every rank unit's summary, in range order."""
    columns: list[dict[str, list[int]]] = []
    repeated, examples = 0, []
    for summary in read_summaries(rank_work(work), ranges, "the subset's ranking"):
        columns.append(summary["strata"])
        repeated += summary["repeated_ids"]
        examples = sorted([*examples, *summary["examples"]], key=lambda e: e["first"])
        del examples[EXAMPLES:]
    strata = sorted({s for col in columns for s in col})
    row = {s: i for i, s in enumerate(strata)}
    docs = np.zeros((len(strata), ranges), dtype=np.int64)
    tokens = np.zeros((len(strata), ranges), dtype=np.int64)
    shortest = np.full(len(strata), np.iinfo(np.int64).max, dtype=np.int64)
    for r, col in enumerate(columns):
        for s, (d, t, m) in col.items():
            docs[row[s], r], tokens[row[s], r] = d, t
            shortest[row[s]] = min(shortest[row[s]], m)
    return Table(strata, docs, tokens, [int(x) for x in shortest], repeated,
                 [e["id"] for e in examples])


def refuse_repeated(table: Table) -> None:
    """``id_field_not_unique``, as the one-process reference (tests/subset/_oracle.py) says it."""
    if table.repeated:
        raise CuratorError("id_field_not_unique",
                           f"{table.repeated} ids occur more than once, e.g. "
                           f"{table.examples}: the subset needs one id per document",
                           examples=table.examples)


@dataclass
class SelectStage(ProcessingStage[BucketTask, FileGroupTask]):
    """One range: each document's first tier, the range's id file, the chosen rows by
    partition (the module docstring)."""

    strata: list[str]
    cuts: Cuts
    budgets: list[int]
    work_dir: str
    output_dir: str
    name: str = "select"

    def process(self, task: BucketTask) -> FileGroupTask:
        r = task.data
        df = pl.read_parquet(shared.localize(ranked_file(self.work_dir, r)))
        index = {s: i for i, s in enumerate(self.strata)}
        stratum = df["stratum"].replace_strict(index, return_dtype=pl.Int32).to_numpy()
        cum = df.select(pl.col("tokens").cum_sum().over("stratum")).to_series().to_numpy()
        tokens = df["tokens"].to_numpy()
        n_tiers = len(self.budgets)
        first = np.full(df.height, n_tiers, dtype=np.int8)
        found: list[list[int]] = []
        inside_next = None
        for t in reversed(range(n_tiers)):
            at = np.asarray(self.cuts.at[t], dtype=np.int64)[stratum]
            left = np.asarray(self.cuts.left[t], dtype=np.int64)[stratum]
            inside = (r < at) | ((r == at) & (cum <= left))
            if inside_next is not None and np.any(inside & ~inside_next):
                raise CuratorError("tiers_do_not_nest",
                                   f"range {r}: documents of tier {t} are not in tier {t + 1}")
            inside_next = inside
            first[inside] = t
            for s in sorted({int(x) for x in np.flatnonzero(np.asarray(self.cuts.at[t]) == r)}):
                mine = inside & (stratum == s)
                found.append([t, s, int(mine.sum()), int(tokens[mine].sum())])
        budget = [*self.budgets, None]
        table = pa.table({
            "id": df["id"].to_arrow(), "stratum": df["stratum"].to_arrow(),
            "first_budget": pa.array([budget[i] for i in first.tolist()], pa.int64())})
        with atomic_file(ids_file(self.output_dir, r)) as f:  # the output's storage too
            pq.write_table(table, f, compression="zstd")
        chosen = df.select("part", "row").with_columns(first=pl.Series(first)).filter(
            pl.col("first") < n_tiers)
        for (part,), rows in chosen.partition_by("part", as_dict=True,
                                                 maintain_order=True).items():
            write_atomic(parts_folder(self.work_dir, int(part)) / f"r{r:05d}.parquet",
                         _parquet(rows.select("row", "first")))
        found.sort()
        target = write_summary(select_work(self.work_dir), r,
                               {"range": r, "documents": df.height,
                                "chosen": chosen.height, "cuts": found})
        self.stat_update("documents", df.height)
        return FileGroupTask(data=[str(target)], _metadata={"rows": df.height})


def found_cuts(work: str | Path, ranges: int) -> list[list[int]]:
    """What every cut range took: ``[tier, stratum, documents, units]`` rows."""
    out: list[list[int]] = []
    for summary in read_summaries(select_work(work), ranges, "the subset's selection"):
        out += summary["cuts"]
    return out


def first_tiers(work: str | Path, part: int, rows: int, tiers: int) -> np.ndarray:
    """A partition's first tier of each row (``tiers``: in none), from every range's
    chosen rows (read on the node that writes the partition)."""
    first = np.full(rows, tiers, dtype=np.int8)
    for f in shared.listing(parts_folder(work, part), "*.parquet"):
        chosen = pl.read_parquet(shared.localize(f))
        first[chosen["row"].to_numpy()] = chosen["first"].to_numpy()
    return first
