"""``decontamination_report.json``: curate decontaminate's completion artifact
(docs/decontamination.md). It keeps ``step_id``, ``started_at``, ``completed_at`` and
``config_hash`` at the top level too (schema 1, as written)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import (
    ArtifactModel,
    CompletionArtifact,
    Count,
    Number,
    Shard,
    StepWarning,
)

NAME = "decontamination_report.json"


class DecontaminationPaths(ArtifactModel):
    """The files it read and wrote (what the audit re-reads)."""

    output_dir: str | None = None
    removed_dir: str | None = None
    text_field: str | None = None
    id_field: str | None = None
    train_glob: Any = None
    holdout_glob: Any = None
    train_files: list[str] | None = None
    holdout_files: list[str] | None = None


class DecontaminationResult(ArtifactModel):
    train_documents_in: Count | None = None
    train_documents_out: Count | None = None
    train_documents_removed: Count | None = None
    removed_by_group_identity_only: Count | None = None
    removed_by_similarity_only: Count | None = None
    removed_by_both: Count | None = None
    removed_by_rule: dict[str, Count] | None = None


class SplitBlock(ArtifactModel):
    """One split (``train`` or ``holdout``) as read: documents and what was skipped."""

    documents: Count | None = None
    fingerprint: str | None = None
    unparsable_lines: Count | None = None
    skipped_non_mapping: Count | None = None
    skipped_missing_text: Count | None = None
    skipped_missing_id: Count | None = None
    content_digest: str | None = None
    content_digest_after: str | None = None
    modified: bool | None = None


class Splits(ArtifactModel):
    train: SplitBlock | None = None
    holdout: SplitBlock | None = None


class DecontaminationParameters(ArtifactModel):
    """The parameters it ran with (the rest of its config block as written)."""

    candidates: str | None = None
    shingle_kind: str | None = None
    shingle_size: Count | None = None
    threshold: Number | None = None
    expected_recall: Number | None = None


class Similarity(ArtifactModel):
    """The similarity pass: its candidate pairs, and the pairs it removed."""

    candidate_pairs: Count | None = None
    verified_duplicates: Count | None = None
    unverifiable_pairs: Count | None = None
    removed_pairs: list[dict[str, Any]] | None = None


class DecontaminationOutput(ArtifactModel):
    rows: Count | None = None
    shards: list[Shard] | None = None


class DecontaminationReport(CompletionArtifact):
    step_id: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    config_hash: str | None = None
    paths: DecontaminationPaths | None = None
    result: DecontaminationResult | None = None
    splits: Splits | None = None
    output: DecontaminationOutput | None = None
    warnings: list[StepWarning] | None = None
    claim: str | None = None
    parameters: DecontaminationParameters | None = None
    similarity: Similarity | None = None
