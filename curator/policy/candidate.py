"""The candidate policy a profile proposes: ``candidate_policies.yaml`` (never approved)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from curator.errors import CuratorError
from curator.io.writers import write_atomic
from curator.policy.schema import SCHEMA_VERSION, policy_bytes

CANDIDATE_FILENAME = "candidate_policies.yaml"
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


def candidate_bytes(doc: Mapping[str, Any], path: str | os.PathLike[str] = "") -> bytes:
    """The candidate as written (YAML with its header); a document with ``approved``
    truthy is refused (``path``: named in the refusal)."""
    if not isinstance(doc, Mapping):
        raise CuratorError("candidate_invalid", "a candidate policy must be a mapping")
    if doc.get("approved"):
        raise CuratorError(
            "candidate_marked_approved",
            f"refusing to write a candidate with approved={doc.get('approved')!r}: only "
            "`curate approve` makes an approved policy",
            path=str(path),
        )
    return policy_bytes(doc, _HEADER_CANDIDATE)


def write_candidate(doc: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write the candidate atomically (:func:`candidate_bytes`)."""
    return write_atomic(path, candidate_bytes(doc, path))


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

