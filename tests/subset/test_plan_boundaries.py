"""The plan at its boundaries (docs/subset.md): a token count equal to a length-band
bound is in the upper band, the score deciles' cut points are ``ordered[n*d//10]`` (a
score equal to one is in the upper decile), and a stratum whose quota equals its
shortest document takes that document and is not starved."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from tests.subset._oracle import Plan, global_order, make_plan


def plan(tokens: Sequence[int], budgets: Sequence[int], bands: Sequence[int] = (128, 512),
         scores: Sequence[float] | None = None) -> Plan:
    n = len(tokens)
    return make_plan(pl.Series("id", [f"d{i}" for i in range(n)]),
                     np.arange(n, dtype=np.uint64), np.asarray(tokens, dtype=np.int64),
                     ["s"] * n, None if scores is None else np.asarray(scores, dtype=float),
                     budgets, bands, "tokens")


def strata_of(p: Plan) -> list[str]:
    return [p.strata[s] for s in p.stratum]


def test_a_count_equal_to_a_band_bound_is_in_the_upper_band() -> None:
    p = plan([127, 128, 511, 512, 513], budgets=[10_000])
    assert strata_of(p) == ["s|0-128", "s|128-512", "s|128-512", "s|512+", "s|512+"]


def test_score_deciles_cut_at_ordered_n_d_over_10_and_a_tie_goes_up() -> None:
    # ten distinct scores: the cut points are the second to the tenth, each score its
    # own decile (a score equal to a cut point is in the decile above it)
    scores = [0.05 * k for k in range(10)]
    p = plan([10] * 10, budgets=[100], scores=scores[::-1])
    assert p.cut_points == scores[1:]
    assert strata_of(p) == [f"s|0-128|d{9 - k}" for k in range(10)]
    # twenty scores: cut d at index 2d, so each decile holds two documents
    scores20 = [float(k) for k in range(20)]
    p20 = plan([10] * 20, budgets=[200], scores=scores20)
    assert p20.cut_points == [float(2 * d) for d in range(1, 10)]
    assert strata_of(p20) == [f"s|0-128|d{k // 2}" for k in range(20)]


def _starved(p: Plan) -> list[list[str]]:
    return [w["strata"] for w in p.warnings if w["id"] == "starved_strata"]


def test_a_quota_equal_to_the_shortest_document_takes_it_and_is_not_starved() -> None:
    # one stratum (one source, one band) whose shortest document has 100 tokens
    p = plan([100, 150, 200], budgets=[99, 100], bands=[1000])
    assert [t.quotas for t in p.tiers] == [[99], [100]]
    assert _starved(p) == [["s|0-1000"]], "only the 99-token quota is starved"
    assert p.tiers[0].document_count == 0
    assert p.tiers[1].achieved == 100


def test_runs_of_equal_hashes_are_each_ordered_by_id() -> None:
    # two runs of equal hashes next to each other: each is sorted by id
    hashes = np.array([5, 5, 6, 6, 9, 7, 7], dtype=np.uint64)
    ids = ["b", "a", "d", "c", "e", "g", "f"]
    assert global_order(hashes, ids).tolist() == [1, 0, 3, 2, 6, 5, 4]
