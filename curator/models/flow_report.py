"""``flow_report.json``: what the last ``curate flow`` run did (docs/flow.md)."""

from __future__ import annotations

from curator.models.producer import ArtifactModel, Count, ErrorBlock

NAME = "flow_report.json"


class FlowStepEntry(ArtifactModel):
    step_id: str
    status: str
    output_dir: str | None = None
    notes: list[str] | None = None
    passed: bool | None = None
    warnings: list[str] | None = None
    error: ErrorBlock | None = None


class PromotedPolicy(ArtifactModel):
    path: str | None = None
    policy_digest: str | None = None


class FlowReportFile(ArtifactModel):
    schema_version: Count | None = None
    step_id: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    output_root: str | None = None
    artifacts: dict[str, str] | None = None
    steps: list[FlowStepEntry] | None = None
    warnings: list[str] | None = None
    status: str | None = None
    audit_passed: bool | None = None
    policy_applied: bool | None = None
    policy_promoted: bool | None = None
    policy_status: str | None = None
    approved_policy: PromotedPolicy | None = None
    error: ErrorBlock | None = None
