"""Approval inside the flow: from the config's ``approve`` block or a person's input."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from curator.errors import CuratorError
from curator.policy import Threshold, load_candidate, promote, write_approved
from curator.signals.registry import REGISTRY

#: What ``approve.thresholds`` (and the interactive form's ``thresholds``) accepts: the
#: mapping ``{signal: value | [lo, hi]}``, or the approved policy's own list
#: ``[{signal: X, max: 2}, {signal: Y, min: 0, max: 5}]``.
ThresholdsInput = Mapping[str, Any] | Sequence[Mapping[str, Any]]

_ENTRY_KEYS = ("signal", "min", "max")


def thresholds_from(raw: ThresholdsInput | None) -> dict[str, Threshold]:
    """``approve.thresholds`` in either form -> :func:`promote`'s ``{signal: value | (lo, hi)}``.

    Both forms give the same mapping for the same choices, and so the same approved
    policy bytes. Refusals: ``invalid_threshold`` (a malformed value or entry, an
    entry's unknown keys, no bound, a bound the signal's direction does not take) and
    ``duplicate_threshold`` (a signal listed twice); ``promote`` adds the rest
    (``signal_not_profiled``, ``unknown_signal``, non-numbers, LO > HI).
    """
    if raw is None:
        return {}  # promote() refuses it: policy_thresholds_empty
    if isinstance(raw, Mapping):
        return _as_floats(_from_mapping(raw))
    if isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        return _as_floats(_from_entries(raw))
    raise CuratorError("invalid_threshold",
                       "approve.thresholds: give a mapping {signal: value or [lo, hi]} or a "
                       f"list of {{signal, min, max}} entries, got {type(raw).__name__}")


def _as_floats(chosen: dict[str, Threshold]) -> dict[str, Threshold]:
    """An integer bound of a signal whose grid is not integral, as a float.

    The flow's config and its approval form read the mapping form's numbers as floats,
    so ``max: 1`` of a ratio arrives as ``1.0``; the list form's entries, and a direct
    call, keep ``1``. :func:`promote` writes what it is given (``1`` or ``1.0``), so
    without this the same choice would give policies with different bytes.
    """
    out: dict[str, Threshold] = {}
    for name, value in chosen.items():
        spec = REGISTRY.get(name)
        if spec is None:
            out[name] = value
        elif isinstance(value, tuple):  # promote() reads both bounds on spec.grid too
            out[name] = tuple(_float_unless_integral(v, spec.grid.integral) for v in value)
        else:
            out[name] = _float_unless_integral(value, spec.grid.integral)
    return out


def _float_unless_integral(value: Any, integral: bool) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and not integral:
        return float(value)
    return value


def _from_mapping(raw: Mapping[str, Any]) -> dict[str, Threshold]:
    """``{signal: value}`` or ``{signal: [lo, hi]}`` (YAML)."""
    out: dict[str, Threshold] = {}
    for name, value in raw.items():
        if isinstance(value, list | tuple):
            if len(value) != 2:
                raise CuratorError("invalid_threshold",
                                   f"approve.thresholds.{name}: an interval is [lo, hi], "
                                   f"got {list(value)!r}", signal=name)
            out[name] = (value[0], value[1])
        else:
            out[name] = value
    return out


def _from_entries(raw: Sequence[Any]) -> dict[str, Threshold]:
    """The approved policy's ``thresholds`` list: ``{signal, min}``, ``{signal, max}`` or
    ``{signal, min, max}``, each signal once, each bound the one its direction takes
    (the checks :func:`curator.policy.validate_policy` makes of a policy file)."""
    out: dict[str, Threshold] = {}
    for i, entry in enumerate(raw):
        where = f"approve.thresholds[{i}]"
        if not isinstance(entry, Mapping):
            raise CuratorError("invalid_threshold",
                               f"{where}: an entry is a mapping {{signal, min, max}}, "
                               f"got {entry!r}")
        name = entry.get("signal")
        if not isinstance(name, str) or not name:
            raise CuratorError("invalid_threshold",
                               f"{where}: an entry names its signal (signal: NAME), got "
                               f"{name!r}")
        where = f"{where} ({name})"
        if name in out:
            raise CuratorError("duplicate_threshold",
                               f"{where}: {name!r} is listed more than once", signal=name)
        extra = sorted(str(k) for k in entry if k not in _ENTRY_KEYS)
        if extra:
            raise CuratorError("invalid_threshold",
                               f"{where}: unknown keys {extra} (an entry has signal, and min, "
                               "max or both)", signal=name)
        bounds = [k for k in ("min", "max") if k in entry]
        if not bounds:
            raise CuratorError("invalid_threshold",
                               f"{where}: no bound: give min, max or both (there is no "
                               "fallback to Curator defaults)", signal=name)
        spec = REGISTRY.get(name)  # an unknown name is promote()'s to refuse, as for a mapping
        if spec is not None:
            takes = ["min", "max"] if spec.is_interval else [spec.direction]
            if bounds != takes:
                article = "an" if spec.is_interval else "a"
                raise CuratorError(
                    "invalid_threshold",
                    f"{where}: {article} {spec.direction} signal takes "
                    f"{' and '.join(takes)}, got {' and '.join(bounds)} (anything else would "
                    "invert the gate)", signal=name)
        out[name] = (entry["min"], entry["max"]) if len(bounds) == 2 else entry[bounds[0]]
    return out


def approve_policy(
    candidate: str | Path,
    out: str | Path,
    thresholds: ThresholdsInput,
    *,
    approver: str,
    evidence: str,
    method: str = "manual",
    date: str | None = None,
) -> tuple[str, list[str]]:
    """Promote the candidate with these choices; write the approved policy.

    ``thresholds`` takes either form of :func:`thresholds_from`.

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
