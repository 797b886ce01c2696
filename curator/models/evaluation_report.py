"""``evaluation.json``: what ``curate evaluate --report`` measured (docs/evaluate.md).

Not a step's completion artifact: a report of one measurement of an approved policy on
labelled sets, written whole when the measurement is done (a failure writes none)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, Count, Number, Producer

NAME = "evaluation.json"


class EvaluatedPolicy(ArtifactModel):
    """The policy measured: where it is, its status and digests, its thresholds."""

    path: str | None = None
    status: str | None = None
    policy_digest: str | None = None
    profile_digest: str | None = None
    corpus_fingerprint: str | None = None
    approval: dict[str, Any] | None = None
    thresholds: list[dict[str, Any]] | None = None


class EvaluatedPack(ArtifactModel):
    """The language pack the signals were scored with, and whether it is the policy's."""

    pack_id: str | None = None
    language_tag: str | None = None
    version: str | None = None
    content_hash: str | None = None
    policy_content_hash: str | None = None
    matches_policy: bool | None = None


class LabelledFile(ArtifactModel):
    """One labelled input file as read."""

    path: str | None = None


class Totals(ArtifactModel):
    """Documents by label, and how many of each the policy dropped."""

    documents: Count
    keep: Count
    drop: Count
    keep_dropped: Count
    drop_dropped: Count
    false_rejection_rate: Number | None = None
    noise_removal_rate: Number | None = None


class Phenomenon(ArtifactModel):
    """One phenomenon's row: its documents by label, dropped, and the rates."""

    phenomenon: str
    exercised: bool
    note: str = ""
    keep: Count
    keep_dropped: Count
    false_rejection_rate: Number | None = None
    drop: Count
    drop_dropped: Count
    noise_removal_rate: Number | None = None


class GateAttribution(ArtifactModel):
    """One gate: what it removed first, and what failed it, by label."""

    gate: str
    removed_keep: Count
    removed_drop: Count
    failed_keep: Count
    failed_drop: Count


class Listed(ArtifactModel):
    """A labelled document the policy got wrong (a false rejection, missed noise)."""

    id: str | int | None = None
    phenomenon: str | None = None


class EvaluationReport(ArtifactModel):
    schema_version: Count | None = None
    tool: str | None = None
    producer: Producer | None = None
    policy: EvaluatedPolicy
    langpack: EvaluatedPack
    signals_impl_version: dict[str, Any] | None = None
    labelled_files: list[LabelledFile]
    gates: list[str]
    language_gate: dict[str, Any] | None = None
    word_bounds: dict[str, Any] | None = None
    not_scored: list[dict[str, Any]] | None = None
    warnings: list[str]
    totals: Totals
    phenomena: list[Phenomenon]
    attribution: list[GateAttribution]
    false_rejections: list[Listed] | None = None
    missed_noise: list[Listed] | None = None
