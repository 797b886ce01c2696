"""curator.profile.stats: quantiles, views, retention, bands, gates, direction, overlap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from curator.profile import stats
from curator.signals.registry import REGISTRY, Grid, SignalSpec

MAX = SignalSpec("toy_max", "max", "ratio", Grid(0.0, 1.0, 21), curator_default=(None, 0.6))
MIN = SignalSpec("toy_min", "min", "ratio", Grid(0.0, 1.0, 21), curator_default=(0.3, None))
INT = SignalSpec("toy_int", "max", "words", Grid(0, 50, 64, integral=True))
IVL = SignalSpec(
    "toy_ivl", "interval", "words", Grid(0, 20, 11, integral=True), curator_default=(5, 40),
    max_grid=Grid(20, 60, 9, integral=True),
)


def _data(n: int = 3000, seed: int = 0, nan_share: float = 0.05):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 4, n)
    w = np.array([3.0, 0.5, 1.25, 7.0])[src]
    s = rng.beta(2, 5, n)
    s[rng.random(n) < nan_share] = np.nan
    s[:3] = [np.inf, -np.inf, np.nan]
    return s, w, src


def _keep_share(mask, s, w):
    return float(w[mask & np.isfinite(s)].sum() / w.sum())


def _block(spec, s, w, src, **kw):
    failures = kw.pop("scoring_failures", 0)
    return stats.signal_block(spec, s, w, src, ["a", "b", "c", "d"],
                              scoring_failures=failures, **kw)


# -- quantiles ---------------------------------------------------------------------------


def test_equal_weights_match_numpy_hazen():
    v = np.random.default_rng(1).normal(size=101)
    qs = list(stats.QUANTILES.values())
    got = stats.weighted_quantiles(v, np.ones_like(v), qs)
    assert got == pytest.approx(np.quantile(v, qs, method="hazen"), abs=1e-12)


def test_weighted_quantiles_hand_values():
    # positions: (1 - .5)/4 = .125, (2 - .5)/4 = .375, (4 - 1)/4 = .75
    got = stats.weighted_quantiles(np.array([3.0, 1.0, 2.0]), np.array([2.0, 1.0, 1.0]),
                                   [0.1, 0.125, 0.5, 0.75, 0.9])
    assert got == pytest.approx([1.0, 1.0, 2.0 + 0.125 / 0.375, 3.0, 3.0])
    # a heavy weight pulls the median onto its value
    # positions .005 and .505: the median is 99% of the way to 10
    assert stats.weighted_quantiles(np.array([0.0, 10.0]), np.array([1.0, 99.0]), [0.5]) == [
        pytest.approx(9.9)]


def test_quantiles_ignore_failed_and_zero_weight_and_none_when_empty():
    v = np.array([np.nan, 1.0, np.inf, 2.0, 100.0, -np.inf])
    w = np.array([5.0, 1.0, 5.0, 1.0, 0.0, 5.0])
    assert stats.weighted_quantiles(v, w, [0.0, 1.0]) == [1.0, 2.0]
    assert stats.weighted_quantiles(np.array([np.nan, np.inf]), np.ones(2), [0.5, 0.9]) == [
        None, None]
    with pytest.raises(ValueError):
        stats.weighted_quantiles(v, -w, [0.5])


def test_views_macro_is_mean_of_per_source_and_micro_is_weighted():
    s, w, src = _data()
    src = np.where(src == 3, 2, src)  # source "d" has no documents at all
    w = np.array([3.0, 0.5, 1.25])[src]  # one weight per source, as sampling gives
    block = _block(MAX, s, w, src)
    per = block["per_source_quantiles"]
    assert list(per) == ["a", "b", "c", "d"] and set(per["d"].values()) == {None}
    for i, name in enumerate("abc"):
        sel = src == i
        expect = np.quantile(s[sel][np.isfinite(s[sel])], 0.5, method="hazen")
        assert per[name]["p50"] == pytest.approx(expect, rel=1e-7)
    for key in stats.QUANTILES:
        mean = np.mean([per[name][key] for name in "abc"])
        assert block["views"]["macro"][key] == pytest.approx(mean, rel=1e-7)
    micro = stats.weighted_quantiles(s, w, list(stats.QUANTILES.values()))
    assert list(block["views"]["micro"].values()) == pytest.approx(micro, rel=1e-7)
    assert block["views"]["micro"]["p50"] != block["views"]["macro"]["p50"]


def test_histogram_raw_counts_and_health():
    s, w, src = _data()
    non_finite = int((~np.isfinite(s)).sum())
    block = _block(MAX, s, w, src, scoring_failures=2)
    hist = block["histogram"]
    assert hist["view"] == "raw" and len(hist["edges"]) == 33 and len(hist["counts"]) == 32
    assert sum(hist["counts"]) == block["n_scored"] == len(s) - non_finite
    assert block["health"] == {
        "documents_attempted": len(s), "documents_scored": len(s) - non_finite,
        "scoring_failures": 2, "non_finite_scores": non_finite - 2,
    }
    with pytest.raises(ValueError):
        _block(MAX, s, w, src, scoring_failures=non_finite + 1)


# -- retention ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [MAX, MIN, INT])
def test_one_sided_curve_matches_brute_force_masks(spec):
    s, w, src = _data(seed=2)
    if spec is INT:
        s = np.round(s * 60)  # integral scores: many ties exactly on grid points
    else:
        s[10:60] = spec.grid.values()[5]  # ties on a grid point
    block = _block(spec, s, w, src)
    curve = block["retention"]
    assert block["retention_view"] == "micro"
    assert [p["threshold"] for p in curve] == [
        (int(t) if spec.grid.integral else float(t)) for t in spec.grid.values()]
    if spec is INT:
        assert all(type(p["threshold"]) is int for p in curve)
    for point in curve:
        expect = _keep_share(spec.keep_one(point["threshold"], s), s, w)
        assert point["retained"] == pytest.approx(expect, abs=6e-7)


def test_interval_surface_and_marginals_match_brute_force():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 70, 2000).astype(float)
    s[:40] = np.nan
    w = rng.uniform(0.5, 2.0, 2000)
    src = rng.integers(0, 4, 2000)
    ret = _block(IVL, s, w, src)["retention"]
    assert ret["kind"] == "surface"
    assert ret["min_axis"] == [int(x) for x in IVL.grid.values()]
    assert ret["max_axis"] == [int(x) for x in IVL.max_grid.values()]
    for i, lo in enumerate(ret["min_axis"]):
        for j, hi in enumerate(ret["max_axis"]):
            expect = _keep_share(IVL.keep(s, lo, hi), s, w)
            assert ret["retained"][i][j] == pytest.approx(expect, abs=6e-7)
    for p in ret["marginal_min"]:
        assert p["retained"] == pytest.approx(_keep_share(IVL.keep(s, lo=p["threshold"]), s, w),
                                              abs=6e-7)
    for p in ret["marginal_max"]:
        assert p["retained"] == pytest.approx(_keep_share(IVL.keep(s, hi=p["threshold"]), s, w),
                                              abs=6e-7)
    assert "marginal" in ret["marginal_note"]


def test_bands_are_contiguous_inclusive_runs():
    curve = [{"threshold": t, "retained": r} for t, r in enumerate(
        [0.5, 0.8, 0.9, 0.999, 0.85, 0.995, 0.996, 0.81])]
    assert stats._bands(curve, 0.8, 0.995) == [
        {"threshold_low": 1, "threshold_high": 2,
         "retained_at_threshold_low": 0.8, "retained_at_threshold_high": 0.9},
        {"threshold_low": 4, "threshold_high": 5,
         "retained_at_threshold_low": 0.85, "retained_at_threshold_high": 0.995},
        {"threshold_low": 7, "threshold_high": 7,
         "retained_at_threshold_low": 0.81, "retained_at_threshold_high": 0.81},
    ]
    assert stats._bands(curve, 0.9991, 0.9992) == []


def test_block_bands_follow_band_search_and_the_curve():
    s, w, src = _data(seed=4)
    for search in (None, {"min_keep_rate": 0.5, "max_keep_rate": 0.7}):
        block = _block(MAX, s, w, src, band_search=search)
        lo, hi = (0.8, 0.995) if search is None else (0.5, 0.7)
        inside = [p["threshold"] for p in block["retention"] if lo <= p["retained"] <= hi]
        bands = block["retention_stable_bands"]
        assert bands and inside
        assert bands[0]["threshold_low"] == inside[0]
        assert bands[-1]["threshold_high"] == inside[-1]
    assert "retention_stable_bands" not in _block(IVL, s * 60, w, src)


def test_a_band_ends_at_its_last_grid_point_inclusive() -> None:
    """A band's ``threshold_high`` is its last in-range grid point: one that sits
    exactly on ``max_keep_rate`` (as float arithmetic gives it) is in; the first point
    beyond is out; a band running to the curve's end ends at the last grid point."""
    hi = 0.3 * 3  # 0.8999999999999999: the rounded share 0.9 is on it, within the slack
    curve = [{"threshold": t, "retained": r} for t, r in zip(
        [0, 2, 4, 6, 8, 10, 12, 14, 16],
        [0.4, 0.5, 0.7, 0.9, 0.900001, 0.6, 0.8, 0.85, 0.9], strict=True)]
    assert stats._bands(curve, 0.5, hi) == [
        {"threshold_low": 2, "threshold_high": 6,
         "retained_at_threshold_low": 0.5, "retained_at_threshold_high": 0.9},
        {"threshold_low": 10, "threshold_high": 16,
         "retained_at_threshold_low": 0.6, "retained_at_threshold_high": 0.9},
    ]
    # a band of the whole curve
    assert stats._bands(curve[:4], 0.3, 0.9) == [
        {"threshold_low": 0, "threshold_high": 6,
         "retained_at_threshold_low": 0.4, "retained_at_threshold_high": 0.9}]


def test_a_profiled_band_reaching_the_top_of_the_grid_includes_it() -> None:
    """Through ``signal_block``: every score is at most 0.5, so a max signal keeps
    everything from 0.5 up; with max_keep_rate 1.0 the band ends at the grid's last point
    (1.0) with retained 1.0."""
    spec = REGISTRY["bullet_ratio"]
    rng = np.random.default_rng(9)
    s = rng.uniform(0.0, 0.5, 400)
    block = stats.signal_block(spec, s, np.ones(400), np.zeros(400, dtype=np.int64), ["a"],
                               scoring_failures=0,
                               band_search={"min_keep_rate": 0.5, "max_keep_rate": 1.0})
    grid = [float(t) for t in spec.grid.values()]
    bands = block["retention_stable_bands"]
    assert len(bands) == 1
    inside = [p["threshold"] for p in block["retention"] if 0.5 <= p["retained"] <= 1.0]
    assert bands[0]["threshold_low"] == inside[0]
    assert bands[0]["threshold_high"] == grid[-1] == 1.0
    assert bands[0]["retained_at_threshold_high"] == 1.0


def test_retention_suppressed_below_half_scored():
    s, w, src = _data(n=100, nan_share=0.0)
    s[:51] = np.nan
    block = _block(MAX, s, w, src, scoring_failures=51)
    assert block["retention"] is None
    assert block["notes"][0].startswith("retention_suppressed")
    assert "retention_stable_bands" not in block
    assert block["curator_default"]["retained"] is None
    assert stats.gate_table(block) == []
    assert block["views"]["micro"]["p50"] is not None  # quantiles are still reported
    s[50] = 0.5  # exactly half scored: not suppressed
    block = _block(MAX, s, w, src, scoring_failures=50)
    assert block["retention"] is not None and "notes" not in block


def test_curator_default_retained():
    s, w, src = _data(seed=5)
    block = _block(MAX, s, w, src)
    assert block["curator_default"]["thresholds"] == {"max": 0.6}
    assert block["curator_default"]["retained"] == pytest.approx(
        _keep_share(MAX.keep(s, hi=0.6), s, w), abs=6e-7)
    assert "curator_default" not in _block(INT, s, w, src)


def test_gate_table_is_the_tightest_point_keeping_each_target():
    s, w, src = _data(seed=6, nan_share=0.002)
    for spec in (MAX, MIN):
        block = _block(spec, s, w, src)
        rows = stats.gate_table(block)
        assert [r["target"] for r in rows] == [0.99, 0.95, 0.90, 0.80]
        grid = list(spec.grid.values())
        for row in rows:
            t = row["threshold"]
            share = _keep_share(spec.keep_one(t, s), s, w)
            assert share >= row["target"] and row["retained"] == pytest.approx(share, abs=6e-7)
            i = grid.index(t)
            if 0 < i < len(grid) - 1:
                tighter = grid[i - 1] if spec.direction == "max" else grid[i + 1]
                assert _keep_share(spec.keep_one(tighter, s), s, w) < row["target"]
    # 5% failed scores: no threshold keeps 99%
    s, w, src = _data(seed=6, nan_share=0.05)
    row99 = stats.gate_table(_block(MAX, s, w, src))[0]
    assert row99 == {"target": 0.99, "bound": "max", "threshold": None, "retained": None}
    ivl_rows = stats.gate_table(_block(IVL, s * 60, w, src))
    assert [r["bound"] for r in ivl_rows] == ["min"] * 4 + ["max"] * 4


# -- direction check ---------------------------------------------------------------------


def test_verify_direction_detects_a_flipped_direction():
    s, w, src = _data(seed=7)
    right = _block(MAX, s, w, src)["retention"]
    assert stats.verify_direction(MAX, s, w, right)
    wrong_spec = SignalSpec("toy_max", "min", "ratio", MAX.grid)
    wrong = _block(wrong_spec, s, w, src)["retention"]
    assert not stats.verify_direction(MAX, s, w, wrong)
    assert not stats.verify_direction(wrong_spec, s, w, right)
    # the filter's own keep rule can be checked in place of keep_one
    assert not stats.verify_direction(MAX, s, w, right, keep=lambda t, x: x >= t)
    assert stats.verify_direction(MAX, s, w, right, keep=lambda t, x: x <= t)
    surface = _block(IVL, s * 60, w, src)["retention"]
    assert stats.verify_direction(IVL, s * 60, w, surface)
    assert stats.verify_direction(MAX, s, w, None)


# -- several signals ---------------------------------------------------------------------


def _multi(seed: int = 8, n: int = 4000):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 3.0, n)
    base = rng.random(n)
    specs = {k: REGISTRY[k] for k in ("bullet_ratio", "urls_ratio", "words_with_alphabets",
                                      "script_ratio", "word_count")}
    scores = {
        "bullet_ratio": np.clip(base * 0.5 + rng.random(n) * 0.6, 0, 1),
        "urls_ratio": np.clip(base * 0.3 + rng.random(n) * 0.1, 0, 1),
        "words_with_alphabets": np.clip(1 - base * 0.4 + rng.normal(0, 0.05, n), 0, 1),
        "script_ratio": np.clip(1 - rng.beta(1, 30, n), 0, 1),
        "word_count": rng.integers(0, 400, n).astype(float),
    }
    for arr in scores.values():
        arr[rng.random(n) < 0.003] = np.nan
    return specs, scores, w


def test_cooccurrence_matches_brute_force():
    specs, scores, w = _multi()
    pairs = stats.cooccurrence(specs, scores, w)
    with_default = sorted(n for n in specs if specs[n].curator_default is not None)
    assert [(p["signal_a"], p["signal_b"]) for p in pairs] == [
        (a, b) for i, a in enumerate(with_default) for b in with_default[i + 1:]]

    def rejected(name):
        lo, hi = specs[name].curator_default
        return ~specs[name].keep(scores[name], lo, hi)

    for p in pairs:
        ra, rb = rejected(p["signal_a"]), rejected(p["signal_b"])
        assert p["rejected_by_a"] == pytest.approx(w[ra].sum(), abs=0.01)
        assert p["rejected_by_b"] == pytest.approx(w[rb].sum(), abs=0.01)
        assert p["rejected_by_both"] == pytest.approx(w[ra & rb].sum(), abs=0.01)
        assert p["share_of_a_also_rejected_by_b"] == pytest.approx(
            w[ra & rb].sum() / w[ra].sum(), abs=1e-6)
    assert pairs[0]["thresholds_a"] == {"max": 0.9}
    one = {"bullet_ratio": specs["bullet_ratio"], "script_ratio": specs["script_ratio"]}
    assert stats.cooccurrence(one, scores, w) is None


def test_policy_simulation_matches_brute_force():
    specs, scores, w = _multi(seed=9)
    scores["script_ratio"][:] = np.nan  # no grid point keeps 99%: skipped
    sim = stats.policy_simulation(specs, scores, w)
    total = w.sum()
    gated = ["bullet_ratio", "urls_ratio", "words_with_alphabets"]  # word_count: interval
    assert sorted(sim["order"]) == gated and sim["gates"] == 3
    assert sim["skipped"] == [{"signal": "script_ratio", "reason": "no grid point keeps >= 99%"}]
    fails = {}
    for g in sim["per_gate"]:
        name = g["signal"]
        spec = specs[name]
        block = stats.signal_block(spec, scores[name], w, np.zeros(len(w), int), ["all"],
                                   scoring_failures=0)
        row99 = stats.gate_table(block)[0]
        assert g["thresholds"] == {spec.direction: row99["threshold"]}
        fails[name] = ~spec.keep_one(row99["threshold"], scores[name])
    any_fail = np.any(list(fails.values()), axis=0)
    assert sim["documents"] == pytest.approx(total, abs=0.01)
    assert sim["sampled_documents"] == len(w)
    assert sim["kept"] == pytest.approx(w[~any_fail].sum(), abs=0.01)
    assert sim["dropped"] == pytest.approx(w[any_fail].sum(), abs=0.01)
    assert sim["retention"] == pytest.approx(w[~any_fail].sum() / total, abs=1e-6)
    assert sim["sum_of_marginals"] == pytest.approx(
        sum(w[f].sum() for f in fails.values()) / total, abs=1e-6)
    fails_alone = [g["fails_alone"] for g in sim["per_gate"]]
    assert fails_alone == sorted(fails_alone, reverse=True)
    alive = np.ones(len(w), bool)
    for g in sim["per_gate"]:
        f = fails[g["signal"]]
        others = np.any([v for k, v in fails.items() if k != g["signal"]], axis=0)
        assert g["fails_alone"] == pytest.approx(w[f].sum(), abs=0.01)
        assert g["unique"] == pytest.approx(w[f & ~others].sum(), abs=0.01)
        assert g["shared"] == pytest.approx(w[f & others].sum(), abs=0.01)
        assert g["incremental"] == pytest.approx(w[f & alive].sum(), abs=0.01)
        assert g["retention_without"] == pytest.approx(w[~others].sum() / total, abs=1e-6)
        alive &= ~f
    assert sum(g["incremental"] for g in sim["per_gate"]) == pytest.approx(sim["dropped"],
                                                                          abs=0.05)
    only_interval = {"word_count": specs["word_count"]}
    assert stats.policy_simulation(only_interval, scores, w) is None


# -- JSON-ready and deterministic ----------------------------------------------------------


def _builtin_only(x):
    if isinstance(x, dict):
        return all(isinstance(k, str) and _builtin_only(v) for k, v in x.items())
    if isinstance(x, list):
        return all(_builtin_only(v) for v in x)
    return x is None or type(x) in (int, float, str, bool)


def test_outputs_are_json_ready_and_deterministic():
    specs, scores, w = _multi(seed=10)
    src = np.arange(len(w)) % 4

    def everything():
        blocks = [stats.signal_block(specs[n], scores[n], w, src, ["a", "b", "c", "d"],
                                     scoring_failures=0) for n in sorted(specs)]
        return {"signals": blocks, "gates": [stats.gate_table(b) for b in blocks],
                "cooccurrence": stats.cooccurrence(specs, scores, w),
                "policy_simulation": stats.policy_simulation(specs, scores, w)}

    first, second = everything(), everything()
    assert _builtin_only(first)
    text = json.dumps(first, allow_nan=False, sort_keys=False)
    assert text == json.dumps(second, allow_nan=False, sort_keys=False)
    block = first["signals"][0]
    assert all(p["retained"] == round(p["retained"], 6) for p in block["retention"])
    assert all(v == float(f"{v:.8g}") for v in block["views"]["micro"].values())
