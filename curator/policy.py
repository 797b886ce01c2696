"""The two policy files: the candidate a profile proposes and the policy a person approves.

``candidate_policies.yaml`` is built from a profile report (:func:`build_candidate`)
and is never approved. ``approved_policy.yaml`` is made from it by :func:`promote`
(``curate approve``), which adds ``approval`` and ``thresholds``. The filter loads an
approved policy with :func:`load_policy` (validation, the override, ``policy.status``)
and checks it against the corpus, the pack and the installed signals with
:func:`check_provenance`. See ``docs/policy.md``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import math
import numbers
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml

from curator.errors import CuratorError
from curator.io.writers import write_atomic
from curator.signals.registry import IMPL_VERSION, REGISTRY, SignalSpec

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
CANDIDATE_FILENAME = "candidate_policies.yaml"
APPROVED_FILENAME = "approved_policy.yaml"
APPROVAL_METHODS: tuple[str, ...] = ("manual", "ablation")
REQUIRED_KEYS: tuple[str, ...] = (
    "schema_version", "approved", "corpus", "signals_impl_version", "profile_digest",
    "thresholds",
)
#: the manifest's ``policy.status`` values
PolicyStatus = Literal["approved", "override_unvalidated", "unapproved", "unresolved"]

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

CANDIDATE_NOTE = (
    "Candidate thresholds measured by curate profile. Nothing here is applied: a person "
    "chooses values and runs `curate approve`, which writes approved_policy.yaml. Bands are "
    "contiguous runs of swept thresholds whose retention lies within the profile's keep "
    "range; their two ends are alternative single bounds, not a range."
)
_HEADER_CANDIDATE = (
    "# Candidate policy (not approved, never applied). Choose thresholds and run\n"
    "# `curate approve --candidate THIS_FILE --set signal=VALUE ... --out approved_policy.yaml`.\n"
)
_HEADER_APPROVED = (
    "# Approved filter policy written by `curate approve`. Any edit changes its policy\n"
    "# digest; re-run `curate approve` instead of editing by hand.\n"
)


# -- the candidate ---------------------------------------------------------------------------


def build_candidate(report: Mapping[str, Any]) -> dict[str, Any]:
    """The candidate document (``approved: false``) for a profile report."""
    corpus = report.get("corpus") or {}
    pack = report.get("langpack") or {}
    candidates = [_candidate_entry(s) for s in report.get("signals") or []]
    return {
        "schema_version": SCHEMA_VERSION,
        "approved": False,
        "note": CANDIDATE_NOTE,
        "corpus": {
            "glob": corpus.get("glob"),
            "document_count": corpus.get("document_count"),
            "fingerprint": corpus.get("fingerprint"),
        },
        "langpack": {
            "id": pack.get("pack_id"),
            "language_tag": pack.get("language_tag"),
            "version": pack.get("version"),
            "content_hash": pack.get("content_hash"),
        },
        "signals_impl_version": report.get("signals_impl_version"),
        "profile_digest": report.get("profile_digest"),
        "candidates": candidates,
    }


def _candidate_entry(sig: Mapping[str, Any]) -> dict[str, Any]:
    name = sig["signal"]
    retention = sig.get("retention")
    if sig.get("direction") == "interval":
        surface = retention if isinstance(retention, Mapping) else {}
        note = (
            "interval signal: approve both bounds as LO:HI, each from its axis"
            if surface else "retention was not computed (too few documents scored): no surface"
        )
        return {
            "signal": name,
            "kind": "interval",
            "surface_axes": {
                "min": list(surface.get("min_axis") or []),
                "max": list(surface.get("max_axis") or []),
            },
            "note": note,
        }
    bands = [dict(b) for b in sig.get("retention_stable_bands") or []]
    if retention is None:
        note = "retention was not computed (too few documents scored): no bands"
    elif not bands:
        note = "no swept threshold keeps a share within the keep range: no stable band"
    else:
        keep = "s <= t" if sig.get("direction") == "max" else "s >= t"
        note = f"keeps {keep}; each band end is an alternative single threshold"
    return {
        "signal": name,
        "kind": "threshold",
        "direction": sig.get("direction"),
        "units": sig.get("units"),
        "bands": bands,
        "note": note,
    }


def _dump(doc: Mapping[str, Any], header: str) -> bytes:
    return (header + yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True)).encode()


def write_candidate(doc: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the candidate atomically; a document with ``approved`` truthy is refused."""
    if not isinstance(doc, Mapping):
        raise CuratorError("candidate_invalid", "a candidate policy must be a mapping")
    if doc.get("approved"):
        raise CuratorError(
            "candidate_marked_approved",
            f"refusing to write a candidate with approved={doc.get('approved')!r}: only "
            "`curate approve` makes an approved policy",
            path=str(path),
        )
    return write_atomic(path, _dump(doc, _HEADER_CANDIDATE))


def load_candidate(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a candidate file (``candidate_unreadable`` if it cannot be read as a mapping)."""
    try:
        doc = yaml.safe_load(Path(path).read_bytes())
    except (OSError, yaml.YAMLError) as exc:
        raise CuratorError("candidate_unreadable", f"cannot read candidate {path}: {exc}",
                           path=str(path)) from exc
    if not isinstance(doc, dict):
        raise CuratorError("candidate_unreadable", f"{path} does not hold a YAML mapping",
                           path=str(path))
    return doc


# -- validation ------------------------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_finite_number(value: object) -> bool:
    return _is_number(value) and math.isfinite(float(value))  # type: ignore[arg-type]


def _nonempty_str(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def validate_policy(doc: object) -> list[str]:
    """Every unmet rule of an approved policy, one message each; ``[]`` means valid."""
    if not isinstance(doc, Mapping):
        return [f"policy: must be a mapping, got {type(doc).__name__}"]
    problems = [f"{key}: required key missing" for key in REQUIRED_KEYS if key not in doc]
    if "schema_version" in doc and (
        isinstance(doc["schema_version"], bool) or doc["schema_version"] != SCHEMA_VERSION
    ):
        problems.append(f"schema_version: must be {SCHEMA_VERSION}, got {doc['schema_version']!r}")
    if "approved" in doc and doc["approved"] is not True:
        problems.append(f"approved: must be the boolean true, got {doc['approved']!r}")
    if "signals_impl_version" in doc and not _nonempty_str(doc["signals_impl_version"]):
        problems.append("signals_impl_version: must be a non-empty string")
    if "profile_digest" in doc and not _is_digest(doc["profile_digest"]):
        problems.append(
            f"profile_digest: must be sha256: and 64 hex characters, got {doc['profile_digest']!r}"
        )
    if "corpus" in doc:
        corpus = doc["corpus"]
        if not isinstance(corpus, Mapping):
            problems.append("corpus: must be a mapping")
        elif not _is_digest(corpus.get("fingerprint")):
            problems.append("corpus.fingerprint: must be sha256: and 64 hex characters, "
                            f"got {corpus.get('fingerprint')!r}")
    if "langpack" in doc and not isinstance(doc["langpack"], Mapping):
        problems.append("langpack: must be a mapping")
    problems += _approval_problems(doc.get("approval"))
    if "thresholds" in doc:
        problems += _threshold_problems(doc["thresholds"])
    return problems


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and bool(_DIGEST.match(value))


def _approval_problems(approval: object) -> list[str]:
    if approval is None:
        approval = {}
    if not isinstance(approval, Mapping):
        return ["approval: must be a mapping {approver, date, method, evidence}"]
    problems = [
        f"approval.{key}: must be a non-empty string"
        for key in ("approver", "evidence") if not _nonempty_str(approval.get(key))
    ]
    if approval.get("method") not in APPROVAL_METHODS:
        problems.append(f"approval.method: must be one of {', '.join(APPROVAL_METHODS)}, "
                        f"got {approval.get('method')!r}")
    date = approval.get("date")
    if date is not None and not _valid_date(date):
        problems.append(f"approval.date: must be YYYY-MM-DD when given, got {date!r}")
    return problems


def _valid_date(value: object) -> bool:
    if isinstance(value, _dt.date):  # an unquoted date in a hand-edited file
        return True
    if not isinstance(value, str) or not _DATE.match(value):
        return False
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _threshold_problems(thresholds: object) -> list[str]:
    if not isinstance(thresholds, list) or not thresholds:
        return ["thresholds: must be a non-empty list (there is no fallback to Curator "
                "defaults)"]
    problems: list[str] = []
    seen: set[str] = set()
    for i, entry in enumerate(thresholds):
        where = f"thresholds[{i}]"
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: must be a mapping {{signal, min|max}}")
            continue
        name = entry.get("signal")
        if not isinstance(name, str) or name not in REGISTRY:
            problems.append(f"{where}.signal: {name!r} is not a registered signal")
            spec = None
        else:
            where = f"{where} ({name})"
            if name in seen:
                problems.append(f"{where}: duplicate signal")
            seen.add(name)
            spec = REGISTRY[name]
        extra = sorted(str(k) for k in entry if k not in ("signal", "min", "max"))
        if extra:
            problems.append(f"{where}: unknown keys {extra} (a bound is min or max)")
        bounds = {k: entry[k] for k in ("min", "max") if k in entry}
        if not bounds:
            problems.append(f"{where}: no bound (there is no fallback to Curator defaults)")
        for key, value in bounds.items():
            if not _is_finite_number(value):
                problems.append(f"{where}.{key}: must be a finite number, got {value!r}")
        if (len(bounds) == 2 and all(_is_finite_number(v) for v in bounds.values())
                and bounds["min"] > bounds["max"]):
            problems.append(f"{where}: min {bounds['min']!r} > max {bounds['max']!r}")
        if spec is not None and bounds:
            need = _bound_keys(spec)
            if set(bounds) != need:
                article = "an" if spec.is_interval else "a"
                problems.append(
                    f"{where}: {article} {spec.direction} signal takes {_and(need)}, "
                    f"got {_and(bounds)} (anything else would invert the gate)"
                )
    return problems


def _and(keys: Iterable[str]) -> str:
    return " and ".join(k for k in ("min", "max") if k in keys)


def _bound_keys(spec: SignalSpec) -> set[str]:
    return {"min", "max"} if spec.is_interval else {spec.direction}


# -- loading, the override, provenance -------------------------------------------------------


@dataclass(frozen=True)
class LoadedPolicy:
    """A policy file as the filter applies it, with its status and provenance."""

    path: str
    doc: dict[str, Any]
    status: PolicyStatus
    problems: tuple[str, ...]
    thresholds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    policy_digest: str = ""
    profile_digest: str | None = None
    signals_impl_version: str | None = None
    corpus_fingerprint: str | None = None
    langpack_content_hash: str | None = None
    approval_method: str | None = None

    def resolved(self) -> dict[str, Any]:
        """The ``resolved_policy`` block the filter's ``config_hash`` covers."""
        out: dict[str, Any] = {
            "policy_digest": self.policy_digest,
            "profile_digest": self.profile_digest,
            "signals_impl_version": self.signals_impl_version,
            "corpus_fingerprint": self.corpus_fingerprint,
            "approval_method": self.approval_method,
            "thresholds": [
                {"signal": name, "min": lo, "max": hi}
                for name, (lo, hi) in sorted(self.thresholds.items())
            ],
        }
        if self.langpack_content_hash is not None:
            out["langpack_content_hash"] = self.langpack_content_hash
        return out


def load_policy(
    path: str | os.PathLike[str], *, allow_unvalidated: bool = False
) -> LoadedPolicy:
    """Read, validate and resolve a policy file (the filter's one entry point).

    Raises ``policy_unresolved`` when the file cannot be read or parsed into a mapping
    (``details["status"] == "unresolved"``), and, without ``allow_unvalidated``,
    ``policy_not_approved`` (``approved`` is not ``true``) or ``policy_invalid`` (any
    other unmet rule), both with ``details["status"] == "unapproved"`` and every unmet
    rule in ``details["problems"]``. With ``allow_unvalidated`` an invalid policy is
    returned with status ``override_unvalidated``; a valid one is always ``approved``.
    """
    where = str(path)
    try:
        raw = Path(path).read_bytes()
        doc = yaml.safe_load(raw)
    except (OSError, yaml.YAMLError, RecursionError) as exc:
        # RecursionError: nested past the parser's recursion limit (tests/fuzz)
        raise CuratorError("policy_unresolved",
                           f"cannot load policy {where}: {str(exc)[:1000]}",
                           path=where, status="unresolved") from exc
    if not isinstance(doc, dict):
        raise CuratorError("policy_unresolved", f"policy {where} does not hold a YAML mapping",
                           path=where, status="unresolved")
    problems = validate_policy(doc)
    status: PolicyStatus = "approved"
    if problems:
        if not allow_unvalidated:
            unmet = "; ".join(problems)
            if doc.get("approved") is not True:
                raise CuratorError(
                    "policy_not_approved",
                    f"policy {where} is not approved (approved: {doc.get('approved')!r}); "
                    f"unmet rules: {unmet}",
                    path=where, status="unapproved", problems=problems,
                )
            raise CuratorError("policy_invalid", f"policy {where} fails validation: {unmet}",
                               path=where, status="unapproved", problems=problems)
        status = "override_unvalidated"
        log.warning("applying policy %s under allow_unvalidated_policy; unmet rules: %s",
                    where, "; ".join(problems))
    thresholds, skipped = _extract_thresholds(doc.get("thresholds"))
    problems += skipped
    corpus = doc.get("corpus") if isinstance(doc.get("corpus"), Mapping) else {}
    pack = doc.get("langpack") if isinstance(doc.get("langpack"), Mapping) else {}
    approval = doc.get("approval") if isinstance(doc.get("approval"), Mapping) else {}
    return LoadedPolicy(
        path=where,
        doc=doc,
        status=status,
        problems=tuple(problems),
        thresholds=thresholds,
        policy_digest="sha256:" + hashlib.sha256(raw).hexdigest(),
        profile_digest=_str_or_none(doc.get("profile_digest")),
        signals_impl_version=_str_or_none(doc.get("signals_impl_version")),
        corpus_fingerprint=_str_or_none(corpus.get("fingerprint")),
        langpack_content_hash=_str_or_none(pack.get("content_hash")),
        approval_method=_str_or_none(approval.get("method")),
    )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _extract_thresholds(
    thresholds: object,
) -> tuple[dict[str, tuple[float | None, float | None]], list[str]]:
    """``{signal: (lo, hi)}`` from the entries that can be read; notes for the others.

    For a valid policy every entry is read. Under the override, an entry with no
    signal name or no usable bound is skipped (and said so); the first of duplicates
    is kept.
    """
    out: dict[str, tuple[float | None, float | None]] = {}
    skipped: list[str] = []
    for i, entry in enumerate(thresholds if isinstance(thresholds, list) else []):
        name = entry.get("signal") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or name in out:
            skipped.append(f"thresholds[{i}]: skipped under the override")
            continue
        lo, hi = entry.get("min"), entry.get("max")
        lo = float(lo) if _is_finite_number(lo) else None
        hi = float(hi) if _is_finite_number(hi) else None
        if lo is None and hi is None:
            skipped.append(f"thresholds[{i}] ({name}): skipped under the override (no bound)")
            continue
        out[name] = (lo, hi)
    return out, skipped


def check_provenance(
    policy: LoadedPolicy,
    *,
    corpus_fingerprint: str,
    langpack_content_hash: str | None,
    impl_version: str = IMPL_VERSION,
    configured_langpack_hash: str | None = None,
) -> None:
    """Refuse a policy measured on other signals, another corpus or another pack.

    ``corpus_fingerprint`` is that of the readable input files, ``langpack_content_hash``
    that of the loaded pack, ``configured_langpack_hash`` the config's
    ``heuristic_filters.langpack_content_hash`` (checked when given).
    """
    if policy.signals_impl_version != impl_version:
        raise CuratorError(
            "signals_impl_version_mismatch",
            f"policy {policy.path} was measured with signals {policy.signals_impl_version!r}; "
            f"installed signals are {impl_version!r}: re-profile and re-approve",
            policy=policy.signals_impl_version, installed=impl_version,
        )
    if policy.corpus_fingerprint != corpus_fingerprint:
        raise CuratorError(
            "approval_corpus_mismatch",
            f"policy {policy.path} was approved for corpus {policy.corpus_fingerprint!r}, "
            f"but the input's fingerprint is {corpus_fingerprint!r}",
            policy=policy.corpus_fingerprint, input=corpus_fingerprint,
        )
    pack_hash = policy.langpack_content_hash
    if pack_hash is None:
        raise CuratorError("policy_langpack_mismatch",
                           f"policy {policy.path} records no langpack.content_hash")
    if pack_hash != langpack_content_hash:
        raise CuratorError(
            "policy_langpack_mismatch",
            f"policy {policy.path} was measured with pack {pack_hash!r}; the loaded pack is "
            f"{langpack_content_hash!r}",
            policy=pack_hash, loaded=langpack_content_hash,
        )
    if configured_langpack_hash is not None and configured_langpack_hash != pack_hash:
        raise CuratorError(
            "policy_langpack_mismatch",
            f"policy {policy.path} was measured with pack {pack_hash!r}; the config pins "
            f"langpack_content_hash {configured_langpack_hash!r}",
            policy=pack_hash, configured=configured_langpack_hash,
        )


# -- promotion -------------------------------------------------------------------------------

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
    if not _nonempty_str(approver):
        raise CuratorError("approval_missing_approver", "an approval needs an approver")
    if not _nonempty_str(evidence):
        raise CuratorError("approval_missing_evidence",
                           "an approval needs evidence (what the decision rests on)")
    if method not in APPROVAL_METHODS:
        raise CuratorError("invalid_approval_method",
                           f"method must be one of {', '.join(APPROVAL_METHODS)}, got {method!r}")
    if date is None:
        date = _dt.datetime.now(_dt.UTC).date().isoformat()
    elif not (isinstance(date, str) and _valid_date(date)):
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
    if not _is_finite_number(value):
        raise CuratorError("invalid_threshold",
                           f"{spec.name}: {value!r} is not a finite number", signal=spec.name)
    number = float(value)  # type: ignore[arg-type]
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
        ends = (band.get("threshold_low"), band.get("threshold_high"))
        if all(_is_finite_number(e) for e in ends):
            lo, hi = sorted(float(e) for e in ends)  # type: ignore[arg-type]
            spans.append((lo, hi))
            if lo <= value <= hi:
                return None
    listed = ", ".join(f"[{lo:g}, {hi:g}]" for lo, hi in spans) or "none"
    return (f"[threshold_outside_bands] {name}={value:g} is outside every stable band of the "
            f"profile (bands: {listed})")


def _off_grid(name: str, bound: str, value: float, grid: Iterable[Any]) -> str | None:
    points = np.asarray([float(g) for g in grid if _is_finite_number(g)], dtype=np.float64)
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
    data = _dump(doc, _HEADER_APPROVED)
    write_atomic(path, data)
    return "sha256:" + hashlib.sha256(data).hexdigest()
