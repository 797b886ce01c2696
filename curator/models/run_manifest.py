"""``run_manifest.json``: curate filter's completion artifact (docs/filter.md)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, CompletionArtifact, Count, Shard

NAME = "run_manifest.json"


class ManifestInput(ArtifactModel):
    glob: Any = None
    file_count: Count | None = None
    row_count: Count | None = None
    unparsable_rows: Count | None = None
    per_source: dict[str, Count] | None = None


class ManifestOutput(ArtifactModel):
    file_count: Count | None = None
    row_count: Count | None = None
    per_source: dict[str, Count] | None = None
    shards: list[Shard] | None = None
    id_field: str | None = None
    source_field: str | None = None


class Declared(ArtifactModel):
    """What the filter declares it removed, by gate, and what failed or was quarantined."""

    attribution: str | None = None
    filtered: dict[str, Count] | None = None
    failed: Count | None = None
    quarantined: Count | None = None
    rows_absent_from_output: Count | None = None


class ManifestPolicy(ArtifactModel):
    status: str | None = None
    thresholds_applied: Count | None = None
    policy_digest: str | None = None
    profile_digest: str | None = None
    approval_declared: str | None = None
    note: str | None = None


class Canonicalization(ArtifactModel):
    duplicate_ids: str | None = None


class RunManifest(CompletionArtifact):
    input: ManifestInput | None = None
    output: ManifestOutput | None = None
    declared: Declared | None = None
    policy: ManifestPolicy | None = None
    canonicalization: Canonicalization | None = None
    gates: list[str] | None = None
    rejected_dir: str | None = None
