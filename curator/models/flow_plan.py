"""``flow_plan.json`` (what ``curate flow`` planned) and ``.curate_flow_step.json``
(the done-marker a finished step's output dir holds), docs/flow.md."""

from __future__ import annotations

from typing import Any

from curator.models.producer import ArtifactModel, Count, ErrorBlock

NAME = "flow_plan.json"
MARKER_NAME = ".curate_flow_step.json"


class PlannedStep(ArtifactModel):
    key: str
    step_id: str | None = None
    enabled: bool = False
    notes: list[str] | None = None
    config: dict[str, Any] | None = None


class FlowPlanFile(ArtifactModel):
    schema_version: Count | None = None
    output_root: str | None = None
    dry_run: bool = False
    config_file: str | None = None
    #: named paths of the plan (``candidates``, ``approved_policy``, ``checkpoints``...)
    artifacts: dict[str, str] | None = None
    steps: list[PlannedStep] | None = None
    warnings: list[str] | None = None
    problems: list[ErrorBlock] | None = None


class StepMarker(ArtifactModel):
    """A step the flow finished with this config (``config_hash``)."""

    step_id: str | None = None
    config_hash: str | None = None
    completed_at: str | None = None
