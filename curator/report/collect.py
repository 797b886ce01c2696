"""What the report shows, read from an output root's artifacts (files only).

The steps come from the registry (:data:`curator.steps.registry.STEPS`): each one's
output dir (its config in ``flow_plan.json``, else ``<root>/<output_subdir>``), its
completion artifact and its one-line summary (the step's own ``render``). Every
artifact is parsed through its model (the spec's ``model``); each step's funnel row
comes from its spec's ``funnel`` reader (:mod:`curator.steps.funnel`); a step without
one is still listed, with its artifacts.
A missing, unreadable or malformed step artifact is reported as such (naming the file
and the field), never raised; a malformed ``flow_plan.json`` or ``flow_report.json``
is ``artifact_invalid``.

A flow whose ``output_root`` is a URL writes the report in the root's local copy, which
holds the flow's own files only: a step whose planned ``output_dir`` is a URL (and is
not under the given root) is read from the bucket: its completion artifact (one GET)
and, for the artifacts section, one listing of its prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from curator import models
from curator.errors import CuratorError
from curator.io import storage
from curator.models import (
    CompletionArtifact,
    FlowPlanFile,
    FlowReportFile,
)
from curator.steps.funnel import FunnelRow, MissingCount
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec

_M = TypeVar("_M", bound=models.ArtifactModel)


@dataclass
class StepArtifacts:
    """One registered step as its output dir holds it."""

    spec: StepSpec
    config: dict[str, Any]
    output_dir: Path
    completion: Path | None
    artifact: CompletionArtifact | None  # the completion artifact, when readable
    problem: str | None  # why there is none, or why it is incomplete
    flow_status: str | None  # the last flow_report.json's status for it
    url: str | None = None  # its output dir when that is a URL (output_dir: not on disk)

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def complete(self) -> bool:
        return self.artifact is not None and self.artifact.is_complete

    def summary(self) -> str | None:
        """The step's own one-line summary of its artifact (``None`` if it has none)."""
        if self.artifact is None:
            return None
        try:
            return self.spec.rendered(self.artifact).summary
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return None  # a render for people that does not fit this artifact


@dataclass
class RunArtifacts:
    root: Path
    plan: FlowPlanFile | None
    flow: FlowReportFile | None
    steps: list[StepArtifacts]
    policy: dict[str, Any] | None
    policy_path: Path
    funnel: list[FunnelRow]
    tiers: list[FunnelRow]

    @property
    def url(self) -> str | None:
        """The output root's URL when the run wrote to object storage (``root`` is then
        its local copy: the flow's own files)."""
        written = (self.flow.output_root if self.flow else None) \
            or (self.plan.output_root if self.plan else None)
        return written.rstrip("/") if written and storage.is_remote(written) else None

    def local(self, path: str | Path) -> Path:
        """``path`` under this root when an artifact names it under the root the run
        wrote to (a copied or moved root); else ``path``."""
        p = Path(path)
        if self.url is not None:
            return p
        written = Path((self.flow.output_root if self.flow else None)
                       or (self.plan.output_root if self.plan else None) or self.root)
        if written != self.root and p.is_relative_to(written):
            return self.root / p.relative_to(written)
        return p

    def step(self, key: str) -> StepArtifacts | None:
        return next((s for s in self.steps if s.key == key), None)


def read_artifact(spec: StepSpec, path: Path) -> tuple[CompletionArtifact | None, str | None]:
    """``(artifact, None)``, or ``(None, why not)``: absent, unreadable, or malformed
    (``artifact_invalid``, naming the file and the field)."""
    try:
        return models.read(spec.model, path), None
    except FileNotFoundError:
        return None, f"{path.name} absent"
    except OSError as exc:
        return None, f"{path.name} unreadable: {type(exc).__name__}"
    except CuratorError as exc:
        return None, f"{exc.error_id}: {exc.message}"


def _read_remote(spec: StepSpec, config: dict[str, Any]
                 ) -> tuple[CompletionArtifact | None, str | None]:
    """:func:`read_artifact` of a step whose output dir is a URL (the store's own errors
    are reported, never raised)."""
    where = spec.completion_location(config)
    try:
        artifact = spec.read_result(config)
    except CuratorError as exc:
        return None, f"{exc.error_id}: {exc.message}"
    if artifact is None:
        return None, f"{Path(str(where)).name} absent" if where else "no completion artifact"
    return artifact, _incomplete(artifact, None)


def _incomplete(artifact: CompletionArtifact | None, problem: str | None) -> str | None:
    """Why a step's artifact is incomplete (its error), else ``problem``."""
    if artifact is not None and not artifact.is_complete:
        err = artifact.error
        return (f"incomplete: {err.error_id} {err.message}" if err is not None
                else "incomplete: not completed ")
    return problem


def _read_flow_file(model: type[_M], path: Path) -> _M | None:
    """``flow_plan.json`` or ``flow_report.json``: ``None`` when absent or unreadable;
    malformed is ``artifact_invalid`` (the page could not say which steps ran)."""
    try:
        return models.read(model, path)
    except OSError:
        return None


def collect(root: str | Path) -> RunArtifacts:
    """Everything the report shows, from the files under ``root``."""
    root = Path(root).resolve()
    plan = _read_flow_file(FlowPlanFile, root / "flow_plan.json")
    flow = _read_flow_file(FlowReportFile, root / "flow_report.json")
    configs = {s.key: s.config or {} for s in (plan.steps or [])} if plan else {}
    statuses = {s.step_id: s.status for s in (flow.steps or [])} if flow else {}
    steps = []
    for spec in STEPS:
        config = dict(configs.get(spec.key) or {})
        # the root's own subdir first (a copied or moved root), else the planned dir
        out = root / spec.output_subdir
        planned = str(config.get("output_dir") or "")
        if not out.exists() and storage.is_remote(planned):  # on a bucket
            artifact, problem = _read_remote(spec, config)
            steps.append(StepArtifacts(spec, config, out, None, artifact, problem,
                                       statuses.get(spec.step_id), url=planned.rstrip("/")))
            continue
        if not out.exists() and planned:
            out = Path(planned)
        config["output_dir"] = str(out)
        try:
            completion = spec.completion_path(config)
        except (KeyError, TypeError, ValueError):
            completion = None
        artifact, problem = (read_artifact(spec, completion) if completion
                             else (None, "no completion artifact"))
        steps.append(StepArtifacts(spec, config, out, completion, artifact,
                                   _incomplete(artifact, problem),
                                   statuses.get(spec.step_id)))
    artifacts = (flow.artifacts if flow else None) or (plan.artifacts if plan else None) or {}
    policy_path = root / "policy" / "approved_policy.yaml"
    if not policy_path.is_file() and artifacts.get("approved_policy"):
        policy_path = Path(str(artifacts["approved_policy"]))
    try:
        policy = yaml.safe_load(policy_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        policy = None
    run = RunArtifacts(root, plan, flow, steps, policy if isinstance(policy, dict) else None,
                       policy_path, [], [])
    for s in steps:
        reader = s.spec.funnel
        if reader is None or s.artifact is None:
            continue
        try:
            stages, tiers = reader(s.artifact)
        except MissingCount:
            continue  # an artifact without the counts: listed, not in the funnel
        run.funnel += stages
        run.tiers += tiers
    return run


