"""Approval inside the flow: from the config's ``approve`` block or a person's input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curator.policy import load_candidate, promote, write_approved


def thresholds_from(raw: dict[str, Any]) -> dict[str, float | tuple[float, float]]:
    """``{signal: value}`` or ``{signal: [lo, hi]}`` (YAML) -> :func:`promote`'s form."""
    out: dict[str, float | tuple[float, float]] = {}
    for name, value in raw.items():
        if isinstance(value, list | tuple):
            lo, hi = value
            out[name] = (lo, hi)
        else:
            out[name] = value
    return out


def approve_policy(
    candidate: str | Path,
    out: str | Path,
    thresholds: dict[str, Any],
    *,
    approver: str,
    evidence: str,
    method: str = "manual",
    date: str | None = None,
) -> tuple[str, list[str]]:
    """Promote the candidate with these choices; write the approved policy.

    Returns the policy digest and the warnings. An unchanged approval leaves the file's
    bytes (and so its digest) unchanged.
    """
    doc, warnings = promote(load_candidate(candidate), thresholds_from(thresholds),
                            approver=approver, evidence=evidence, method=method, date=date,
                            log_warnings=False)
    return write_approved(doc, out), warnings
