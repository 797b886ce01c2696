"""Connected components of the verified pairs, on the exchange: alternating large-star
and small-star rounds (Kiveris et al., "Connected Components in MapReduce and Beyond",
SoCC 2014), one engine phase each, one reduce unit per bucket of labels.

The edges live in an exchange keyed by the first column ``u`` of rows ``(u, v)``; each
phase reads one exchange and writes the next:

- **large-star** (its input holds both directions of every edge): for each node ``u``,
  ``m`` = the smallest label of ``u`` and its neighbours; every neighbour ``v > u`` is
  linked to ``m`` (row ``(v, m)``, keyed by ``v``: the small-star's input). Changed: the
  links with ``m != u``.
- **small-star** (its input holds each edge once, at its larger end): for each ``u``
  with smaller neighbours ``N``, ``m = min N``; ``u`` and every ``v`` of ``N`` are
  linked to ``m`` (both directions, the large-star's input). Changed: ``|N| - 1``.

When a large-star and the small-star after it change nothing, every component is a star
around its smallest label: its survivor (labels sort by the ``keep`` rule,
:mod:`curator.dedup.labels`). The driver reads one number per phase (the changed count,
an engine statistic); no process holds more than one bucket of edges.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from curator.dedup.labels import parts_of, write_by_part
from curator.exchange import BucketTask, Exchange, write_summary
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

EDGES: dict[str, Any] = {"u": pl.Binary, "v": pl.Binary}
#: rounds (one large-star and one small-star each) before the step gives up; the
#: algorithm needs O(log^2 n) rounds
MAX_ROUNDS = 200


def size_bin(size: int) -> str:
    """The histogram bin of a component size: ``"2"``, ``"3-4"``, ``"5-8"``, ..."""
    if size <= 2:
        return "2"
    hi = 1 << (size - 1).bit_length()
    return f"{hi // 2 + 1}-{hi}"


@dataclass
class StarStage(ProcessingStage[BucketTask, FileGroupTask]):
    """One bucket of one large-star (``large``) or small-star round."""

    source: Exchange
    target: Exchange
    large: bool
    name: str = "dedup_components"

    def process(self, task: BucketTask) -> FileGroupTask:
        bucket = task.data
        e = self.source.read(bucket, EDGES).unique()
        if self.large:
            m = e.group_by("u").agg(mv=pl.col("v").min()).with_columns(
                m=pl.min_horizontal("u", "mv"))
            out = e.join(m.select("u", "m"), on="u").filter(pl.col("v") > pl.col("u"))
            changed = out.filter(pl.col("m") != pl.col("u")).height
            nxt = out.select(u="v", v="m")
        else:
            m = e.group_by("u").agg(m=pl.col("v").min(), k=pl.len())
            changed = int(m["k"].sum() - m.height) if m.height else 0
            links = pl.concat([
                e.join(m.select("u", "m"), on="u").filter(pl.col("v") != pl.col("m"))
                .select(a="v", b="m"),
                m.select(a="u", b="m")])
            nxt = pl.concat([links.select(u="a", v="b"), links.select(u="b", v="a")])
        self.target.write(f"b{bucket:05d}", nxt.unique().sort("u", "v"), "u")
        self.stat_update("edges", e.height)
        self.stat_update("changed", changed)
        return FileGroupTask(data=[str(bucket)], _metadata={"rows": e.height})


@dataclass
class AssignStage(ProcessingStage[BucketTask, FileGroupTask]):
    """The stars read off: each leaf's survivor (its one smaller neighbour), by the
    survivor's partition; the bucket's component sizes in its summary."""

    source: Exchange
    work_dir: str
    name: str = "dedup_assign"

    def process(self, task: BucketTask) -> FileGroupTask:
        bucket = task.data
        e = self.source.read(bucket, EDGES).unique()
        leaves = e.filter(pl.col("v") < pl.col("u")).group_by("u").agg(s=pl.col("v").min()) \
            .sort("u")
        write_by_part(Path(self.work_dir) / "assign", leaves, parts_of(leaves["s"]),
                      f"b{bucket:05d}")
        roots = e.filter(pl.col("v") > pl.col("u")).group_by("u").agg(n=pl.len())
        roots = roots.join(leaves.select("u"), on="u", how="anti")
        hist: dict[str, int] = {}
        for n in roots["n"].to_list():
            b = size_bin(n + 1)
            hist[b] = hist.get(b, 0) + 1
        largest = int(roots["n"].max() + 1) if roots.height else 0  # type: ignore[operator]
        write_summary(Path(self.work_dir) / "components", bucket,
                      {"components": roots.height, "removed": leaves.height,
                       "largest": largest, "sizes": hist})
        self.stat_update("removed", leaves.height)
        return FileGroupTask(data=[str(bucket)], _metadata={"rows": e.height})
