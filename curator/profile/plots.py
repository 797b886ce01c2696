"""Plots for ``profile_summary.md``: per signal a histogram and a retention curve (PNG).

Drawn with matplotlib's Agg canvas on standalone ``Figure`` objects (no pyplot state,
nothing to close), at a fixed size and dpi, without the ``Software`` PNG metadata, so
the same report gives the same bytes. Files are written atomically.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from curator.io.writers import atomic_file
from curator.profile.stats import gate_table

PLOTS_DIR = "plots"
FIGSIZE = (6.4, 3.6)
DPI = 100
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TARGET_COLORS = {0.99: "#1b9e77", 0.95: "#d95f02", 0.90: "#7570b3", 0.80: "#e7298a"}
_DEFAULT_COLOR = "#333333"
_MARGINS = (0.62, 0.12, 0.5, 0.32)  # left, right, bottom, top (inches)


_Line = tuple[float, str, str, str, str]


def _lines(block: Mapping[str, Any]) -> list[_Line]:
    """(x, label, color, linestyle, bound) of the candidate thresholds of one signal."""
    out = []
    for row in gate_table(block):
        if row["threshold"] is None:
            continue
        label = f"{row['bound']} {row['threshold']:.4g} keeps ≥{row['target']:.0%}"
        out.append(
            (float(row["threshold"]), label, _TARGET_COLORS[row["target"]], "--", row["bound"])
        )
    default = block.get("curator_default")
    if default:
        for bound, value in default["thresholds"].items():
            out.append(
                (float(value), f"Curator default {bound} {value:.4g}", _DEFAULT_COLOR, ":", bound)
            )
    return out


def _vlines(ax: Axes, lines: Sequence[_Line], lo: float, hi: float) -> None:
    """Vertical labelled lines; those outside [lo, hi] only appear in the legend."""
    for x, label, color, style, _bound in lines:
        if lo <= x <= hi:
            ax.axvline(x, color=color, linestyle=style, linewidth=1.2, label=label)
        else:
            ax.plot([], [], color=color, linestyle=style, label=f"{label} (off the axis)")
    if lines:
        ax.legend(fontsize=6, loc="best", frameon=False)


def _layout(fig: Figure) -> None:
    """Fixed margins, in inches, room for the labels at these font sizes
    (``tight_layout`` measured them by drawing each figure once more: ~30% of the
    plotting time, docs/profile.md)."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=_MARGINS[0] / width, right=1 - _MARGINS[1] / width,
                        bottom=_MARGINS[2] / height, top=1 - _MARGINS[3] / height,
                        wspace=0.22)


def _save(fig: Figure, path: Path) -> None:
    with atomic_file(path) as f:  # to the output's storage too (curator.io.shared)
        fig.savefig(f, format="png", dpi=DPI, metadata={"Software": None})


def _histogram(block: Mapping[str, Any], path: Path) -> None:
    hist = block["histogram"]
    edges, counts = hist["edges"], hist["counts"]
    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    ax = fig.add_subplot()
    ax.stairs(counts, edges, fill=True, color="#9ecae1")
    ax.set_xlim(edges[0], edges[-1])
    _vlines(ax, _lines(block), edges[0], edges[-1])
    ax.set_title(f"{block['signal']}: scored documents (raw counts, {len(counts)} bins)",
                 fontsize=9)
    ax.set_xlabel(f"score ({block.get('units')})", fontsize=8)
    ax.set_ylabel("documents", fontsize=8)
    ax.tick_params(labelsize=7)
    _layout(fig)
    _save(fig, path)


def _curve_axes(ax: Axes, curve: Sequence[Mapping[str, Any]], title: str) -> None:
    xs = [p["threshold"] for p in curve]
    ys = [p["retained"] for p in curve]
    ax.plot(xs, ys, color="#3182bd", linewidth=1.5, marker=".", markersize=3)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("threshold", fontsize=8)
    ax.set_ylabel("retained (micro)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, linewidth=0.3)


def _retention(block: Mapping[str, Any], path: Path) -> None:
    retention = block["retention"]
    lines = _lines(block)
    if isinstance(retention, Mapping):  # interval: the two marginals
        fig = Figure(figsize=(FIGSIZE[0] * 1.6, FIGSIZE[1]), dpi=DPI)
        axes = fig.subplots(1, 2)
        for ax, key, bound in ((axes[0], "marginal_min", "min"),
                               (axes[1], "marginal_max", "max")):
            curve = retention[key]
            _curve_axes(ax, curve, f"{block['signal']}: {bound} bound alone")
            lo, hi = curve[0]["threshold"], curve[-1]["threshold"]
            _vlines(ax, [line for line in lines if line[4] == bound], lo, hi)
    else:
        fig = Figure(figsize=FIGSIZE, dpi=DPI)
        ax = fig.add_subplot()
        _curve_axes(ax, retention, f"{block['signal']}: retention ({block['direction']})")
        _vlines(ax, lines, retention[0]["threshold"], retention[-1]["threshold"])
    _layout(fig)
    _save(fig, path)


def write_plots(report: Mapping[str, Any], out_dir: Path) -> dict[str, dict[str, str]]:
    """Write ``<out_dir>/plots/<signal>_{histogram,retention}.png`` for every signal.

    Returns ``{signal: {"histogram": "plots/<signal>_histogram.png",
    "retention": "plots/<signal>_retention.png"}}`` (paths relative to ``out_dir``); a
    kind is missing when there is nothing to draw (nothing scored / retention
    suppressed). The histogram marks the 99/95/90/80% gate thresholds and the Curator
    default; the retention plot is the curve, or for interval signals its two marginals.
    """
    out: dict[str, dict[str, str]] = {}
    plot_dir = Path(out_dir) / PLOTS_DIR
    for block in report.get("signals") or []:
        name = block["signal"]
        if not _NAME.match(name):
            raise ValueError(f"signal name {name!r} is not an identifier")
        paths: dict[str, str] = {}
        for kind, draw, needed in (("histogram", _histogram, "histogram"),
                                   ("retention", _retention, "retention")):
            if not block.get(needed):
                continue
            plot_dir.mkdir(parents=True, exist_ok=True)
            rel = f"{PLOTS_DIR}/{name}_{kind}.png"
            draw(block, Path(out_dir) / rel)
            paths[kind] = rel
        if paths:
            out[name] = paths
    return out
