"""What the report shows, read from an output root's artifacts (files only).

The steps come from the registry (:data:`curator.steps.registry.STEPS`): each one's
output dir (its config in ``flow_plan.json``, else ``<root>/<output_subdir>``), its
completion artifact and its one-line summary (the step's own ``render``). The funnel
readers below know each artifact's fields; a step without one is still listed, with
its artifacts. A missing or unreadable artifact is reported as such, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec


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
    data: dict[str, Any] | None  # the completion artifact, when readable
    problem: str | None  # why there is none, or why it is incomplete
    flow_status: str | None  # the last flow_report.json's status for it

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def complete(self) -> bool:
        producer = (self.data or {}).get("producer")
        return isinstance(producer, dict) and bool(producer.get("completed_at"))

    def summary(self) -> str | None:
        """The step's own one-line summary of its artifact (``None`` if it has none)."""
        if self.data is None:
            return None
        try:
            return self.spec.rendered(self.data).summary
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return None


@dataclass
class RunArtifacts:
    root: Path
    flow_plan: dict[str, Any] | None
    flow_report: dict[str, Any] | None
    steps: list[StepArtifacts]
    policy: dict[str, Any] | None
    policy_path: Path
    funnel: list[Stage]
    tiers: list[Stage]

    def local(self, path: str | Path) -> Path:
        """``path`` under this root when an artifact names it under the root the run
        wrote to (a copied or moved root); else ``path``."""
        p = Path(path)
        written = Path(str((self.flow_report or self.flow_plan or {}).get("output_root")
                           or self.root))
        if written != self.root and p.is_relative_to(written):
            return self.root / p.relative_to(written)
        return p

    def step(self, key: str) -> StepArtifacts | None:
        return next((s for s in self.steps if s.key == key), None)

    def data(self, key: str) -> dict[str, Any] | None:
        s = self.step(key)
        return s.data if s is not None else None


def read_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(data, None)``, or ``(None, why not)``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"{path.name} absent"
    except (OSError, ValueError) as exc:
        return None, f"{path.name} unreadable: {type(exc).__name__}"
    if not isinstance(data, dict):
        return None, f"{path.name} is not a JSON object"
    return data, None


def collect(root: str | Path) -> RunArtifacts:
    """Everything the report shows, from the files under ``root``."""
    root = Path(root).resolve()
    plan, _ = read_json(root / "flow_plan.json")
    flow, _ = read_json(root / "flow_report.json")
    configs = {s.get("key"): s.get("config") or {} for s in (plan or {}).get("steps") or []
               if isinstance(s, dict)}
    statuses = {s.get("step_id"): s.get("status") for s in (flow or {}).get("steps") or []
                if isinstance(s, dict)}
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
        data, problem = read_json(completion) if completion else (None, "no completion artifact")
        if data is not None and not (data.get("producer") or {}).get("completed_at"):
            err = data.get("error") or {}
            problem = f"incomplete: {err.get('error_id', 'not completed')} {err.get('message', '')}"
        steps.append(StepArtifacts(spec, config, out, completion, data, problem,
                                   statuses.get(spec.step_id)))
    artifacts = (flow or plan or {}).get("artifacts") or {}
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
        if reader is None or s.data is None:
            continue
        try:
            stages, tiers = reader(s.data)
        except (KeyError, TypeError, ValueError, AttributeError):
            continue  # an artifact of another shape: listed, not in the funnel
        run.funnel += stages
        run.tiers += tiers
    return run


def _int(x: Any) -> int:
    return int(x or 0)


def _ingest(r: dict[str, Any]) -> tuple[list[Stage], list[Stage]]:
    losses = [Loss(f"rejected: {k}", _int(v)) for k, v in r["rejections_by_reason"].items()]
    return [Stage("ingest", "ingest (raw records → canonical shards)",
                  _int(r["documents_seen"]), _int(r["documents_accepted"]), losses)], []


def _filter(r: dict[str, Any]) -> tuple[list[Stage], list[Stage]]:
    declared = r["declared"]
    losses = [Loss(f"gate: {k}", _int(v)) for k, v in declared["filtered"].items()]
    if declared.get("failed"):
        losses.append(Loss("failed (unreadable records)", _int(declared["failed"])))
    if declared.get("quarantined"):
        losses.append(Loss("quarantined", _int(declared["quarantined"])))
    note = f"policy {r['policy']['status']}, {r['policy']['thresholds_applied']} thresholds"
    return [Stage("filter", "filter (approved policy's gates)", _int(r["input"]["row_count"]),
                  _int(r["output"]["row_count"]), losses, note=note)], []


def _skips(block: dict[str, Any]) -> list[Loss]:
    names = {"unparsable_lines": "unparsable line", "skipped_non_mapping": "not an object",
             "skipped_missing_text": "missing text", "skipped_missing_id": "missing id"}
    return [Loss(f"skipped: {label}", _int(block.get(k))) for k, label in names.items()
            if block.get(k)]


def _decontamination(r: dict[str, Any]) -> tuple[list[Stage], list[Stage]]:
    res = r["result"]
    skips = _skips(r["splits"]["train"])
    losses = [Loss("holdout overlap: source identity only",
                   _int(res.get("removed_by_group_identity_only"))),
              Loss("holdout overlap: similarity only (jaccard/containment)",
                   _int(res.get("removed_by_similarity_only"))),
              Loss("holdout overlap: identity and similarity", _int(res.get("removed_by_both")))]
    losses = [x for x in losses if x.documents] + skips
    read = _int(res["train_documents_in"]) + sum(x.documents for x in skips)
    return [Stage("decontamination", "decontamination (holdout overlap removed)", read,
                  _int(res["train_documents_out"]), losses)], []


def _subset(r: dict[str, Any]) -> tuple[list[Stage], list[Stage]]:
    corpus, unit = r["corpus"], r.get("unit") or "tokens"
    skips = _skips(corpus)
    docs, total = _int(corpus["documents"]), _int(corpus["total_tokens"])
    stages = []
    if skips:
        stages.append(Stage("subset", "subset (records it could not count)",
                            docs + sum(x.documents for x in skips), docs, skips))
    tiers = []
    for t in r.get("tiers") or []:
        name = Path(str(t.get("output") or t["budget"])).name
        kept, achieved = _int(t["document_count"]), _int(t["achieved_tokens"])
        tiers.append(Stage(
            "subset", f"tier {name} (budget {_int(t['budget']):,} {unit})", docs, kept,
            [Loss(f"not selected: beyond its stratum's share of the {_int(t['budget']):,}-"
                  f"{unit} budget", docs - kept, total - achieved)],
            tokens_in=total, tokens_out=achieved,
            note=f"shortfall {_int(t['token_shortfall']):,} {unit}"))
    return stages, tiers


#: The funnel reader of each step whose artifact counts documents in and out.
FUNNEL: dict[str, Callable[[dict[str, Any]], tuple[list[Stage], list[Stage]]]] = {
    "ingest": _ingest, "filter": _filter, "decontamination": _decontamination,
    "subset": _subset,
}
