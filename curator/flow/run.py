"""The flow's run loop and ``flow_report.json`` (no Prefect: the wiring passes hooks).

:func:`run_flow` walks the plan's steps in registry order: approval before the step
that applies the policy, disabled steps reported, finished steps skipped (their
artifacts are complete for this config), the rest run through ``hooks.run_step``
(in ``flows/``: the step's Prefect flow as a subflow). ``flow_report.json`` is
written at the end, also when a step fails.

With a root on object storage the flow's own files are written to the root's local
copy while its area is active (:attr:`FlowPlan.area`): each goes up to the URL as it
is written (:mod:`curator.flow.remote`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from curator import models
from curator.artifacts import utc_now, write_json_atomic
from curator.errors import CuratorError
from curator.flow.approval import approve_policy
from curator.flow.plan import (
    FlowPlan,
    StepPlan,
    clear_done,
    mark_done,
    set_extra,
    step_is_done,
)
from curator.io import shared, storage
from curator.models import FlowReportFile
from curator.steps.base import error_block

REPORT_NAME = "flow_report.json"
PLAN_NAME = "flow_plan.json"


@dataclass
class ApprovalAnswer:
    """What a person submits to approve a policy interactively."""

    thresholds: Any  # {signal: value | [lo, hi]} or [{signal, min, max}]
    approver: str
    evidence: str
    method: str = "manual"


class FlowHooks(Protocol):
    """What the wiring provides: running a step, asking a person, showing a document."""

    def run_step(self, step: StepPlan) -> dict[str, Any]: ...

    def ask_approval(self, candidate: str, timeout_seconds: int) -> ApprovalAnswer: ...

    def show(self, key: str, markdown: str, description: str) -> None: ...


def run_flow(fplan: FlowPlan, hooks: FlowHooks, logger: Any) -> dict[str, Any]:
    """Run the enabled steps in order; return (and write) the flow report."""
    with shared.driving(fplan.area):
        return _run_flow(fplan, hooks, logger)


def _run_flow(fplan: FlowPlan, hooks: FlowHooks, logger: Any) -> dict[str, Any]:
    report = FlowReport(fplan)
    try:
        for step in fplan.steps:
            if step.spec.applies_policy and fplan.approve is not None:
                _approve(fplan, report, hooks, logger)  # written even when the step is off
            if not step.enabled:
                report.step(step, "disabled")
                continue
            set_extra(step)
            if step_is_done(step):
                logger.info("%s: artifacts complete for this config: skipped", step.step_id)
                report.step(step, "skipped", notes=["artifacts complete for this config"])
                continue
            logger.info("%s: running into %s", step.step_id, step.output_dir)
            clear_done(step)
            result = hooks.run_step(step)
            mark_done(step, utc_now())
            report.step(step, "ok", result=result)
        report.status = "ok"
    except BaseException as exc:
        report.fail(exc)
        raise
    finally:
        report.write()
        _write_html(fplan.root, logger)
    return report.data


def _write_html(root: Path, logger: Any) -> None:
    """``report.html`` of the root (docs/report.md), also after a failure; a report
    that cannot be built is a warning, never the flow's error."""
    from curator.report import write_report

    try:
        logger.info("report %s", write_report(root))
    except Exception as exc:  # the page must never mask the flow's outcome
        logger.warning("report.html not written: %s: %s", type(exc).__name__, exc)


def _approve(fplan: FlowPlan, report: FlowReport, hooks: FlowHooks, logger: Any) -> None:
    approve = fplan.approve
    assert approve is not None
    candidate = approve.from_ or fplan.artifacts["candidates"]
    out = fplan.artifacts["approved_policy"]
    date = approve.date
    if approve.interactive:
        logger.info("waiting for approval: submit thresholds, approver and evidence for %s "
                    "(timeout %d s)", candidate, approve.timeout_seconds)
        summary = _read_text(str(fplan.locate("summary")))
        if summary is not None:
            hooks.show("approval-request", summary, "curate flow: read this, then approve")
        answer = hooks.ask_approval(candidate, approve.timeout_seconds)
        date = None
    else:
        answer = ApprovalAnswer(approve.thresholds, approve.approver, approve.evidence,
                                approve.method)
    with tempfile.TemporaryDirectory(prefix="curate-candidate-") as tmp:
        local = candidate
        if storage.is_remote(candidate):  # the profile's on a bucket: read from a copy
            local = str(Path(tmp) / Path(candidate).name)
            with storage.store_errors(f"curate flow: cannot fetch the candidate "
                                      f"{candidate}", True, url=candidate):
                storage.get_file(candidate, local)
        digest, warnings = approve_policy(local, out, answer.thresholds,
                                          approver=answer.approver, evidence=answer.evidence,
                                          method=answer.method, date=date)
    for warning in warnings:
        logger.warning(warning)
    report.promoted(out, digest, warnings)


def _read_text(path: str) -> str | None:
    """A local file's or an object's text, ``None`` when there is none."""
    try:
        with storage.store_errors(f"cannot read {path}", storage.is_remote(path), url=path):
            return storage.read_file(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


class FlowReport:
    """``flow_report.json``, kept up to date and written at the end (or on failure)."""

    def __init__(self, fplan: FlowPlan) -> None:
        self.fplan = fplan
        self.status = "failed"
        self.promote_warnings: list[str] = []
        self.data: dict[str, Any] = {
            "schema_version": 1, "step_id": "curate/flow", "started_at": utc_now(),
            "completed_at": None, "output_root": fplan.output_root,
            "artifacts": fplan.artifacts, "steps": [], "warnings": list(fplan.warnings),
            "audit_passed": None, "status": "failed", "policy_applied": False,
            "policy_promoted": False, "policy_status": None,
        }

    def step(self, step: StepPlan, status: str, notes: list[str] | None = None,
             result: dict[str, Any] | None = None) -> None:
        warnings = list(self.promote_warnings) if step.spec.applies_policy else []
        entry: dict[str, Any] = {"step_id": step.step_id, "status": status,
                                 "output_dir": step.output_dir, "notes": notes or [],
                                 "passed": status in ("ok", "skipped"), "warnings": warnings}
        self.data["steps"].append(entry)
        if status in ("ok", "skipped"):
            self._flow_fields(step, result)

    def _flow_fields(self, step: StepPlan, result: dict[str, Any] | None = None) -> None:
        """The fields ``step`` gives the flow report, from the result its run returned
        or its completion artifact read through its model (a malformed one gives none:
        the step's own status says what went wrong)."""
        if result is None:
            try:
                done = step.spec.read_result(step.config)
            except CuratorError as exc:
                if exc.error_id != models.ARTIFACT_INVALID:
                    raise
                return
            result = done.dump() if done is not None else None
        if result:
            self.data.update(step.spec.flow_fields(result))

    def promoted(self, path: str, digest: str, warnings: list[str]) -> None:
        self.data["policy_promoted"] = True
        self.data["approved_policy"] = {"path": path, "policy_digest": digest}
        self.data["warnings"] += warnings
        self.promote_warnings = warnings  # also on the step that applies it

    def fail(self, exc: BaseException) -> None:
        done = {s["step_id"] for s in self.data["steps"]}
        running = next((s for s in self.fplan.steps if s.enabled and s.step_id not in done),
                       None)
        error = error_block(exc)
        if running is not None:
            notes = []
            if isinstance(exc, CuratorError) and exc.details.get("complete"):
                # a verdict (the audit's findings): the artifacts are complete, the step
                # failed; the fields it gives the flow report still hold
                notes.append("artifacts complete; the step's verdict failed")
                self._flow_fields(running)
            self.data["steps"].append({"step_id": running.step_id, "status": "failed",
                                       "output_dir": running.output_dir, "notes": notes,
                                       "passed": False, "warnings": [], "error": error})
        self.data["error"] = error

    def write(self) -> None:
        self.data["status"] = self.status
        self.data["completed_at"] = utc_now()
        # a root on object storage: its local copy named by the URL (the policy's path)
        self.data = models.build(FlowReportFile, self.fplan.published(self.data))
        write_json_atomic(self.fplan.root / REPORT_NAME, self.data)


def start_flow(config: str | dict[str, Any], plan: bool, logger: Any) -> FlowPlan:
    """Read the flow config (a YAML path or a mapping, loaded safely), plan it, write
    ``flow_plan.json``, log its warnings and raise its problems (all at once)."""
    import yaml

    from curator.flow.plan import load_flow_config, plan_flow

    data: Any = config
    if not isinstance(config, dict):
        if Path(config).is_dir():  # named, quoted: "flow config in: ..." read as prose
            raise CuratorError("config_not_found", f"flow config {str(config)!r} is a "
                               "directory, not a YAML file: name the file (e.g. "
                               "examples/demo/flow-measure.yaml)")
        if not Path(config).is_file():
            raise CuratorError("config_not_found", f"flow config {str(config)!r} does not "
                               f"exist ({Path(config).absolute()})")
        try:
            data = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
            # not UTF-8 or nested past the parser's recursion limit: an error id, not a
            # traceback (tests/fuzz/test_loaders.py)
            raise CuratorError("config_error", f"cannot read flow config {config}: "
                               f"{str(exc)[:1000]}") from exc
        if not isinstance(data, dict):
            raise CuratorError("config_error", f"flow config {config} is not a mapping")
    fplan = plan_flow(load_flow_config(data))
    fplan.config_file = None if isinstance(config, dict) else str(Path(config).resolve())
    write_plan(fplan, dry_run=plan)
    for warning in fplan.warnings:
        logger.warning(warning)
    fplan.raise_problems()
    return fplan


def write_plan(fplan: FlowPlan, dry_run: bool) -> Path:
    """Write ``flow_plan.json`` in the root (and put it to a URL root's object)."""
    fplan.root.mkdir(parents=True, exist_ok=True)
    with shared.driving(fplan.area):
        return write_json_atomic(fplan.root / PLAN_NAME, fplan.to_json(dry_run=dry_run))
