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

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run
from prefect.input import RunInput

from curator.errors import CuratorError
from curator.flow.plan import StepPlan
from curator.flow.run import ApprovalAnswer, run_flow, start_flow
from flows.credentials import storage_environment
from flows.steps import STEP_FLOWS


class ApprovalInput(RunInput):
    """What a person submits to resume a flow paused for approval."""

    thresholds: dict[str, float | list[float]] | list[dict[str, Any]]
    approver: str
    evidence: str
    method: str = "manual"


class _PrefectHooks:
    """The flow's hooks: each step as a subflow, approval as paused-run input."""

    def run_step(self, step: StepPlan) -> dict[str, Any]:
        return STEP_FLOWS[step.key](step.config)

    def ask_approval(self, candidate: str, timeout_seconds: int) -> ApprovalAnswer:
        try:
            given = pause_flow_run(wait_for_input=ApprovalInput, timeout=timeout_seconds,
                                   poll_interval=1)
        except FlowPauseTimeout as exc:
            raise CuratorError(
                "approval_timeout",
                f"no approval was submitted within {timeout_seconds} s: rerun the "
                "flow (finished steps are skipped) and submit the form while it waits",
            ) from exc
        return ApprovalAnswer(given.thresholds, given.approver, given.evidence, given.method)

    def show(self, key: str, markdown: str, description: str) -> None:
        create_markdown_artifact(markdown=markdown, key=key, description=description)


@flow(name="curate-flow", validate_parameters=False, persist_result=False)
def curate_flow(config: str | dict[str, Any], plan: bool = False,
                storage_credentials: str | None = None) -> dict[str, Any]:
    """Run the enabled steps in order (``plan=True``: write the plan, run nothing).

    ``storage_credentials``: the name of a Prefect Secret block holding the object
    store's environment variables for this run (flows/credentials.py); unset: the
    process's own environment."""
    logger = get_run_logger()
    with storage_environment(storage_credentials):
        fplan = start_flow(config, plan, logger)
        if plan:
            return fplan.to_json(dry_run=True)
        return run_flow(fplan, _PrefectHooks(), logger)
