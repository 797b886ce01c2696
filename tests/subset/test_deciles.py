"""The score deciles by radix selection (curator.subset.deciles): exactly the cut points
of sorting every score, for any split of the scores into partitions; the keys keep the
scores' order, and the driver's state is one pass's histogram."""

from __future__ import annotations

import numpy as np
import pytest

from curator.subset import deciles
from tests.subset._oracle import score_cut_points

RNG = np.random.default_rng(20261205)
CASES = {
    "uniform": RNG.random(1000),
    "normal": RNG.normal(size=5000),
    "ties and signed zeros": np.repeat([0.5, -0.0, 0.0, -3.0], 300),
    "one score": np.array([1.0]),
    "extremes and subnormals": np.array([2.0, -1e-310, 5e-324, -5e-324, 1e308, -1e308]),
    "three values": RNG.integers(0, 3, 777).astype(float),
    "two decimals": np.round(RNG.random(10007), 2),
    "one bin of the first digit": 0.5 + RNG.random(4000) * 1e-12,
}


def select(parts: list[np.ndarray]) -> list[float]:
    """What the subset's driver does with the units' histograms (files aside)."""
    selection = None
    for step in range(deciles.PASSES):
        prefixes = selection.distinct if selection is not None else [0]
        counts = np.zeros((len(prefixes), deciles.DIGITS), np.int64)
        for part in parts:
            rows = deciles.histogram(deciles.order_keys(part), prefixes,
                                     step * deciles.DIGIT_BITS)
            np.add.at(counts, (rows[:, 0], rows[:, 1]), rows[:, 2])
        if selection is None:
            selection = deciles.Selection.start(int(counts.sum()))
        selection.step(counts)
    assert selection is not None
    return selection.cut_points()


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("parts", [1, 7, 64])
def test_the_cut_points_are_the_sorted_ones_for_any_partitioning(name: str,
                                                                  parts: int) -> None:
    scores = CASES[name]
    got = select([p for p in np.array_split(RNG.permutation(scores), parts)])
    want = score_cut_points(scores)
    assert [repr(x) for x in got] == [repr(x) for x in want]


def test_keys_keep_the_order_of_the_scores_and_give_them_back() -> None:
    scores = np.concatenate([v for v in CASES.values()])
    keys = deciles.order_keys(scores)
    order = np.argsort(keys, kind="stable")
    assert np.all(np.diff(scores[order]) >= 0)
    assert [deciles.key_score(int(k)) for k in keys[:50]] == [float(s) + 0.0
                                                             for s in scores[:50]]
    assert deciles.order_keys(np.array([-0.0]))[0] == deciles.order_keys(np.array([0.0]))[0]


def test_a_pass_counts_only_the_keys_under_the_targets_prefixes() -> None:
    keys = deciles.order_keys(np.array([0.25, 0.5, 0.5, 0.75, -1.0]))
    top = sorted({int(k) >> 48 for k in keys[1:3]})  # 0.5's first digit
    rows = deciles.histogram(keys, top, 16)
    assert rows[:, 2].sum() == 2 and set(rows[:, 0]) == {0}
    assert deciles.histogram(keys[:0], [0], 0).shape == (0, 3)
