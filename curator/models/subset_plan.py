"""``plan.json``: the subset's plan (strata, their ids, the quota of each per budget),
written beside ``subset_report.json`` (docs/subset.md)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, Count
from curator.models.subset_report import StepWarning, Tokenizer

NAME = "plan.json"


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
    strata: dict[str, list[str]] | None = None
    stratum_tokens: dict[str, Count] | None = None
    #: ``{budget: {stratum: quota}}``, the budget as a string (a JSON key)
    quotas: dict[str, dict[str, Count]] | None = None
    warnings: list[StepWarning] | None = None
