"""What the report shows, read from an output root's artifacts (files only).

The steps come from the registry (:data:`curator.steps.registry.STEPS`): each one's
output dir (its config in ``flow_plan.json``, else ``<root>/<output_subdir>``), its
completion artifact and its one-line summary (the step's own ``render``). Every
artifact is parsed through its model (:mod:`curator.models`); the funnel readers
below take the typed models; a step without one is still listed, with its artifacts.
A missing, unreadable or malformed step artifact is reported as such (naming the file
and the field), never raised; a malformed ``flow_plan.json`` or ``flow_report.json``
is ``artifact_invalid``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from curator import models
from curator.errors import CuratorError
from curator.models import (
    CompletionArtifact,
    DecontaminationReport,
    FlowPlanFile,
    FlowReportFile,
    IngestReport,
    RunManifest,
    SubsetReport,
)
from curator.models.decontamination_report import SplitBlock
from curator.models.subset_report import SubsetCorpus
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec

_M = TypeVar("_M", bound=models.ArtifactModel)


@dataclass
class Loss:
    """Documents (and tokens, where counted) a stage did not pass on, and why."""

    reason: str
    documents: int
    tokens: int | None = None


@dataclass
class Stage:
    """One row of the funnel: what a step read, what it passed on, and every loss."""

    key: str
    label: str
    documents_in: int
    documents_out: int
    losses: list[Loss] = field(default_factory=list)
    tokens_in: int | None = None
    tokens_out: int | None = None
    note: str = ""

    @property
    def balanced(self) -> bool:
        return self.documents_in == self.documents_out + sum(x.documents for x in self.losses)


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

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def data(self) -> dict[str, Any] | None:
        """The completion artifact as written (validated by its model), for the page."""
        return self.artifact.dump() if self.artifact is not None else None

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
    funnel: list[Stage]
    tiers: list[Stage]

    @property
    def flow_plan(self) -> dict[str, Any] | None:
        """``flow_plan.json`` as written (validated by its model), for the page."""
        return self.plan.dump() if self.plan is not None else None

    @property
    def flow_report(self) -> dict[str, Any] | None:
        """``flow_report.json`` as written (validated by its model), for the page."""
        return self.flow.dump() if self.flow is not None else None

    def local(self, path: str | Path) -> Path:
        """``path`` under this root when an artifact names it under the root the run
        wrote to (a copied or moved root); else ``path``."""
        p = Path(path)
        written = Path((self.flow.output_root if self.flow else None)
                       or (self.plan.output_root if self.plan else None) or self.root)
        if written != self.root and p.is_relative_to(written):
            return self.root / p.relative_to(written)
        return p

    def step(self, key: str) -> StepArtifacts | None:
        return next((s for s in self.steps if s.key == key), None)

    def data(self, key: str) -> dict[str, Any] | None:
        s = self.step(key)
        return s.data if s is not None else None


def read_artifact(spec: StepSpec, path: Path) -> tuple[CompletionArtifact | None, str | None]:
    """``(artifact, None)``, or ``(None, why not)``: absent, unreadable, or malformed
    (``artifact_invalid``, naming the file and the field)."""
    try:
        return models.read(models.completion_model(spec.key), path), None
    except FileNotFoundError:
        return None, f"{path.name} absent"
    except OSError as exc:
        return None, f"{path.name} unreadable: {type(exc).__name__}"
    except CuratorError as exc:
        return None, f"{exc.error_id}: {exc.message}"


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
        if not out.exists() and config.get("output_dir"):
            out = Path(str(config["output_dir"]))
        config["output_dir"] = str(out)
        try:
            completion = spec.completion_path(config)
        except (KeyError, TypeError, ValueError):
            completion = None
        artifact, problem = (read_artifact(spec, completion) if completion
                             else (None, "no completion artifact"))
        if artifact is not None and not artifact.is_complete:
            err = artifact.error
            problem = (f"incomplete: {err.error_id} {err.message}" if err is not None
                       else "incomplete: not completed ")
        steps.append(StepArtifacts(spec, config, out, completion, artifact, problem,
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
        reader = FUNNEL.get(s.key)
        if reader is None or s.artifact is None:
            continue
        try:
            stages, tiers = reader(s.artifact)
        except MissingCount:
            continue  # an artifact without the counts: listed, not in the funnel
        run.funnel += stages
        run.tiers += tiers
    return run


class MissingCount(ValueError):
    """A count the funnel needs is absent from an artifact (typed, but left out)."""


def _need(x: int | None, what: str) -> int:
    if x is None:
        raise MissingCount(what)
    return x


def _ingest(r: IngestReport) -> tuple[list[Stage], list[Stage]]:
    reasons = r.rejections_by_reason
    if reasons is None:
        raise MissingCount("rejections_by_reason")
    losses = [Loss(f"rejected: {k}", v) for k, v in reasons.items()]
    return [Stage("ingest", "ingest (raw records → canonical shards)",
                  _need(r.documents_seen, "documents_seen"),
                  _need(r.documents_accepted, "documents_accepted"), losses)], []


def _filter(r: RunManifest) -> tuple[list[Stage], list[Stage]]:
    declared, policy = r.declared, r.policy
    if declared is None or declared.filtered is None or policy is None \
            or r.input is None or r.output is None:
        raise MissingCount("declared.filtered, policy, input or output")
    losses = [Loss(f"gate: {k}", v) for k, v in declared.filtered.items()]
    if declared.failed:
        losses.append(Loss("failed (unreadable records)", declared.failed))
    if declared.quarantined:
        losses.append(Loss("quarantined", declared.quarantined))
    note = f"policy {policy.status}, {policy.thresholds_applied} thresholds"
    return [Stage("filter", "filter (approved policy's gates)",
                  _need(r.input.row_count, "input.row_count"),
                  _need(r.output.row_count, "output.row_count"), losses, note=note)], []


def _skips(block: SplitBlock | SubsetCorpus) -> list[Loss]:
    names = {"unparsable_lines": "unparsable line", "skipped_non_mapping": "not an object",
             "skipped_missing_text": "missing text", "skipped_missing_id": "missing id"}
    counts = {k: getattr(block, k) for k in names}
    return [Loss(f"skipped: {label}", counts[k]) for k, label in names.items() if counts[k]]


def _decontamination(r: DecontaminationReport) -> tuple[list[Stage], list[Stage]]:
    res, splits = r.result, r.splits
    if res is None or splits is None or splits.train is None:
        raise MissingCount("result or splits.train")
    skips = _skips(splits.train)
    losses = [Loss("holdout overlap: source identity only",
                   res.removed_by_group_identity_only or 0),
              Loss("holdout overlap: similarity only (jaccard/containment)",
                   res.removed_by_similarity_only or 0),
              Loss("holdout overlap: identity and similarity", res.removed_by_both or 0)]
    losses = [x for x in losses if x.documents] + skips
    read = _need(res.train_documents_in, "result.train_documents_in") \
        + sum(x.documents for x in skips)
    return [Stage("decontamination", "decontamination (holdout overlap removed)", read,
                  _need(res.train_documents_out, "result.train_documents_out"), losses)], []


def _subset(r: SubsetReport) -> tuple[list[Stage], list[Stage]]:
    corpus, unit = r.corpus, r.unit or "tokens"
    if corpus is None:
        raise MissingCount("corpus")
    skips = _skips(corpus)
    docs = _need(corpus.documents, "corpus.documents")
    total = _need(corpus.total_tokens, "corpus.total_tokens")
    stages = []
    if skips:
        stages.append(Stage("subset", "subset (records it could not count)",
                            docs + sum(x.documents for x in skips), docs, skips))
    tiers = []
    for t in r.tiers or []:
        name = Path(t.output or str(t.budget)).name
        kept = _need(t.document_count, "tiers[].document_count")
        achieved = _need(t.achieved_tokens, "tiers[].achieved_tokens")
        tiers.append(Stage(
            "subset", f"tier {name} (budget {t.budget:,} {unit})", docs, kept,
            [Loss(f"not selected: beyond its stratum's share of the {t.budget:,}-"
                  f"{unit} budget", docs - kept, total - achieved)],
            tokens_in=total, tokens_out=achieved,
            note=f"shortfall {_need(t.token_shortfall, 'tiers[].token_shortfall'):,} {unit}"))
    return stages, tiers


#: The funnel reader of each step whose artifact counts documents in and out.
FUNNEL: dict[str, Callable[[Any], tuple[list[Stage], list[Stage]]]] = {
    "ingest": _ingest, "filter": _filter, "decontamination": _decontamination,
    "subset": _subset,
}
