"""``ingest_report.json``: curate ingest's completion artifact (docs/ingest.md).

Besides ``producer`` it keeps, at the top level, ``step_id``, ``started_at``,
``completed_at``, ``seconds``, ``completed_normally`` and ``run_id`` (schema 2, as
written since before the shared producer block; readers use ``producer``)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, CompletionArtifact, Count, Number, Shard

NAME = "ingest_report.json"


class Balance(ArtifactModel):
    seen: Count | None = None
    accepted: Count | None = None
    rejected: Count | None = None
    ok: bool | None = None


class IngestReport(CompletionArtifact):
    step_id: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    completed_normally: bool | None = None
    seconds: Number | None = None
    run_id: str | None = None
    output_dir: str | None = None
    documents_seen: Count | None = None
    documents_accepted: Count | None = None
    documents_rejected: Count | None = None
    documents_skipped_resumed: Count | None = None
    rejections_by_reason: dict[str, Count] | None = None
    encodings_used: dict[str, Count] | None = None
    counts: dict[str, Count] | None = None
    balance: Balance | None = None
    files_with_bom: Count | None = None
    lossy_documents: Count | None = None
    shards: list[Shard] | None = None
    warnings: list[Any] | None = None
