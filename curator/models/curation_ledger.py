"""``curation_ledger.json``: the filter's per-stage accounting (docs/filter.md).

Every key the audit's attribution reads is required and typed: a ledger that lacks
one, or whose counts are not integers, is unreadable (the audit names the field)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, Count

NAME = "curation_ledger.json"


class Unit(ArtifactModel):
    """A failed or quarantined unit: its name and the records it held."""

    unit: str | None = None
    records: Count


class CurationLedger(ArtifactModel):
    schema_version: Count | None = None
    stage: str
    source: Any
    n_input: Count
    n_success: Count
    n_filtered: Count
    n_failed: Count
    n_quarantined: Count
    n_accounted: Count
    balanced: bool
    filtered_by_reason: dict[str, Count]
    failed_units: list[Unit]
    quarantined_units: list[Unit]
    notes: Any
