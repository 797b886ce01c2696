"""``dedup_report.json``: curate dedup's completion artifact (docs/dedup.md, "Outputs")."""

from __future__ import annotations

from typing import Any

from curator.models.producer import CompletionArtifact, Count, Shard, StepWarning

NAME = "dedup_report.json"


class DedupReport(CompletionArtifact):
    step_id: str | None = None
    run_id: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    completed_normally: bool | None = None
    seconds: float | None = None
    input: dict[str, Any] | None = None
    output_dir: str | None = None
    removed_dir: str | None = None
    params: dict[str, Any] | None = None
    config_digest: str | None = None
    documents_in: Count | None = None
    documents_out: Count | None = None
    removed: Count | None = None
    skipped: dict[str, Count] | None = None
    candidate_pairs: Count | None = None
    verified_pairs: Count | None = None
    rejected_pairs: Count | None = None
    components: Count | None = None
    documents_in_components: Count | None = None
    largest_component: Count | None = None
    component_sizes: dict[str, Count] | None = None
    removed_by_source: dict[str, Count] | None = None
    rounds: Count | None = None
    partitions: dict[str, Count] | None = None
    shards: list[Shard] | None = None
    removed_shards: list[Shard] | None = None
    warnings: list[StepWarning] | None = None
