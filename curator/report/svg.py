"""Inline SVG charts, drawn from numbers (no plotting library, no script)."""

from __future__ import annotations

from html import escape
from typing import Any

W, H = 500, 180
LEFT, RIGHT, TOP, BOTTOM = 46, 14, 14, 40


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}".rstrip("0").rstrip(".")
    return f"{x:.3g}"


def histogram(hist: dict[str, Any], marks: list[tuple[str, str, float]], title: str,
              units: str = "") -> str:
    """Bars of ``hist`` (``edges``, ``counts``) with vertical lines at ``marks``
    (``(kind, label, value)``, kind ``min`` or ``max``: the side outside is shaded as
    removed). Values outside the drawn range are clamped to its edge and say so."""
    edges = [float(e) for e in hist.get("edges") or []]
    counts = [int(c) for c in hist.get("counts") or []]
    if len(edges) != len(counts) + 1 or not counts:
        return f'<p class="muted">no histogram for {escape(title)}</p>'
    lo, hi = edges[0], edges[-1]
    span = (hi - lo) or 1.0
    top = max(counts) or 1
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + (min(max(v, lo), hi) - lo) / span * pw

    out = [f'<svg class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
           f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for kind, _, value in marks:  # the removed side, under the bars
        if kind == "max":
            out.append(f'<rect x="{x(value):.1f}" y="{TOP}" width="{LEFT + pw - x(value):.1f}" '
                       f'height="{ph}" class="removed"/>')
        else:
            out.append(f'<rect x="{LEFT}" y="{TOP}" width="{x(value) - LEFT:.1f}" '
                       f'height="{ph}" class="removed"/>')
    for i, c in enumerate(counts):
        x0, x1 = x(edges[i]), x(edges[i + 1])
        h = c / top * ph
        out.append(f'<rect x="{x0:.1f}" y="{TOP + ph - h:.1f}" width="{max(x1 - x0 - 1, 0.5):.1f}"'
                   f' height="{h:.1f}" class="bar"><title>{_num(edges[i])} to {_num(edges[i + 1])}'
                   f': {c}</title></rect>')
    base = TOP + ph
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{LEFT + pw}" y2="{base}" class="axis"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" class="axis"/>')
    for v in (lo, lo + span / 2, hi):
        out.append(f'<text x="{x(v):.1f}" y="{base + 14}" class="tick" text-anchor="middle">'
                   f'{_num(v)}</text>')
    out.append(f'<text x="{LEFT - 4}" y="{TOP + 8}" class="tick" text-anchor="end">{top}</text>')
    out.append(f'<text x="{LEFT - 4}" y="{base}" class="tick" text-anchor="end">0</text>')
    out.append(f'<text x="{LEFT + pw / 2:.1f}" y="{H - 6}" class="tick" text-anchor="middle">'
               f'{escape(units or "score")} (sampled documents per bin)</text>')
    for n, (_, label, value) in enumerate(marks):
        px = x(value)
        clamped = "" if lo <= value <= hi else " (beyond the range drawn)"
        anchor = "end" if px > LEFT + pw * 0.6 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<line x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" y2="{base}" class="mark"/>')
        out.append(f'<text x="{px + dx:.1f}" y="{TOP + 12 + 13 * n}" class="marklabel" '
                   f'text-anchor="{anchor}">{escape(label)}{clamped}</text>')
    out.append("</svg>")
    return "".join(out)


def share_bar(share: float, width: int = 120) -> str:
    """A small horizontal bar: ``share`` of ``width`` pixels (0..1, clamped)."""
    share = min(max(share, 0.0), 1.0)
    return (f'<svg class="sbar" viewBox="0 0 {width} 10" width="{width}" height="10" '
            f'aria-hidden="true"><rect width="{width}" height="10" class="track"/>'
            f'<rect width="{share * width:.1f}" height="10" class="bar"/></svg>')
