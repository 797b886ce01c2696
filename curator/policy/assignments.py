"""``curate approve --set``: ``signal=VALUE`` and ``signal=LO:HI`` assignments."""

from __future__ import annotations

from collections.abc import Iterable

from curator.errors import CuratorError

#: a one-sided signal's value, or an interval signal's ``(lo, hi)``
Threshold = float | tuple[float, float]


def parse_threshold_assignments(items: Iterable[str]) -> dict[str, Threshold]:
    """``["signal=VALUE", "signal=LO:HI", ...]`` → ``{signal: value | (lo, hi)}``."""
    out: dict[str, Threshold] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CuratorError("invalid_threshold",
                               f"--set {item!r}: expected signal=VALUE or signal=LO:HI")
        if name in out:
            raise CuratorError("duplicate_threshold", f"--set names {name!r} more than once",
                               signal=name)
        try:
            if ":" in text:
                lo, _, hi = text.partition(":")
                out[name] = (float(lo), float(hi))
            else:
                out[name] = float(text)
        except ValueError as exc:
            raise CuratorError("invalid_threshold", f"--set {item!r}: not a number ({exc})",
                               signal=name) from exc
    return out
