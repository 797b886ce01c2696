"""Promotion: the approved policy a person makes from a candidate (``curate approve``)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import numbers
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from curator.errors import CuratorError
from curator.io.writers import write_atomic
from curator.policy.assignments import Threshold
from curator.policy.schema import (
    APPROVAL_METHODS,
    finite,
    nonempty_str,
    policy_bytes,
    valid_date,
    validate_policy,
)
from curator.signals.registry import IMPL_VERSION, REGISTRY, SignalSpec

log = logging.getLogger("curator.policy")  # the package's logger, as before the split

APPROVED_FILENAME = "approved_policy.yaml"
_HEADER_APPROVED = (
    "# Approved filter policy written by `curate approve`. Any edit changes its policy\n"
    "# digest; re-run `curate approve` instead of editing by hand.\n"
)


def promote(
    candidate: Mapping[str, Any],
    thresholds: Mapping[str, Threshold],
    *,
    approver: str,
    evidence: str,
    method: str = "manual",
    date: str | None = None,
    log_warnings: bool = True,
) -> tuple[dict[str, Any], list[str]]:
    """The approved policy for ``candidate`` with the chosen ``thresholds``, and warnings.

    A one-sided signal takes one value (its direction says which bound), an interval
    signal a ``(lo, hi)`` pair. Refusals raise :class:`CuratorError`; warnings (a value
    outside every stable band, a value that is not a swept grid point, a candidate
    measured with other signals) are returned, and logged unless ``log_warnings`` is false
    (the CLI prints them itself).
    """
    if not isinstance(candidate, Mapping):
        raise CuratorError("candidate_invalid", "a candidate policy must be a mapping")
    if candidate.get("approved") or "approval" in candidate or "thresholds" in candidate:
        raise CuratorError("policy_already_approved",
                           "this document is already an approved policy; start from the "
                           "candidate the profile wrote")
    if not nonempty_str(approver):
        raise CuratorError("approval_missing_approver", "an approval needs an approver")
    if not nonempty_str(evidence):
        raise CuratorError("approval_missing_evidence",
                           "an approval needs evidence (what the decision rests on)")
    if method not in APPROVAL_METHODS:
        raise CuratorError("invalid_approval_method",
                           f"method must be one of {', '.join(APPROVAL_METHODS)}, got {method!r}")
    if date is None:
        date = _dt.datetime.now(_dt.UTC).date().isoformat()
    elif not (isinstance(date, str) and valid_date(date)):
        raise CuratorError("invalid_approval_date", f"date must be YYYY-MM-DD, got {date!r}")
    if not thresholds:
        raise CuratorError("policy_thresholds_empty",
                           "no thresholds given (there is no fallback to Curator defaults)")

    profiled = {
        c["signal"]: c for c in candidate.get("candidates") or []
        if isinstance(c, Mapping) and isinstance(c.get("signal"), str)
    }
    warnings: list[str] = []
    impl = candidate.get("signals_impl_version")
    if impl != IMPL_VERSION:
        warnings.append(
            f"[signals_impl_version_differs] the candidate was measured with signals {impl!r} "
            f"but {IMPL_VERSION!r} are installed: the filter will refuse this policy"
        )
    entries = []
    for name in sorted(thresholds):
        value = thresholds[name]
        if name not in profiled:
            raise CuratorError("signal_not_profiled",
                               f"{name!r} is not among the candidate's profiled signals "
                               f"({', '.join(sorted(profiled)) or 'none'})", signal=name)
        spec = REGISTRY.get(name)
        if spec is None:
            raise CuratorError("unknown_signal", f"{name!r} is not a registered signal",
                               signal=name)
        entry, entry_warnings = _approve_one(spec, value, profiled[name])
        entries.append(entry)
        warnings += entry_warnings

    doc: dict[str, Any] = {
        "schema_version": candidate.get("schema_version"),
        "approved": True,
        "corpus": _copy(candidate.get("corpus")),
        "langpack": _copy(candidate.get("langpack")),
        "signals_impl_version": impl,
        "profile_digest": candidate.get("profile_digest"),
        "approval": {"approver": approver.strip(), "date": date, "method": method,
                     "evidence": evidence.strip()},
        "thresholds": entries,
    }
    problems = validate_policy(doc)
    if problems:
        raise CuratorError("policy_invalid",
                           "the approved policy would fail validation (is the candidate "
                           f"complete?): {'; '.join(problems)}", problems=problems)
    for warning in warnings if log_warnings else ():
        log.warning("%s", warning)
    return doc, warnings


def _copy(value: object) -> object:
    return dict(value) if isinstance(value, Mapping) else value


def _number(spec: SignalSpec, value: object) -> float | int:
    """A finite bound as a plain number: an int for integral values of integral grids."""
    number = finite(value)
    if number is None:
        raise CuratorError("invalid_threshold",
                           f"{spec.name}: {value!r} is not a finite number", signal=spec.name)
    if isinstance(value, numbers.Integral) or (spec.grid.integral and number.is_integer()):
        return int(number)
    return number


def _approve_one(
    spec: SignalSpec, value: object, candidate: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    name = spec.name
    if spec.is_interval:
        if not isinstance(value, tuple | list) or len(value) != 2:
            raise CuratorError("invalid_threshold",
                               f"{name} is an interval signal: give both bounds as LO:HI, "
                               f"got {value!r}", signal=name)
        lo, hi = _number(spec, value[0]), _number(spec, value[1])
        if lo > hi:
            raise CuratorError("invalid_threshold", f"{name}: LO {lo} > HI {hi}", signal=name)
        axes = candidate.get("surface_axes") or {}
        warnings = [
            w for w in (
                _off_grid(name, "min", lo, axes.get("min") or spec.grid.values()),
                _off_grid(name, "max", hi, axes.get("max")
                          or (spec.max_grid or spec.grid).values()),
            ) if w
        ]
        return {"signal": name, "min": lo, "max": hi}, warnings
    if isinstance(value, tuple | list):
        raise CuratorError("invalid_threshold",
                           f"{name} is a one-sided ({spec.direction}) signal: give one value, "
                           f"got {value!r}", signal=name)
    number = _number(spec, value)
    warnings = [w for w in (_outside_bands(name, number, candidate.get("bands") or []),
                            _off_grid(name, spec.direction, number, spec.grid.values())) if w]
    return {"signal": name, spec.direction: number}, warnings


def _outside_bands(name: str, value: float, bands: list[Any]) -> str | None:
    spans = []
    for band in bands:
        if not isinstance(band, Mapping):
            continue
        ends = finite(band.get("threshold_low")), finite(band.get("threshold_high"))
        if ends[0] is not None and ends[1] is not None:
            lo, hi = min(ends), max(ends)  # type: ignore[type-var]  # both checked above
            spans.append((lo, hi))
            if lo <= value <= hi:
                return None
    listed = ", ".join(f"[{lo:g}, {hi:g}]" for lo, hi in spans) or "none"
    return (f"[threshold_outside_bands] {name}={value:g} is outside every stable band of the "
            f"profile (bands: {listed})")


def _off_grid(name: str, bound: str, value: float, grid: Iterable[Any]) -> str | None:
    points = np.asarray([g for g in map(finite, grid) if g is not None], dtype=np.float64)
    if points.size == 0:
        return None
    span = float(points.max() - points.min()) or 1.0
    nearest = float(points[np.argmin(np.abs(points - value))])
    if abs(nearest - value) <= 1e-6 * span:  # the point as printed (6 digits) is on it
        return None
    return (f"[threshold_not_on_grid] {name} {bound}={value:g} is not a swept grid point; "
            f"the profile measured no retention there (nearest point {nearest:.6g})")


def write_approved(doc: Mapping[str, Any], path: str | os.PathLike[str]) -> str:
    """Write an approved policy atomically; returns its policy digest (of the file bytes).

    A document that fails :func:`validate_policy` is refused (``policy_invalid``).
    """
    problems = validate_policy(doc)
    if problems:
        raise CuratorError("policy_invalid", f"refusing to write an invalid policy: "
                           f"{'; '.join(problems)}", problems=problems)
    data = policy_bytes(doc, _HEADER_APPROVED)
    write_atomic(path, data)
    return "sha256:" + hashlib.sha256(data).hexdigest()
