"""The driver's multiset arithmetic (curator/audit/multisets.py) against ``Counter``'s."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import polars as pl

from curator.audit.multisets import Rows, counts, differences, distinct, total


def _frame(c: Counter[str]) -> pl.DataFrame:
    """A frame of ``c``, a key in one row with its count or in one row per element
    (as the driver holds a target's ids), by turns."""
    if sum(c.values()) % 2:
        rows = list(c.elements())
        return pl.DataFrame({"k": rows, "n": [1] * len(rows)},
                            schema={"k": pl.String, "n": pl.Int64})
    return pl.DataFrame({"k": list(c), "n": list(c.values())},
                        schema={"k": pl.String, "n": pl.Int64})


def _as_counter(frame: pl.DataFrame) -> Counter[str]:
    assert frame["k"].is_unique().all()  # one row per key
    return Counter(dict(zip(frame["k"].to_list(), frame["n"].to_list(), strict=True)))


def test_differences_totals_and_distinct_are_counter_arithmetic() -> None:
    rnd = random.Random(11)
    for trial in range(200):
        keys = [f'"k{i}"' for i in range(rnd.randint(0, 12))]

        def part(keys: list[str] = keys) -> Counter[str]:
            return Counter(rnd.choice(keys) for _ in range(rnd.randint(0, 6))) if keys \
                else Counter()

        a = [part() for _ in range(rnd.randint(0, 4))]
        b = [part() for _ in range(rnd.randint(0, 4))]
        # each side mixes maps and frames, a key possibly in several parts
        a_in = [_frame(c) if i % 2 else dict(c) for i, c in enumerate(a)]
        b_in = [dict(c) if i % 2 else _frame(c) for i, c in enumerate(b)]
        sum_a, sum_b = sum(a, Counter()), sum(b, Counter())
        minus, plus = differences(a_in, b_in)
        assert _as_counter(minus) == sum_a - sum_b, trial
        assert _as_counter(plus) == sum_b - sum_a, trial
        assert total(a_in) == sum(sum_a.values())
        assert distinct(a_in) == len(sum_a)
    empty = differences([], [{}])
    assert empty[0].height == empty[1].height == 0


def test_rows_of_shared_columns_net_as_their_elements() -> None:
    """Rows of one column (a key repeated in several rows, as a line repeated in the
    reference) net row by row with each other, and with frames, maps and rows of
    another column, to what their elements give."""
    rnd = random.Random(12)
    for trial in range(300):
        columns = []
        for _ in range(2):  # two shared columns, keys repeated across rows
            keys = [f'"k{rnd.randint(0, 6)}"' for _ in range(rnd.randint(0, 10))]
            columns.append(pl.Series(keys, dtype=pl.String))

        def part(columns: list[pl.Series] = columns) -> tuple[object, Counter[str]]:
            kind = rnd.choice(["rows", "rows", "frame", "map"])
            column = rnd.choice(columns)
            if kind == "rows" and len(column):
                rows = np.array([rnd.randrange(len(column)) for _ in range(rnd.randint(0, 8))],
                                np.int64)
                return Rows(column, rows), Counter(column.gather(rows).to_list())
            c = Counter(f'"k{rnd.randint(0, 6)}"' for _ in range(rnd.randint(0, 5)))
            return (_frame(c) if kind == "frame" else dict(c)), c

        a = [part() for _ in range(rnd.randint(0, 4))]
        b = [part() for _ in range(rnd.randint(0, 4))]
        sum_a = sum((c for _, c in a), Counter())
        sum_b = sum((c for _, c in b), Counter())
        minus, plus = differences([m for m, _ in a], [m for m, _ in b])
        assert _as_counter(minus) == sum_a - sum_b, trial
        assert _as_counter(plus) == sum_b - sum_a, trial
        assert total(m for m, _ in a) == sum(sum_a.values()), trial
        assert distinct([m for m, _ in a]) == len(sum_a), trial
        for m, c in a:
            assert counts(m) == dict(c), trial  # type: ignore[arg-type]
