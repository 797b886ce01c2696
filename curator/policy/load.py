"""Loading an approved policy: validation, the override and ``policy.status``."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from curator.errors import CuratorError
from curator.policy.schema import finite, validate_policy

log = logging.getLogger("curator.policy")  # the package's logger, as before the split

#: the manifest's ``policy.status`` values
PolicyStatus = Literal["approved", "override_unvalidated", "unapproved", "unresolved"]


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
        lo, hi = finite(lo), finite(hi)
        if lo is None and hi is None:
            skipped.append(f"thresholds[{i}] ({name}): skipped under the override (no bound)")
            continue
        out[name] = (lo, hi)
    return out, skipped
