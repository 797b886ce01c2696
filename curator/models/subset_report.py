"""``subset_report.json``: curate subset's completion artifact (docs/subset.md). It
keeps ``step_id``, ``started_at``, ``completed_at`` and ``config_hash`` at the top
level too (schema 1, as written)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, CompletionArtifact, Count, StepWarning

NAME = "subset_report.json"


class Tokenizer(ArtifactModel):
    name: str | None = None
    revision: str | None = None
    library: str | None = None
    vocabulary: str | None = None


class SubsetCorpus(ArtifactModel):
    documents: Count | None = None
    files: Count | None = None
    total_tokens: Count | None = None
    unparsable_lines: Count | None = None
    skipped_non_mapping: Count | None = None
    skipped_missing_text: Count | None = None
    skipped_missing_id: Count | None = None


class Tier(ArtifactModel):
    budget: Count
    output: str | None = None
    unit: str | None = None
    document_count: Count | None = None
    documents_written: Count | None = None
    achieved_tokens: Count | None = None
    token_shortfall: Count | None = None
    per_stratum_tokens: dict[str, Count] | None = None
    per_stratum_deviation: dict[str, Count] | None = None
    strata_exhausted: list[str] | None = None


class Stratum(ArtifactModel):
    documents: Count | None = None
    tokens: Count | None = None
    shortest: Count | None = None


class Stratification(ArtifactModel):
    score_field: str | None = None
    length_bands: list[Count] | None = None
    score_cut_points: list[Count | float] | None = None
    strata: dict[str, Stratum] | None = None


class TokenCache(ArtifactModel):
    dir: str | None = None
    hits: Count | None = None
    misses: Count | None = None


class SubsetReport(CompletionArtifact):
    step_id: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    config_hash: str | None = None
    input_glob: Any = None
    id_field: str | None = None
    text_field: str | None = None
    unit: str | None = None
    tokenizer: Tokenizer | None = None
    plan: str | None = None
    corpus: SubsetCorpus | None = None
    tiers: list[Tier] | None = None
    stratification: Stratification | None = None
    token_cache: TokenCache | None = None
    nesting_verified: bool | None = None
    interpretation: str | None = None
    warnings: list[StepWarning] | None = None
    #: its picture of per-stratum shares (``tier_shares.png``), when it drew one
    picture: str | None = None
