"""``profile_report.json``: curate profile's completion artifact (docs/profile.md)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, CompletionArtifact, Count, Number

NAME = "profile_report.json"


class ProfileCorpus(ArtifactModel):
    glob: Any = None
    file_count: Count | None = None
    document_count: Count | None = None
    records_read: Count | None = None
    source_count: Count | None = None
    source_field: str | None = None
    fingerprint: str | None = None


class SignalBlock(ArtifactModel):
    """One signal's distribution: its name and its views (``micro``: per document,
    ``macro``: per source), each a mapping of statistics (``p10``, ``p50``, ...)."""

    signal: str
    direction: str | None = None
    units: str | None = None
    n_scored: Count | None = None
    views: dict[str, dict[str, Any]] | None = None
    histogram: dict[str, Any] | None = None


class Sampling(ArtifactModel):
    method: str | None = None
    sampled: Count | None = None
    max_total_docs: Count | None = None


class Langpack(ArtifactModel):
    pack_id: str | None = None
    language_tag: str | None = None
    content_hash: str | None = None


class PolicySimulation(ArtifactModel):
    """What the candidate gates at their default points would keep, together."""

    retention: Number | None = None
    gates: Count | None = None
    sum_of_marginals: Number | None = None


class ProfileReport(CompletionArtifact):
    step_id: str | None = None
    profile_digest: str | None = None
    signals_impl_version: str | None = None
    corpus: ProfileCorpus | None = None
    sampling: Sampling | None = None
    langpack: Langpack | None = None
    policy_simulation: PolicySimulation | None = None
    signals: list[SignalBlock] | None = None
    notes: list[Any] | None = None
