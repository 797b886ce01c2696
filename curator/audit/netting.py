"""The audit's multisets netted on the engine's exchange (:mod:`curator.exchange`), so
the driver holds no per-document state (issue 27; docs/audit.md, "The multisets on the
exchange").

**Map** (the scan units, :class:`curator.audit.scan.ScanStage`): each file's multisets
(its documents' ids, its containment keys, a rejected file's removed ids) become rows
``(k, m, n)`` of the exchange, keyed by ``k``: the key, which multiset (:data:`REF_ID`
...), and how many times the file holds it (:func:`exchange_rows`). A file plays each
role it has (a file both target and reference sends both).

**Reduce** (:class:`NetStage`, one unit per bucket): every copy of a key is in its
bucket, so the multiset differences are computed there, as ``Counter`` subtraction:

- record accounting: ``input ids - (output ids + removed ids)`` (missing) and the
  reverse (unexpected);
- containment: ``target keys - reference keys`` (target rows not in the reference);
- the target's ids: how many, how many distinct (duplicate ids);
- the keyed rows of the target and of the reference.

It writes a summary (:func:`curator.exchange.write_summary`): counts, and the
:data:`EXAMPLES` smallest missing and unexpected ids (Python string order).

**Driver** (:func:`summarise`): sums the counts and keeps the :data:`EXAMPLES` smallest
examples of all buckets: the smallest overall, whatever the bucket count.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from curator.audit.summary import FileScan
from curator.exchange import BucketTask, Exchange, read_summaries, write_summary
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

#: the multisets, as the exchange's ``m`` column
REF_ID, OUT_ID, REMOVED_ID, TARGET_KEY, REF_KEY = range(5)
SCHEMA: dict[str, Any] = {"k": pl.String, "m": pl.Int8, "n": pl.Int64}
#: examples of missing and unexpected ids kept (the report's ``missing_ids``)
EXAMPLES = 5


def exchange_rows(scan: FileScan, *, reference: bool, target: bool, rejected: bool
                  ) -> pl.DataFrame:
    """A file's multisets as exchange rows ``(k, m, n)`` for each role it plays."""
    parts: list[pl.DataFrame] = []

    def add(counts: dict[str, int], m: int) -> None:
        if counts:
            parts.append(pl.DataFrame({"k": list(counts), "m": [m] * len(counts),
                                       "n": list(counts.values())}, schema=SCHEMA))

    if reference:
        add(scan.ids, REF_ID)
        add(scan.keys, REF_KEY)
    if target:
        add(scan.ids, OUT_ID)
        add(scan.keys, TARGET_KEY)
    if rejected and scan.removed_ids:
        removed: dict[str, int] = {}
        for key, n in scan.removed_ids.items():  # ``id|gate``: the id
            k = key.rsplit("|", 1)[0]
            removed[k] = removed.get(k, 0) + n
        add(removed, REMOVED_ID)
    return pl.concat(parts) if parts else pl.DataFrame(schema=SCHEMA)


def _sum(frame: pl.DataFrame, *ms: int, sign: int = 1) -> pl.DataFrame:
    """``(k, n)``: the counts of the multisets ``ms`` per key, times ``sign``."""
    return frame.filter(pl.col("m").is_in(list(ms))).select("k", n=pl.col("n") * sign)


def _net(plus: pl.DataFrame, minus: pl.DataFrame) -> pl.DataFrame:
    """``(k, n)``: per key, ``plus - minus`` where it is not zero."""
    both = pl.concat([plus, minus.select("k", n=-pl.col("n"))])
    return both.group_by("k").agg(pl.col("n").sum()).filter(pl.col("n") != 0)


def _smallest(keys: pl.Series) -> list[str]:
    return heapq.nsmallest(EXAMPLES, keys.to_list())


def net_bucket(frame: pl.DataFrame) -> dict[str, Any]:
    """One bucket's summary (module docstring)."""
    accounting = _net(_sum(frame, REF_ID), _sum(frame, OUT_ID, REMOVED_ID))
    missing = accounting.filter(pl.col("n") > 0)
    unexpected = accounting.filter(pl.col("n") < 0)
    containment = _net(_sum(frame, TARGET_KEY), _sum(frame, REF_KEY))
    out_ids = _sum(frame, OUT_ID)
    return {
        "missing": int(missing["n"].sum()), "missing_ids": _smallest(missing["k"]),
        "unexpected": int(-unexpected["n"].sum()), "unexpected_ids": _smallest(unexpected["k"]),
        "missing_rows": int(containment.filter(pl.col("n") > 0)["n"].sum()),
        "target_keyed": int(_sum(frame, TARGET_KEY)["n"].sum()),
        "reference_keyed": int(_sum(frame, REF_KEY)["n"].sum()),
        "target_ids": int(out_ids["n"].sum()), "target_distinct": out_ids["k"].n_unique(),
        "rows": frame.height,
    }


@dataclass
class NetStage(ProcessingStage[BucketTask, FileGroupTask]):
    """One bucket of the audit's multisets: netted, its summary written."""

    exchange: Exchange
    work_dir: str
    name: str = "audit_net"

    def process(self, task: BucketTask) -> FileGroupTask:
        frame = self.exchange.read(task.data, SCHEMA)
        summary = net_bucket(frame)
        write_summary(self.work_dir, task.data, summary)
        self.stat_update("keys", frame.height)
        return FileGroupTask(data=[], _metadata={"rows": frame.height})


@dataclass
class Netted:
    """The buckets' summaries added up: what the record accounting and the containment
    check read (:class:`curator.audit.checks.AuditFacts`)."""

    missing: int = 0
    unexpected: int = 0
    missing_ids: list[str] = field(default_factory=list)
    unexpected_ids: list[str] = field(default_factory=list)
    missing_rows: int = 0
    target_keyed: int = 0
    reference_keyed: int = 0
    target_ids: int = 0
    target_distinct: int = 0


def summarise(work: str | Path, buckets: int) -> Netted:
    """Every bucket's summary, added up; the :data:`EXAMPLES` smallest examples."""
    total = Netted()
    for s in read_summaries(work, buckets, "the audit's multisets"):
        for name in ("missing", "unexpected", "missing_rows", "target_keyed",
                     "reference_keyed", "target_ids", "target_distinct"):
            setattr(total, name, getattr(total, name) + int(s[name]))
        total.missing_ids = sorted([*total.missing_ids, *s["missing_ids"]])[:EXAMPLES]
        total.unexpected_ids = sorted([*total.unexpected_ids,
                                       *s["unexpected_ids"]])[:EXAMPLES]
    return total
