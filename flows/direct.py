"""Steps and the flow run without Prefect, for a command line with no Prefect server.

Prefect needs an API to record a run. With none configured, a Prefect flow starts a
temporary server (and its database) in every process: about 8 s of each ``curate``
command, for runs nobody can look at once the process ends. So ``curate`` asks Prefect
only where runs can be seen (docs/user-guide.md, "Prefect or not"):

- ``CURATE_PREFECT=always``: every command runs as a Prefect flow (a temporary server
  when none is configured);
- ``CURATE_PREFECT=never``: no command uses Prefect;
- ``auto`` (the default): Prefect when a server is configured (``PREFECT_API_URL`` in
  the environment or in the active Prefect profile), else the same steps run directly.

The direct path runs the same step code (``spec.run``) on the same executors with the
same checkpoints, artifacts and progress bars; it lacks only what needs a server (flow
and task runs, Prefect artifacts, a pause for interactive approval). This module
imports no Prefect.
"""

from __future__ import annotations

import logging
import os
import tomllib
from pathlib import Path
from typing import Any

from curator.config import StepConfig
from curator.errors import CuratorError
from curator.flow.plan import StepPlan
from curator.flow.run import ApprovalAnswer, run_flow, start_flow
from curator.steps.registry import BY_KEY
from curator.steps.spec import StepSpec
from executors import make_executor
from flows.listeners import LocalProgress

LOG = logging.getLogger("curator.flow")
MODES = ("auto", "always", "never")


def use_prefect(environ: dict[str, str] | None = None) -> bool:
    """Whether a command runs as a Prefect flow (``CURATE_PREFECT``, above)."""
    env = os.environ if environ is None else environ
    mode = env.get("CURATE_PREFECT", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise CuratorError("config_error",
                           f"CURATE_PREFECT={mode!r}: expected one of {', '.join(MODES)}")
    if mode != "auto":
        return mode == "always"
    return bool(env.get("PREFECT_API_URL")) or _profile_api_url(env) is not None


def _profile_api_url(env: Any) -> str | None:
    """``PREFECT_API_URL`` of the active Prefect profile, read from its file (importing
    Prefect to ask would cost the seconds this module saves)."""
    home = Path(env.get("PREFECT_HOME") or Path.home() / ".prefect")
    path = Path(env.get("PREFECT_PROFILES_PATH") or home / "profiles.toml")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = env.get("PREFECT_PROFILE") or doc.get("active")
    profile = (doc.get("profiles") or {}).get(name) or {}
    url = profile.get("PREFECT_API_URL") if isinstance(profile, dict) else None
    return url if isinstance(url, str) and url else None


def run_step(spec: StepSpec, config: str | dict[str, Any],
             overrides: list[str] | None = None) -> dict[str, Any]:
    """One step, as its Prefect flow would run it, without Prefect."""
    from flows.step_config import step_config

    cfg = step_config(spec.config, config, overrides)
    return _run(spec, cfg)


def _run(spec: StepSpec, cfg: StepConfig) -> dict[str, Any]:
    ex = cfg.execution
    with make_executor(ex.executor, ex.workers, ex.ray_address, ex.max_attempts) as executor:
        return spec.run(cfg, executor, on_progress=LocalProgress(spec.key))


class DirectHooks:
    """The flow's hooks without Prefect: each step runs in this process's executor."""

    def run_step(self, step: StepPlan) -> dict[str, Any]:
        from flows.step_config import step_config

        return _run(BY_KEY[step.key], step_config(step.spec.config, step.config, None))

    def ask_approval(self, candidate: str, timeout_seconds: int) -> ApprovalAnswer:
        raise CuratorError(
            "approval_needs_prefect",
            "approve.interactive pauses the flow for a form in the Prefect UI, and no "
            "Prefect server is configured: set PREFECT_API_URL (or CURATE_PREFECT=always), "
            f"or give the thresholds in the approve block (candidates: {candidate})")

    def show(self, key: str, markdown: str, description: str) -> None:
        LOG.info("%s: %s", key, description)


def run_flow_direct(config: str | dict[str, Any], plan: bool = False) -> dict[str, Any]:
    """``curate flow`` without Prefect (same plan, report and skips)."""
    fplan = start_flow(config, plan, LOG)
    if plan:
        return fplan.to_json(dry_run=True)
    return run_flow(fplan, DirectHooks(), LOG)
