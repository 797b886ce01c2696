"""``curation_ledger.json``: the filter's per-stage accounting (docs/filter.md).

Every key the audit's attribution reads is required and typed: a ledger that lacks
one, or whose counts are not non-negative integers, is unreadable (the audit names the
file and the field)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from curator.models.producer import ArtifactModel, Count

NAME = "curation_ledger.json"
#: a ledger's count of records: a JSON integer (no float, boolean or string), >= 0
Records = Annotated[int, Field(strict=True, ge=0)]


class Unit(ArtifactModel):
    """A failed or quarantined unit: its name and the records it held."""

    unit: str | None = None
    records: Records


class CurationLedger(ArtifactModel):
    schema_version: Count | None = None
    stage: str
    source: Any
    n_input: Records
    n_success: Records
    n_filtered: Records
    n_failed: Records
    n_quarantined: Records
    n_accounted: Records
    balanced: bool
    filtered_by_reason: dict[str, Records]
    failed_units: list[Unit]
    quarantined_units: list[Unit]
    notes: Any
