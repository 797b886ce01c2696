"""The checkpoint summary ``curate checkpoint show --json`` prints: how many source
partitions each writer file records as complete, and the damaged files."""

from __future__ import annotations

from curator.models.producer import ArtifactModel, Count


class WriterFile(ArtifactModel):
    file: str
    completed: Count


class DamagedFile(ArtifactModel):
    file: str
    error: str


class CheckpointSummary(ArtifactModel):
    checkpoint: str
    completed_sources: Count
    writers: list[WriterFile]
    damaged: list[DamagedFile]
