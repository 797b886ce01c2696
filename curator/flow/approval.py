"""Approval inside the flow: from the config's ``approve`` block or a person's input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from curator.errors import CuratorError
from curator.policy import load_candidate, promote, write_approved


def thresholds_from(raw: dict[str, Any]) -> dict[str, float | tuple[float, float]]:
    """``{signal: value}`` or ``{signal: [lo, hi]}`` (YAML) -> :func:`promote`'s form."""
    out: dict[str, float | tuple[float, float]] = {}
    for name, value in raw.items():
        if isinstance(value, list | tuple):
            if len(value) != 2:
                raise CuratorError("invalid_threshold",
                                   f"approve.thresholds.{name}: an interval is [lo, hi], "
                                   f"got {list(value)!r}")
            out[name] = (value[0], value[1])
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
    chosen = thresholds_from(thresholds)
    doc, warnings = promote(load_candidate(candidate), chosen, approver=approver,
                            evidence=evidence, method=method, date=date, log_warnings=False)
    if date is None:  # the same approval on a later day keeps its date (and its bytes)
        previous = _previous(out)
        day = (previous.get("approval") or {}).get("date") if previous else None
        if isinstance(day, str) and day != doc["approval"]["date"]:
            again, _ = promote(load_candidate(candidate), chosen, approver=approver,
                               evidence=evidence, method=method, date=day,
                               log_warnings=False)
            if _plain(again) == _plain(previous):
                doc = again
    return write_approved(doc, out), warnings


def _previous(path: str | Path) -> dict[str, Any] | None:
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    return doc if isinstance(doc, dict) else None


def _plain(doc: Any) -> Any:
    return json.loads(json.dumps(doc, sort_keys=True, default=str))
