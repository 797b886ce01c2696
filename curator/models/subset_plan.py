"""``plan.json``: the subset's plan (strata, the quota and prefix of each per budget, and
the per-range id files), written beside ``subset_report.json`` (docs/subset.md).
Schema 3 lists the ids in ``ranges``' files; schema 2 listed them in ``strata``."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, Count
from curator.models.subset_report import StepWarning, Tokenizer

NAME = "plan.json"


class PlanRange(ArtifactModel):
    """One range of the global order: its id file (Parquet ``id, stratum,
    first_budget``, relative to ``plan.json``'s folder) and how many documents it holds."""

    file: str
    documents: Count | None = None


class SubsetPlan(ArtifactModel):
    schema_version: Count | None = None
    budgets: list[Count] | None = None
    unit: str | None = None
    seed: Any = None
    length_bands: list[Count] | None = None
    score_field: str | None = None
    score_cut_points: list[Count | float] | None = None
    tokenizer: Tokenizer | None = None
    total_tokens: Count | None = None
    #: schema 2 only: every stratum's ids in the global order
    strata: dict[str, list[str]] | None = None
    stratum_tokens: dict[str, Count] | None = None
    stratum_documents: dict[str, Count] | None = None
    #: schema 3: the id files, one per range of the global order, in that order
    ranges: list[PlanRange] | None = None
    #: ``{budget: {stratum: quota}}``, the budget as a string (a JSON key)
    quotas: dict[str, dict[str, Count]] | None = None
    #: ``{budget: {stratum: documents}}``: the length of each stratum's prefix in the tier
    taken: dict[str, dict[str, Count]] | None = None
    warnings: list[StepWarning] | None = None
