"""``curate flow``: ingest, profile, approve and filter as one Prefect flow.

Each step runs as a subflow with its derived config; ``flow_plan.json`` is written
before any step runs and ``flow_report.json`` after (also when a step fails). A rerun
skips the steps whose artifacts are complete and were made by the same step config,
and the engine's checkpoints resume the step that was interrupted. Approval comes from
the config's ``approve`` block, from a policy path, or from a person: with
``approve.interactive`` the flow pauses after profiling until thresholds, approver and
evidence are submitted as run input (the Prefect UI shows a form).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput

from curator.artifacts import utc_now, write_json_atomic
from curator.errors import CuratorError
from curator.flow.approval import approve_policy
from curator.flow.plan import (
    FlowPlan,
    StepPlan,
    load_flow_config,
    mark_done,
    plan_flow,
    set_extra,
    step_is_done,
)
from flows.filter import filter_flow
from flows.ingest import ingest_flow
from flows.profile import profile_flow

STEP_FLOWS = {"ingest": ingest_flow, "profile": profile_flow, "filter": filter_flow}


class ApprovalInput(RunInput):
    """What a person submits to resume a flow paused for approval."""

    thresholds: dict[str, float | list[float]]
    approver: str
    evidence: str
    method: str = "manual"


def _load(config: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(config, dict):
        return config
    try:
        data = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CuratorError("config_error", f"cannot read flow config {config}: {exc}") from exc
    if not isinstance(data, dict):
        raise CuratorError("config_error", f"flow config {config} is not a mapping")
    return data


@flow(name="curate-flow", validate_parameters=False, persist_result=False)
def curate_flow(config: str | dict[str, Any], plan: bool = False) -> dict[str, Any]:
    """Run the enabled steps in order (``plan=True``: write the plan, run nothing)."""
    logger = get_run_logger()
    fplan = plan_flow(load_flow_config(_load(config)))
    fplan.root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(fplan.root / "flow_plan.json", fplan.to_json(dry_run=plan))
    for warning in fplan.warnings:
        logger.warning(warning)
    fplan.raise_problems()
    if plan:
        return fplan.to_json(dry_run=True)
    report = _Report(fplan)
    try:
        for step in fplan.steps:
            if step.key == "filter" and fplan.approve is not None:
                _approve(fplan, report, logger)  # written even when the filter is off
            if not step.enabled:
                report.step(step, "disabled")
                continue
            set_extra(step)
            if step_is_done(step):
                logger.info("%s: artifacts complete for this config: skipped", step.step_id)
                report.step(step, "skipped", notes=["artifacts complete for this config"])
                continue
            logger.info("%s: running into %s", step.step_id, step.output_dir)
            result = STEP_FLOWS[step.key](step.config)
            mark_done(step, utc_now())
            report.step(step, "ok", result=result)
        report.status = "ok"
    except BaseException as exc:
        report.fail(exc)
        raise
    finally:
        report.write()
    return report.data


def _approve(fplan: FlowPlan, report: _Report, logger: Any) -> None:
    approve = fplan.approve
    assert approve is not None
    candidate = approve.from_ or fplan.artifacts["candidates"]
    out = fplan.artifacts["approved_policy"]
    if approve.interactive:
        logger.info("waiting for approval: submit thresholds, approver and evidence for %s "
                    "(timeout %d s)", candidate, approve.timeout_seconds)
        summary = Path(fplan.artifacts["profile"]) / "profile_summary.md"
        if summary.is_file():
            create_markdown_artifact(markdown=summary.read_text(encoding="utf-8"),
                                     key="approval-request",
                                     description="curate flow: read this, then approve")
        try:
            given = pause_flow_run(wait_for_input=ApprovalInput,
                                   timeout=approve.timeout_seconds, poll_interval=1)
        except FlowPauseTimeout as exc:
            raise CuratorError(
                "approval_timeout",
                f"no approval was submitted within {approve.timeout_seconds} s: rerun the "
                "flow (finished steps are skipped) and submit the form while it waits",
            ) from exc
        thresholds, approver, evidence, method = (given.thresholds, given.approver,
                                                  given.evidence, given.method)
        date = None
    else:
        thresholds, approver, evidence, method, date = (
            approve.thresholds, approve.approver, approve.evidence, approve.method,
            approve.date)
    digest, warnings = approve_policy(candidate, out, thresholds, approver=approver,
                                      evidence=evidence, method=method, date=date)
    for warning in warnings:
        logger.warning(warning)
    report.promoted(out, digest, warnings)


class _Report:
    """``flow_report.json``, kept up to date and written at the end (or on failure)."""

    def __init__(self, fplan: FlowPlan) -> None:
        self.fplan = fplan
        self.status = "failed"
        self.promote_warnings: list[str] = []
        self.data: dict[str, Any] = {
            "schema_version": 1, "step_id": "curate/flow", "started_at": utc_now(),
            "completed_at": None, "output_root": str(fplan.root),
            "artifacts": fplan.artifacts, "steps": [], "warnings": list(fplan.warnings),
            "audit_passed": None, "status": "failed", "policy_applied": False,
            "policy_promoted": False, "policy_status": None,
        }

    def step(self, step: StepPlan, status: str, notes: list[str] | None = None,
             result: dict[str, Any] | None = None) -> None:
        warnings = list(self.promote_warnings) if step.key == "filter" else []
        entry: dict[str, Any] = {"step_id": step.step_id, "status": status,
                                 "output_dir": step.output_dir, "notes": notes or [],
                                 "passed": status in ("ok", "skipped"), "warnings": warnings}
        self.data["steps"].append(entry)
        if step.key == "filter" and status in ("ok", "skipped"):
            manifest = result if result is not None else _manifest(step)
            if manifest:
                policy = manifest.get("policy") or {}
                self.data["policy_status"] = policy.get("status")
                self.data["policy_applied"] = bool(policy.get("thresholds_applied"))

    def promoted(self, path: str, digest: str, warnings: list[str]) -> None:
        self.data["policy_promoted"] = True
        self.data["approved_policy"] = {"path": path, "policy_digest": digest}
        self.data["warnings"] += warnings
        self.promote_warnings = warnings  # also on the filter step, which applies it

    def fail(self, exc: BaseException) -> None:
        done = {s["step_id"] for s in self.data["steps"]}
        running = next((s for s in self.fplan.steps if s.enabled and s.step_id not in done),
                       None)
        error = {"error_id": getattr(exc, "error_id", "internal_error"),
                 "message": getattr(exc, "message", f"{type(exc).__name__}: {exc}")}
        if running is not None:
            self.data["steps"].append({"step_id": running.step_id, "status": "failed",
                                       "output_dir": running.output_dir, "notes": [],
                                       "passed": False, "warnings": [], "error": error})
        self.data["error"] = error

    def write(self) -> None:
        self.data["status"] = self.status
        self.data["completed_at"] = utc_now()
        write_json_atomic(self.fplan.root / "flow_report.json", self.data)


def _manifest(step: StepPlan) -> dict[str, Any] | None:
    path = Path(step.output_dir or "") / (step.config.get("emit_manifest")
                                          or "run_manifest.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
