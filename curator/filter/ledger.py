"""``curation_ledger.json``: where every input record went, by gate, and its invariant.

``n_input = n_success + n_filtered + n_failed + n_quarantined``. ``n_filtered`` is the
sum of ``filtered_by_reason`` (one entry per gate, exact: this project runs its own
gates); ``n_failed`` the sum of ``failed_units[].records`` (records that could not be
processed: unparsable lines, records without text, or a whole failed run). The loader
re-derives every derived field and refuses a ledger whose stored fields disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from curator import models
from curator.errors import CuratorError
from curator.models import CurationLedger

SCHEMA_VERSION = 1
KEYS = ("schema_version", "stage", "source", "n_input", "n_success", "n_filtered", "n_failed",
        "n_quarantined", "n_accounted", "balanced", "filtered_by_reason", "failed_units",
        "quarantined_units", "notes")


def build_ledger(
    *,
    stage: str,
    source: str,
    n_input: int,
    n_success: int,
    filtered_by_reason: Mapping[str, int],
    failed_units: list[dict[str, Any]],
    quarantined_units: list[dict[str, Any]],
    mode: str,
    completed: bool,
    gate_order: str = "reference",
) -> dict[str, Any]:
    """A ledger with its derived fields; an unbalanced one records ``unattributed``.

    ``notes.gate_order`` appears when the gates were not attributed in the reference's
    stage order (``cheapest_first``: word bounds, policy, then language)."""
    by_reason = {k: int(v) for k, v in sorted(filtered_by_reason.items()) if v}
    ledger: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "stage": stage,
        "source": source,
        "n_input": int(n_input),
        "n_success": int(n_success),
        "filtered_by_reason": by_reason,
        "failed_units": failed_units,
        "quarantined_units": quarantined_units,
        "notes": {"attribution": "per_gate", "completed": completed, "mode": mode},
    }
    if gate_order != "reference":
        ledger["notes"]["gate_order"] = gate_order
    derived = derive(ledger)
    gap = ledger["n_input"] - derived["n_accounted"]
    if gap > 0:  # records that are nowhere: say so, never hide it
        ledger["filtered_by_reason"]["unattributed"] = gap
        ledger["notes"]["unreconciled"] = (
            f"{gap} input records are neither in the output nor attributed to a gate or a "
            "failed unit"
        )
        derived = derive(ledger)
    ledger.update(derived)
    return {k: ledger[k] for k in KEYS}


def derive(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """The derived fields, recomputed from the primary ones."""
    n_filtered = sum(int(v) for v in ledger["filtered_by_reason"].values())
    n_failed = sum(int(u["records"]) for u in ledger["failed_units"])
    n_quarantined = sum(int(u["records"]) for u in ledger["quarantined_units"])
    accounted = int(ledger["n_success"]) + n_filtered + n_failed + n_quarantined
    return {"n_filtered": n_filtered, "n_failed": n_failed, "n_quarantined": n_quarantined,
            "n_accounted": accounted, "balanced": accounted == int(ledger["n_input"])}


def load_ledger(path: str | Path) -> dict[str, Any]:
    """Read a ledger and check it: every key present, derived fields re-derived."""
    try:
        data = models.read_json(path)
    except (OSError, CuratorError) as exc:  # CuratorError: not JSON
        why = exc.message if isinstance(exc, CuratorError) else exc
        raise CuratorError("ledger_unreadable", f"cannot read ledger {path}: {why}") from exc
    missing = [k for k in KEYS if not isinstance(data, dict) or k not in data]
    if missing:
        raise CuratorError("ledger_invalid", f"ledger {path} lacks {missing}")
    try:  # every count a JSON integer, every block its type (curator.models)
        ledger = CurationLedger.model_validate(data).dump()
    except ValidationError as exc:
        raise CuratorError("ledger_invalid", models.problem(f"ledger {path}", exc)) from None
    derived = derive(ledger)
    wrong = {k: (ledger[k], v) for k, v in derived.items() if ledger[k] != v}
    if wrong:
        raise CuratorError(
            "ledger_invalid",
            f"ledger {path}: stored fields disagree with their derivation: "
            + ", ".join(f"{k} stored {a!r}, derived {b!r}" for k, (a, b) in wrong.items()),
        )
    if not derived["balanced"]:  # consistent derived fields, but the invariant fails
        raise CuratorError(
            "ledger_invalid",
            f"ledger {path}: n_input {ledger['n_input']} != n_accounted "
            f"{derived['n_accounted']} (success + filtered + failed + quarantined)",
        )
    return ledger
