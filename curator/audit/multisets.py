"""The audit driver's multisets of ids and keys (the driver's share of a large audit).

A multiset is held one of three ways:

- a map ``{key: count}`` (what a unit wrote to its scan file);
- a frame ``(k: str, n: i64)``, a key possibly in several rows;
- :class:`Rows`: rows of a column shared by several multisets (the reference's lines
  table, :func:`curator.audit.join.complete`), one row number per element. A completed
  target's ids are the rows its lines matched, the reference file's ids its own rows.

:func:`differences` nets multisets of :class:`Rows` over the same column row by row
first (integer counts, numpy), so only the rows whose counts do not cancel become keys
in the one group-by: when the target is the reference less the removed records, that
group-by holds the removed records, not the whole corpus twice. The result is what the
sum of every multiset's elements gives (``Counter`` arithmetic, checked in the tests):
a key that several rows share (a line repeated in the reference) nets across them in
the group-by.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl

EMPTY = pl.DataFrame(schema={"k": pl.String, "n": pl.Int64})


@dataclass(frozen=True, eq=False)
class Rows:
    """The multiset ``{values[r] for r in rows}``: ``values`` a column without nulls at
    ``rows``, shared (the same object) by the multisets that net row by row."""

    values: pl.Series
    rows: np.ndarray  # int64 row numbers, one per element

    def __len__(self) -> int:
        return len(self.rows)

    def keys(self) -> pl.Series:
        """The elements, one per row."""
        return self.values.gather(self.rows)


Multiset = dict[str, int] | pl.DataFrame | Rows


def as_frame(m: Multiset, sign: int = 1) -> pl.DataFrame:
    """A multiset as a frame ``(k, n)`` (``n`` times ``sign``), a key possibly in
    several rows."""
    if isinstance(m, pl.DataFrame):
        return m if sign == 1 else m.select("k", n=-pl.col("n"))
    if isinstance(m, Rows):
        return pl.DataFrame({"k": m.keys(), "n": np.full(len(m), sign, np.int64)})
    return pl.DataFrame({"k": list(m), "n": [sign * n for n in m.values()]},
                        schema={"k": pl.String, "n": pl.Int64})


def counts(m: Multiset) -> dict[str, int]:
    """A multiset as a map ``{key: count}``."""
    if isinstance(m, dict):
        return m
    frame = as_frame(m).group_by("k").agg(pl.col("n").sum())
    return dict(zip(frame["k"].to_list(), frame["n"].to_list(), strict=True))


def total(maps: Iterable[Multiset]) -> int:
    """How many elements the multisets hold together."""
    return sum(len(m) if isinstance(m, Rows) else
               int(m["n"].sum()) if isinstance(m, pl.DataFrame) else sum(m.values())
               for m in maps)


def distinct(maps: Iterable[Multiset]) -> int:
    """How many distinct keys the multisets hold together."""
    keys = [m.keys() if isinstance(m, Rows) else as_frame(m)["k"] for m in maps if len(m)]
    return pl.concat(keys).n_unique() if keys else 0


def differences(a: Iterable[Multiset], b: Iterable[Multiset]
                ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(A - B, B - A)``, A the sum of the multisets ``a`` and B of ``b``, as
    ``Counter`` subtraction: the keys with more in one than the other, with how many
    more (frames ``(k, n)``). :class:`Rows` over one column are netted row by row
    first; then one group-by of what is left, ``b``'s counts negated."""
    parts: list[pl.DataFrame] = []
    shared: dict[int, tuple[pl.Series, list[tuple[Rows, int]]]] = {}
    for side, sign in ((a, 1), (b, -1)):
        for m in side:
            if not len(m):
                continue
            if isinstance(m, Rows):
                shared.setdefault(id(m.values), (m.values, []))[1].append((m, sign))
            else:
                parts.append(as_frame(m, sign))
    for values, members in shared.values():
        net = np.zeros(len(values), np.int64)
        for sign in (1, -1):  # one count per side, whatever the number of members
            rows = [m.rows for m, s in members if s == sign]
            if rows:
                net += sign * np.bincount(np.concatenate(rows), minlength=len(values))
        left = np.flatnonzero(net)
        if len(left):
            parts.append(pl.DataFrame({"k": values.gather(left), "n": net[left]}))
    if not parts:
        return EMPTY, EMPTY
    both = pl.concat(parts).group_by("k").agg(pl.col("n").sum())
    return (both.filter(pl.col("n") > 0),
            both.filter(pl.col("n") < 0).select("k", n=-pl.col("n")))
