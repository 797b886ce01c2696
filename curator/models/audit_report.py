"""``audit_report.json``: curate audit's completion artifact (docs/audit.md)."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, CompletionArtifact, Count

NAME = "audit_report.json"


class Finding(ArtifactModel):
    """One finding: its name, a message, and what it names (ids, paths, counts)."""

    name: str
    message: str = ""


class Strength(ArtifactModel):
    level: Count | None = None
    claim: str | None = None
    basis: str | None = None
    reason: str | None = None
    made: bool | None = None


class Target(ArtifactModel):
    """The audited corpus: its files, rows, bytes and (digest modes) its digest."""

    glob: Any = None
    file_count: Count | None = None
    row_count: Count | None = None
    bytes: Count | None = None
    unreadable_count: Count | None = None
    bad_record_count: Count | None = None
    digest: str | None = None


class Accounting(ArtifactModel):
    """Record-level accounting: input = output + rejected."""

    available: bool | None = None
    by_id: bool | None = None
    input_documents: Count | None = None
    output_records: Count | None = None
    rejected_records: Count | None = None
    balanced: bool | None = None


class Attribution(ArtifactModel):
    """The input->output difference attributed to the ledger's gates."""

    available: bool | None = None
    reason: str | None = None
    observed_delta: Count | None = None
    declared_filtered: Count | None = None
    declared_failed: Count | None = None
    unexplained: Count | None = None


class Containment(ArtifactModel):
    """Whether every target row is in the reference, by ``comparison_fields``."""

    comparison_fields: list[str] | None = None
    verifiable: bool | None = None
    contained: bool | None = None
    missing_row_count: Count | None = None


class StepCheck(ArtifactModel):
    """A later step's artifact proved by its checker (``output_root``): the artifact,
    its checker's block, the names of its findings."""

    artifact: str | None = None
    findings: list[str] | None = None


class AuditReport(CompletionArtifact):
    step_id: str | None = None
    mode: str | None = None
    passed: bool | None = None
    findings: list[Finding] | None = None
    strengths: list[Strength] | None = None
    target: Target | None = None
    completeness: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None
    attribution: Attribution | None = None
    accounting: Accounting | None = None
    containment: Containment | None = None
    observations: dict[str, Any] | None = None
    steps: dict[str, StepCheck] | None = None
