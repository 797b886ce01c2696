"""The statistics of ``curate profile``: views, histograms, retention, bands, gates.

Pure numpy. Inputs are per sampled document, aligned arrays:

- ``scores``: float64; any non-finite value (NaN, ±inf) is a failed score and is
  treated as NaN everywhere: it is never kept by a gate and never enters a quantile.
- ``weights``: the micro weight of each document (its source's population / drawn),
  finite and ≥ 0. A weighted sum estimates a count of corpus documents.
- ``source_idx``: the document's index into ``sources``.

Conventions for everything returned (JSON-ready, deterministic, same inputs → same
bytes): Python ``float``/``int``/``None`` only, NaN/inf → ``None``;

- score-valued numbers (quantiles, histogram edges) are rounded to 8 significant digits;
- shares (``retained``, ``retention``, ``share_*``) are rounded to 6 decimal places;
- weighted document counts (micro view) are rounded to 2 decimal places;
- thresholds are the exact swept grid values (``int`` on integral grids), so a
  threshold copied from a report is a grid point bit for bit.

Decisions (tightest threshold for a target, bands) are made on the rounded shares, so
the summary, the approve block and the policy simulation always agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from curator.signals.registry import IMPL_VERSION, Grid, SignalSpec

QUANTILES: dict[str, float] = {
    "p1": 0.01, "p5": 0.05, "p10": 0.10, "p25": 0.25, "p50": 0.50,
    "p75": 0.75, "p90": 0.90, "p95": 0.95, "p99": 0.99,
}
HISTOGRAM_BINS = 32
GATE_TARGETS: tuple[float, ...] = (0.99, 0.95, 0.90, 0.80)
SIMULATION_TARGET = 0.99
MIN_SCORED_SHARE = 0.5
DEFAULT_BAND_SEARCH: dict[str, float] = {"min_keep_rate": 0.80, "max_keep_rate": 0.995}

COOCCURRENCE_UNAVAILABLE = (
    "cooccurrence not computed: fewer than two profiled signals have a Curator default"
)
SIMULATION_UNAVAILABLE = (
    "policy_simulation not computed: no one-sided signal has a grid point keeping >= 99%"
)
_EPS = 1e-9  # slack when comparing rounded shares with a target


# -- rounding / JSON helpers -----------------------------------------------------------


def _sig(x: float, digits: int = 8) -> float | None:
    """``x`` to ``digits`` significant digits; non-finite → None."""
    x = float(x)
    if not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}") if x != 0 else 0.0


def _share(x: float) -> float | None:
    x = float(x)
    return round(x, 6) + 0.0 if math.isfinite(x) else None  # + 0.0: no "-0.0"


def _count(x: float) -> float | None:
    x = float(x)
    return round(x, 2) + 0.0 if math.isfinite(x) else None


def _threshold(x: float, integral: bool) -> float | int:
    return round(float(x)) if integral else float(x)


def _ratio(num: float, den: float) -> float | None:
    return _share(num / den) if den > 0 else None


# -- input handling ---------------------------------------------------------------------


def _clean(scores: np.ndarray) -> np.ndarray:
    """float64 copy of ``scores`` with every non-finite value as NaN."""
    s = np.array(scores, dtype=np.float64, copy=True).reshape(-1)
    s[~np.isfinite(s)] = np.nan
    return s


def _weights(weights: np.ndarray, n: int) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != n:
        raise ValueError(f"weights has {w.shape[0]} entries for {n} scores")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and >= 0")
    return w


class _Sweep:
    """Sorted scored values with cumulative weights: O(log n) kept-weight queries."""

    def __init__(self, scores: np.ndarray, weights: np.ndarray) -> None:
        ok = ~np.isnan(scores)
        order = np.argsort(scores[ok], kind="stable")
        self.values = scores[ok][order]
        self.cum = np.concatenate(([0.0], np.cumsum(weights[ok][order])))
        self.total = float(weights.sum())  # denominator: failed documents count as dropped

    def at_most(self, t: np.ndarray) -> np.ndarray:
        """Weight with score <= t."""
        return self.cum[np.searchsorted(self.values, t, side="right")]

    def below(self, t: np.ndarray) -> np.ndarray:
        """Weight with score < t."""
        return self.cum[np.searchsorted(self.values, t, side="left")]

    def at_least(self, t: np.ndarray) -> np.ndarray:
        """Weight with score >= t."""
        return self.cum[-1] - self.below(t)

    def share(self, kept: np.ndarray) -> np.ndarray:
        if self.total <= 0:
            return np.full(np.shape(kept), np.nan)
        return np.asarray(kept, dtype=np.float64) / self.total


# -- quantiles ----------------------------------------------------------------------------


def _quantiles_sorted(v: np.ndarray, w: np.ndarray, qs: np.ndarray) -> np.ndarray:
    cw = np.cumsum(w)
    mid = (cw - 0.5 * w) / cw[-1]
    return np.interp(qs, mid, v)


def weighted_quantiles(
    values: np.ndarray, weights: np.ndarray, qs: Sequence[float]
) -> list[float | None]:
    """Weighted quantiles by midpoint interpolation (unrounded Python floats).

    Each scored value ``v_i`` (sorted) sits at plotting position
    ``(C_i - w_i / 2) / W`` where ``C_i`` is the cumulative weight up to and including
    ``i``; a quantile interpolates linearly between positions and is clamped to the
    extreme values outside them. With equal weights this is numpy's ``hazen`` method.
    Non-finite values and zero weights are ignored; all ``None`` when nothing is left.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    w = _weights(weights, v.shape[0])
    keep = np.isfinite(v) & (w > 0)
    if not keep.any():
        return [None for _ in qs]
    v, w = v[keep], w[keep]
    order = np.argsort(v, kind="stable")
    out = _quantiles_sorted(v[order], w[order], np.asarray(qs, dtype=np.float64))
    return [float(x) for x in out]


def _qdict(vals: Sequence[float | None]) -> dict[str, float | None]:
    return {k: (None if v is None else _sig(v)) for k, v in zip(QUANTILES, vals, strict=True)}


def _views(
    scores: np.ndarray, weights: np.ndarray, source_idx: np.ndarray, sources: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(views{macro, micro}, per_source_quantiles) in one sort."""
    qs = np.array(list(QUANTILES.values()))
    micro = weighted_quantiles(scores, weights, qs)
    ok = ~np.isnan(scores) & (weights > 0)
    s, w, src = scores[ok], weights[ok], source_idx[ok]
    order = np.lexsort((s, src))
    s, w, src = s[order], w[order], src[order]
    bounds = np.searchsorted(src, np.arange(len(sources) + 1), side="left")
    per_source: dict[str, dict[str, float | None]] = {}
    rows: list[np.ndarray] = []
    for i, name in enumerate(sources):
        a, b = bounds[i], bounds[i + 1]
        if b > a:
            row = _quantiles_sorted(s[a:b], w[a:b], qs)
            rows.append(row)
            per_source[name] = _qdict([float(x) for x in row])
        else:
            per_source[name] = _qdict([None] * len(qs))
    macro = [float(x) for x in np.mean(rows, axis=0)] if rows else [None] * len(qs)
    return {"macro": _qdict(macro), "micro": _qdict(micro)}, per_source


def _histogram(scores: np.ndarray) -> dict[str, Any] | None:
    s = scores[~np.isnan(scores)]
    if s.size == 0:
        return None
    counts, edges = np.histogram(s, bins=HISTOGRAM_BINS)
    return {
        "bins": HISTOGRAM_BINS,
        "view": "raw",
        "edges": [_sig(e) for e in edges],
        "counts": [int(c) for c in counts],
    }


# -- retention ----------------------------------------------------------------------------


def _curve(spec: SignalSpec, sweep: _Sweep) -> list[dict[str, Any]]:
    grid = spec.grid.values()
    kept = sweep.at_most(grid) if spec.direction == "max" else sweep.at_least(grid)
    return [
        {"threshold": _threshold(t, spec.grid.integral), "retained": _share(r)}
        for t, r in zip(grid, sweep.share(kept), strict=True)
    ]


def _one_axis(grid: Grid, kept: np.ndarray, sweep: _Sweep) -> list[dict[str, Any]]:
    return [
        {"threshold": _threshold(t, grid.integral), "retained": _share(r)}
        for t, r in zip(grid.values(), sweep.share(kept), strict=True)
    ]


def _surface(spec: SignalSpec, sweep: _Sweep) -> dict[str, Any]:
    assert spec.max_grid is not None
    lo, hi = spec.grid.values(), spec.max_grid.values()
    kept = sweep.at_most(hi)[None, :] - sweep.below(lo)[:, None]
    kept = np.where(lo[:, None] <= hi[None, :], np.maximum(kept, 0.0), 0.0)
    return {
        "kind": "surface",
        "min_axis": [_threshold(t, spec.grid.integral) for t in lo],
        "max_axis": [_threshold(t, spec.max_grid.integral) for t in hi],
        "retained": [[_share(r) for r in row] for row in sweep.share(kept)],
        "marginal_min": _one_axis(spec.grid, sweep.at_least(lo), sweep),
        "marginal_max": _one_axis(spec.max_grid, sweep.at_most(hi), sweep),
        "marginal_note": (
            "retained[i][j] is the micro share kept by min_axis[i] <= score <= max_axis[j]; "
            "marginal_min sweeps the lower bound alone (no upper bound), marginal_max the "
            "upper bound alone; failed scores are never kept"
        ),
    }


def _bands(curve: list[dict[str, Any]], lo: float, hi: float) -> list[dict[str, Any]]:
    """Contiguous runs of grid points with ``lo <= retained <= hi``."""
    bands: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for point in [*curve, None]:
        r = None if point is None else point["retained"]
        if r is not None and lo - _EPS <= r <= hi + _EPS:
            run.append(point)
            continue
        if run:
            bands.append({
                "threshold_low": run[0]["threshold"],
                "threshold_high": run[-1]["threshold"],
                "retained_at_threshold_low": run[0]["retained"],
                "retained_at_threshold_high": run[-1]["retained"],
            })
            run = []
    return bands


def _tightest(
    curve: Sequence[Mapping[str, Any]] | None, direction: str, target: float
) -> dict[str, Any] | None:
    """The tightest curve point keeping at least ``target`` (None if none does).

    Tightest = the least retained among qualifying points; ties go to the threshold
    that is stricter in ``direction`` (smallest for ``max``, largest for ``min``).
    """
    best: Mapping[str, Any] | None = None
    for point in curve or ():
        r = point["retained"]
        if r is None or r < target - _EPS:
            continue
        if best is None or r < best["retained"]:
            best = point
        elif r == best["retained"]:
            stricter = (point["threshold"] < best["threshold"]) if direction == "max" \
                else (point["threshold"] > best["threshold"])
            if stricter:
                best = point
    return None if best is None else {"threshold": best["threshold"], "retained": best["retained"]}


def gate_table(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Tightest swept threshold keeping at least 99/95/90/80% (micro) for one signal block.

    Rows ``{target, bound, threshold, retained}``: ``bound`` is ``"max"`` or ``"min"``
    (the side the threshold gates); ``threshold``/``retained`` are None when no swept
    point keeps ``target``. Interval signals give rows from ``marginal_min`` (bound
    ``min``) then ``marginal_max`` (bound ``max``): each bound alone, the other open.
    ``[]`` when retention is suppressed.
    """
    retention = block.get("retention")
    if retention is None:
        return []
    if isinstance(retention, Mapping):  # interval surface
        axes = [("min", retention["marginal_min"]), ("max", retention["marginal_max"])]
    else:
        axes = [(block["direction"], retention)]
    rows = []
    for bound, curve in axes:
        for target in GATE_TARGETS:
            best = _tightest(curve, bound, target) or {"threshold": None, "retained": None}
            rows.append({"target": target, "bound": bound, **best})
    return rows


# -- the per-signal block ---------------------------------------------------------------


def _default_bounds(spec: SignalSpec) -> dict[str, float | int] | None:
    if spec.curator_default is None:
        return None
    lo, hi = spec.curator_default
    out: dict[str, float | int] = {}
    if lo is not None:
        out["min"] = lo
    if hi is not None:
        out["max"] = hi
    return out


def signal_block(
    spec: SignalSpec,
    scores: np.ndarray,
    weights: np.ndarray,
    source_idx: np.ndarray,
    sources: Sequence[str],
    *,
    scoring_failures: int,
    band_search: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The whole ``signals[]`` entry of ``profile_report.json`` for one signal.

    Shape (keys in this order; ``?`` = only when it applies)::

        {signal, views{macro{p1..p99}, micro{p1..p99}},
         per_source_quantiles{source: {p1..p99}},
         histogram{bins:32, view:"raw", edges[33], counts[32]} | None,
         n_scored, direction, units, impl_version,
         health{documents_attempted, documents_scored, scoring_failures, non_finite_scores},
         notes[str]?,
         retention,               # one-sided: [{threshold, retained}] over spec.grid;
                                  # interval: {kind:"surface", ...}; None if suppressed
         retention_view:"micro",
         retention_stable_bands[{threshold_low, threshold_high,
                                 retained_at_threshold_low, retained_at_threshold_high}]?,
         curator_default{thresholds{min?, max?}, retained, note}?}

    ``macro`` is the NaN-mean over sources of each source's quantiles (sources with no
    scored document are left out); ``micro`` weights each document. The histogram
    counts raw sampled documents (unweighted) over [min, max] of the scored values.
    ``retained`` is the micro share kept; failed documents count as not kept.
    ``scoring_failures`` (from the caller) are documents whose scorer raised (their
    scores are NaN); ``non_finite_scores`` are the other non-finite scores. Retention is
    suppressed (``None`` + a ``retention_suppressed`` note) when fewer than 50% of the
    documents scored. Bands (one-sided only) are contiguous grid runs with
    ``min_keep_rate <= retained <= max_keep_rate``; the two thresholds of a band are
    alternative single bounds, not a range.
    """
    s = _clean(scores)
    n = s.shape[0]
    w = _weights(weights, n)
    idx = np.asarray(source_idx, dtype=np.int64).reshape(-1)
    if idx.shape[0] != n:
        raise ValueError(f"source_idx has {idx.shape[0]} entries for {n} scores")
    if n and (idx.min() < 0 or idx.max() >= len(sources)):
        raise ValueError("source_idx out of range of sources")
    search = {**DEFAULT_BAND_SEARCH, **(band_search or {})}

    scored = int(np.count_nonzero(~np.isnan(s)))
    non_finite = n - scored
    if not 0 <= scoring_failures <= non_finite:
        raise ValueError(
            f"scoring_failures={scoring_failures} but only {non_finite} scores are non-finite"
        )
    views, per_source = _views(s, w, idx, sources)
    block: dict[str, Any] = {
        "signal": spec.name,
        "views": views,
        "per_source_quantiles": per_source,
        "histogram": _histogram(s),
        "n_scored": scored,
        "direction": spec.direction,
        "units": spec.units,
        "impl_version": IMPL_VERSION,
        "health": {
            "documents_attempted": n,
            "documents_scored": scored,
            "scoring_failures": int(scoring_failures),
            "non_finite_scores": non_finite - int(scoring_failures),
        },
    }
    notes: list[str] = []
    suppressed = n == 0 or scored < MIN_SCORED_SHARE * n
    if suppressed:
        notes.append(
            f"retention_suppressed: only {scored} of {n} documents scored "
            f"(< {MIN_SCORED_SHARE:.0%}); no retention curve or bands"
        )
    if notes:
        block["notes"] = notes

    sweep = _Sweep(s, w)
    if suppressed:
        block["retention"] = None
    elif spec.is_interval:
        block["retention"] = _surface(spec, sweep)
    else:
        block["retention"] = _curve(spec, sweep)
    block["retention_view"] = "micro"
    if not suppressed and not spec.is_interval:
        block["retention_stable_bands"] = _bands(
            block["retention"], search["min_keep_rate"], search["max_keep_rate"]
        )
    bounds = _default_bounds(spec)
    if bounds is not None:
        kept = float(w[spec.keep(s, bounds.get("min"), bounds.get("max"))].sum())
        block["curator_default"] = {
            "thresholds": bounds,
            "retained": None if suppressed else _ratio(kept, sweep.total),
            "note": "the reference filter's default, for comparison only: "
                    "never applied unless approved",
        }
    return block


# -- direction check -----------------------------------------------------------------------


def _probe_indices(retained: list[float | None], k: int = 5) -> list[int]:
    """Grid indices whose retained is nearest 10/30/50/70/90%, padded evenly to ``k``."""
    n = len(retained)
    r = np.array([np.nan if x is None else x for x in retained], dtype=np.float64)
    picks: list[int] = []
    if np.isfinite(r).any():
        dist = np.where(np.isfinite(r), 0.0, np.inf)
        for target in (0.1, 0.3, 0.5, 0.7, 0.9):
            i = int(np.argmin(np.abs(np.nan_to_num(r, nan=0.0) - target) + dist))
            if i not in picks:
                picks.append(i)
    for i in np.linspace(0, n - 1, k).round().astype(int):
        if len(picks) >= k:
            break
        if int(i) not in picks:
            picks.append(int(i))
    return sorted(picks)


def verify_direction(
    spec: SignalSpec,
    scores: np.ndarray,
    weights: np.ndarray,
    curve: list[dict[str, Any]] | dict[str, Any] | None,
    *,
    keep: Callable[[float, np.ndarray], np.ndarray] | None = None,
) -> bool:
    """True when the reported retention agrees with the filter's keep rule.

    Probes 5 grid points (those whose curve retention is nearest 10/30/50/70/90%, padded
    with evenly spaced points) and compares the curve's ``retained`` with the micro
    share kept by ``keep(threshold, scores)`` (default ``spec.keep_one``; pass the
    filter's ``keep_document`` to check it). Interval signals probe points on both
    marginals with ``spec.keep`` (``keep`` is ignored). Disagreement beyond rounding
    means the direction is wrong: the caller raises ``direction_mismatch``. A suppressed
    retention (``None``) has nothing to check and returns True.
    """
    if curve is None:
        return True
    s = _clean(scores)
    w = _weights(weights, s.shape[0])
    total = float(w.sum())
    if total <= 0:
        return True
    checks: list[tuple[list[dict[str, Any]], Callable[[float, np.ndarray], np.ndarray]]]
    if isinstance(curve, Mapping):
        checks = [
            (curve["marginal_min"], lambda t, x: spec.keep(x, lo=t)),
            (curve["marginal_max"], lambda t, x: spec.keep(x, hi=t)),
        ]
    else:
        checks = [(curve, keep or spec.keep_one)]
    for points, rule in checks:
        for i in _probe_indices([p["retained"] for p in points]):
            expected = points[i]["retained"]
            mask = np.asarray(rule(points[i]["threshold"], s), dtype=bool) & ~np.isnan(s)
            actual = float(w[mask].sum()) / total
            if expected is None or abs(actual - expected) > 1e-6 + 1e-9:
                return False
    return True


# -- several signals ------------------------------------------------------------------------


def _aligned(
    specs: Mapping[str, SignalSpec], scores: Mapping[str, np.ndarray], weights: np.ndarray
) -> tuple[list[str], dict[str, np.ndarray], np.ndarray]:
    names = sorted(n for n in specs if n in scores)
    clean = {n: _clean(scores[n]) for n in names}
    size = len(next(iter(clean.values()))) if clean else len(np.asarray(weights).reshape(-1))
    for n in names:
        if clean[n].shape[0] != size:
            raise ValueError(f"scores[{n!r}] has {clean[n].shape[0]} entries, expected {size}")
    return names, clean, _weights(weights, size)


def cooccurrence(
    specs: Mapping[str, SignalSpec], scores: Mapping[str, np.ndarray], weights: np.ndarray
) -> list[dict[str, Any]] | None:
    """Overlap of rejections at the Curator defaults, one entry per pair of signals.

    Only signals present in both ``specs`` and ``scores`` with a ``curator_default``
    take part; pairs are ``signal_a < signal_b`` by name. A document is rejected by a
    signal when ``spec.keep`` at its default drops it (failed scores are rejected).
    ``rejected_by_a``, ``rejected_by_b``, ``rejected_by_both`` are micro-weighted counts
    (estimated corpus documents); ``share_of_a_also_rejected_by_b`` = both / by_a and
    ``share_of_b_also_rejected_by_a`` = both / by_b (None when the denominator is 0).
    None when fewer than two signals have defaults (the caller adds
    ``COOCCURRENCE_UNAVAILABLE`` to the notes).
    """
    names, s, w = _aligned(specs, scores, weights)
    names = [n for n in names if specs[n].curator_default is not None]
    if len(names) < 2:
        return None
    bounds = {n: _default_bounds(specs[n]) or {} for n in names}
    rejected = {
        n: ~specs[n].keep(s[n], bounds[n].get("min"), bounds[n].get("max")) for n in names
    }
    out = []
    for i, a in enumerate(names):
        by_a = float(w[rejected[a]].sum())
        for b in names[i + 1:]:
            by_b = float(w[rejected[b]].sum())
            both = float(w[rejected[a] & rejected[b]].sum())
            out.append({
                "signal_a": a,
                "signal_b": b,
                "thresholds_a": bounds[a],
                "thresholds_b": bounds[b],
                "rejected_by_a": _count(by_a),
                "rejected_by_b": _count(by_b),
                "rejected_by_both": _count(both),
                "share_of_a_also_rejected_by_b": _ratio(both, by_a),
                "share_of_b_also_rejected_by_a": _ratio(both, by_b),
            })
    return out


def policy_simulation(
    specs: Mapping[str, SignalSpec], scores: Mapping[str, np.ndarray], weights: np.ndarray
) -> dict[str, Any] | None:
    """All one-sided signals gated together, each at its tightest point keeping >= 99%.

    The gate of each one-sided signal (present in ``specs`` and ``scores``) is the
    99% row of :func:`gate_table` (same curve, same rounding). A signal with no such
    grid point is listed in ``skipped``. All counts are micro-weighted (estimated corpus
    documents, 2 decimals); a document fails a gate when ``spec.keep_one`` drops it
    (failed scores fail). Fields:

    - ``documents``: Σ weight of all sampled documents; ``sampled_documents``: their count.
    - ``gates``: number of gates; ``order``: their names, by descending ``fails_alone``
      (ties by name), the order used for ``incremental``.
    - ``kept``: passes every gate; ``dropped`` = documents - kept;
      ``retention`` = kept / documents.
    - ``sum_of_marginals``: Σ over gates of fails_alone / documents, the drop share one
      would predict by adding gates up (≥ 1 - retention; equal iff no overlap).
    - ``per_gate[]`` in ``order``: ``thresholds`` ``{max|min: t}``; ``fails_alone``:
      fails this gate; ``unique``: fails this gate and passes every other;
      ``shared`` = fails_alone - unique (fails this and at least one other);
      ``incremental``: fails this gate among documents passing every earlier gate in
      ``order`` (these sum to ``dropped``); ``retention_without``: retention with this
      gate removed.

    None when no gate qualifies (the caller adds ``SIMULATION_UNAVAILABLE``).
    """
    names, s, w = _aligned(specs, scores, weights)
    total = float(w.sum())
    gates: dict[str, dict[str, Any]] = {}
    skipped: list[dict[str, str]] = []
    for name in names:
        spec = specs[name]
        if spec.is_interval:
            continue
        best = _tightest(_curve(spec, _Sweep(s[name], w)), spec.direction, SIMULATION_TARGET)
        if best is None:
            skipped.append({"signal": name, "reason": "no grid point keeps >= 99%"})
            continue
        gates[name] = {
            "thresholds": {spec.direction: best["threshold"]},
            "fails": ~spec.keep_one(best["threshold"], s[name]),
        }
    if not gates or total <= 0:
        return None
    fails = {n: float(w[g["fails"]].sum()) for n, g in gates.items()}
    order = sorted(gates, key=lambda n: (-fails[n], n))
    n_failed = np.sum([gates[n]["fails"] for n in order], axis=0)
    kept = float(w[n_failed == 0].sum())
    alive = np.ones(w.shape[0], dtype=bool)
    per_gate = []
    for name in order:
        f = gates[name]["fails"]
        unique = float(w[f & (n_failed == 1)].sum())
        incremental = float(w[f & alive].sum())
        alive &= ~f
        without = float(w[(n_failed - f) == 0].sum())
        per_gate.append({
            "signal": name,
            "thresholds": gates[name]["thresholds"],
            "fails_alone": _count(fails[name]),
            "shared": _count(fails[name] - unique),
            "unique": _count(unique),
            "incremental": _count(incremental),
            "retention_without": _ratio(without, total),
        })
    return {
        "documents": _count(total),
        "sampled_documents": int(w.shape[0]),
        "weighting": "micro",
        "target_retention": SIMULATION_TARGET,
        "gates": len(order),
        "dropped": _count(total - kept),
        "kept": _count(kept),
        "retention": _ratio(kept, total),
        "sum_of_marginals": _share(sum(fails.values()) / total),
        "order": order,
        "order_note": (
            "gates applied in this order (most rejections alone first) for 'incremental'; "
            "kept, dropped and retention do not depend on the order"
        ),
        "per_gate": per_gate,
        "skipped": skipped,
    }


#: quantiles of the language-ID confidence in ``language_composition.confidence``
CONFIDENCE_QUANTILES = (1, 5, 10, 25, 50, 75)


def language_composition(
    labels: Sequence[str], confidence: np.ndarray, model: str, max_chars: int | None
) -> dict[str, Any] | None:
    """The sample's languages by the language-ID model's top label (unweighted counts).

    ``{scored, model, languages[{language, documents, share, confidence_p50,
    confidence_p10}], confidence{p1..p75}, note}``, languages by documents, most first.
    """
    n = len(labels)
    if n == 0:
        return None
    conf = np.asarray(confidence, dtype=np.float64)
    names, inverse = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
    languages = []
    for i, name in enumerate(names):
        mine = np.sort(conf[inverse == i])
        languages.append({
            "language": str(name), "documents": int(mine.size), "share": _share(mine.size / n),
            "confidence_p50": _sig(float(np.quantile(mine, 0.5))),
            "confidence_p10": _sig(float(np.quantile(mine, 0.1))),
        })
    languages.sort(key=lambda x: (-x["documents"], x["language"]))
    return {
        "scored": n, "model": model,
        "languages": languages,
        "confidence": {f"p{q}": _sig(float(np.quantile(conf, q / 100)))
                       for q in CONFIDENCE_QUANTILES},
        "note": ("top label of each sampled document, unweighted (sample counts, not "
                 f"estimated corpus counts); the model reads the first {max_chars} "
                 "characters" if max_chars else "top label of each sampled document, "
                 "unweighted (sample counts, not estimated corpus counts)"),
    }
