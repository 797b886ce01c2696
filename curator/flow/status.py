"""``curate status PATH``: what a flow's output root (or one step's output dir) holds.

Read from files only, never changing them: the flow's ``flow_plan.json`` (each step's
config: its output dir and checkpoint), each step's completion artifact (the one
completion rule: ``producer.completed_at``), its checkpoint (``<checkpoint_path>/<key>/
<phase>/`` with LMDB files: partitions a rerun skips), its work files and lock, and the
last ``flow_report.json``. Each step is one of:

- ``finished``: its completion artifact has ``producer.completed_at``;
- ``running``: its output directory's lock is held by a live process on this machine;
- ``resumable``: started, not finished, a checkpoint with recorded partitions: a rerun
  of the same command skips them;
- ``failed``: its artifact records an error and there is nothing to resume (a rerun
  starts the step afresh);
- ``started``: work files or outputs but neither a checkpoint nor an artifact;
- ``not_run``: nothing of it on disk.

Then the next command: ``curate flow --config FLOW`` to resume or go on, or the
approval (``curate approve`` / the Prefect UI's form) when that is what is missing; for
a root built one step at a time (no ``flow_plan.json`` and no ``--config``), the steps'
own commands (``curate decontaminate --config CONFIG.yaml``).

``PATH`` may be a URL (``s3://bucket/run``): the root of ``curate flow`` with its
``output_root`` on object storage, or one step's ``output_dir`` there. Its objects are
read (listings, the plan, the reports, the markers, the checkpoint mirror's writer
files), never fetched to disk. Two things are known only on the driver's disk: a step
is ``running`` only when its run holds the lock of its local copy on this machine, and
the last flow run's "has not ended" needs ``flow_report.json`` to be absent (a bucket
gives no modification times to compare; docs/flow.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from curator import models
from curator.checkpoint import METADATA_DIRNAME
from curator.checkpoint_mirror import is_writer_file, resolve_checkpoint
from curator.errors import CuratorError
from curator.flow.plan import MARKER
from curator.io import storage
from curator.locking import LOCK_NAME
from curator.models import FlowPlanFile, FlowReportFile, PlannedStep
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec, offers_at_root

_M = TypeVar("_M", bound=models.ArtifactModel)

PLAN_NAME = "flow_plan.json"
REPORT_NAME = "flow_report.json"
STATES = ("finished", "running", "resumable", "failed", "started", "not_run")


@dataclass
class StepStatus:
    """One step as its files show it."""

    key: str
    step_id: str
    state: str  # one of STATES
    output_dir: str
    enabled: bool | None = None  # in the flow's last plan; None: not a flow, or unknown
    completed_at: str | None = None
    error: dict[str, Any] | None = None  # {error_id, message} of a failed run
    checkpoint: str | None = None  # the checkpoint directory a rerun resumes from
    checkpoint_files: int = 0  # LMDB files recording finished partitions
    flow_report_status: str | None = None  # its status in the last flow_report.json
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RootStatus:
    """An output root (``kind="flow"``) or one step's output dir (``kind="step"``)."""

    path: str
    kind: str
    steps: list[StepStatus]
    flow_status: str | None = None  # the last flow_report.json's status, if any
    flow_error: dict[str, Any] | None = None
    problems: list[dict[str, Any]] = field(default_factory=list)  # the plan's preflight
    waiting_for_approval: bool = False
    #: flow_report.json is older than flow_plan.json (or absent): the last flow run has
    #: not ended (running, paused for approval, or killed)
    run_unfinished: bool = False
    next_commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["steps"] = [s.to_json() for s in self.steps]
        return out


def _read(model: type[_M], path: str | Path) -> _M | None:
    """``path`` (a file, or an object) parsed through ``model``; ``None`` when absent or
    unreadable; a malformed file is ``artifact_invalid`` (exit 2) naming the file and
    the field; the store's own errors are ``object_storage_error``."""
    where = str(path)
    if storage.is_remote(where):
        with storage.store_errors(f"curate status: cannot read {where}", True, url=where):
            try:
                raw = storage.read(where)
            except FileNotFoundError:
                return None
        return models.load(model, raw, where)
    try:
        return models.read(model, path)
    except OSError:
        return None


# -- a path or a URL: the few questions status asks of either -------------------------


def _join(where: str, *names: str) -> str:
    return storage.join(where, *names) if storage.is_remote(where) \
        else str(Path(where).joinpath(*names))


def _is_file(path: str) -> bool:
    with storage.store_errors(f"curate status: cannot look up {path}",
                              storage.is_remote(path), url=path):
        return storage.is_file_at(path)


def _exists(path: str) -> bool:
    """A file or a folder (on a bucket: an object, or a prefix holding objects)."""
    if not storage.is_remote(path):
        return Path(path).exists()
    with storage.store_errors(f"curate status: cannot look up {path}", True, url=path):
        return storage.exists(path)


def _is_dir(path: str) -> bool:
    if not storage.is_remote(path):
        return Path(path).is_dir()
    with storage.store_errors(f"curate status: cannot look up {path}", True, url=path):
        return storage.isdir(path)


def _names(folder: str) -> list[str]:
    """Every file under ``folder`` (hidden ones too), relative, from one listing; a
    local folder's top-level entries."""
    if not storage.is_remote(folder):
        path = Path(folder)
        return [p.name for p in path.iterdir()] if path.is_dir() else []
    with storage.store_errors(f"curate status: cannot list {folder}", True, url=folder):
        return storage.list_files(folder) if storage.exists(folder) else []


def _lock_holder(directory: Path) -> int | None:
    """The pid in ``directory``'s run lock if that process is alive here, else None.

    Read, never taken: taking it, even for a moment, could refuse a run starting now."""
    try:
        pid = int((directory / LOCK_NAME).read_text().strip() or "0")
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, another user's
    return pid


def _checkpoint_files(ckpt: str) -> int:
    """LMDB files recording finished partitions under ``<checkpoint_path>/<key>`` (for
    a URL checkpoint: its mirror's writer objects)."""
    if storage.is_remote(ckpt):
        return sum(1 for rel in _names(ckpt)
                   if is_writer_file(rel) and len(rel.split("/")) == 3)
    try:
        return sum(1 for _ in Path(ckpt).glob(f"*/{METADATA_DIRNAME}/*.mdb"))
    except OSError:
        return 0


def _lock_dir(spec: StepSpec, out: str, checkpoint_path: str | None) -> Path:
    """Where a run of ``spec`` into ``out`` holds its lock on this machine: ``out``, or
    for a URL the local copy a run here writes to (:class:`~curator.steps.base.StepRun`)."""
    if not storage.is_remote(out):
        return Path(out)
    local, _ = resolve_checkpoint(checkpoint_path)
    return storage.local_copy_dir(out, str(local) if local else None, spec.key)


def step_status(spec: StepSpec, config: dict[str, Any]) -> StepStatus:
    """The state of one step whose (effective or planned) config is ``config`` (its
    ``output_dir`` and checkpoint: paths, or URLs)."""
    planned = str(config.get("output_dir") or "")
    out = planned.rstrip("/") if storage.is_remote(planned) else str(Path(planned))
    status = StepStatus(spec.key, spec.step_id, "not_run", out)
    try:
        report = spec.read_result(config)
    except CuratorError as exc:
        if exc.error_id != models.ARTIFACT_INVALID:
            raise
        # a malformed artifact: no completion; the error names the file and field
        report = models.CompletionArtifact(error=models.ErrorBlock(
            error_id=exc.error_id, message=exc.message))
    execution = config.get("execution")
    ckpt_root = execution.get("checkpoint_path") if isinstance(execution, dict) else None
    ckpt = _join(str(ckpt_root), spec.key) if ckpt_root else None
    if ckpt is not None and _is_dir(ckpt):
        status.checkpoint = ckpt
        status.checkpoint_files = _checkpoint_files(ckpt)
    if report is not None and report.is_complete:
        assert report.producer is not None
        status.state = "finished"
        status.completed_at = report.producer.completed_at
        if report.error is not None:
            status.error = report.error.dump()
        return status
    if report is not None:
        status.error = (report.error or models.ErrorBlock(
            error_id="incomplete", message="no completed_at")).dump()
    holder = _lock_holder(_lock_dir(spec, out, str(ckpt_root) if ckpt_root else None))
    if holder is not None:
        status.state = "running"
        status.notes.append(f"its output directory is locked by process {holder}")
    elif status.checkpoint_files:
        status.state = "resumable"
    elif report is not None:
        status.state = "failed"
    elif any(name != MARKER for name in _names(out)):
        status.state = "started"
    return status


def _is_step_dir(path: str) -> StepSpec | None:
    """The step whose output dir ``path`` is: its completion artifact or work files."""
    names = set(_names(path))
    for spec in STEPS:
        config = {"output_dir": path}
        try:
            completion = spec.completion_location(config)
        except (KeyError, TypeError, ValueError):
            completion = None
        if completion is not None and _is_file(completion):
            return spec
        work = f".{spec.key}-work"
        if storage.is_remote(path) and any(n.startswith(work + "/") for n in names):
            return spec
        if not storage.is_remote(path) and Path(path, work).is_dir():
            return spec
    return None


def root_status(path: str | Path, flow_config: str | None = None) -> RootStatus:
    """The status of a flow's output root or of one step's output directory.

    ``flow_config``: the flow's config file, for the next command (else a placeholder).
    Raises ``not_an_output_root`` (exit 2) for anything else. ``path`` may be a URL
    (module doc)."""
    root = str(path)
    if storage.is_remote(root):
        root = root.rstrip("/")
        if not _is_dir(root):
            raise CuratorError("not_an_output_root", f"{root} holds no objects")
    else:
        if not Path(root).is_dir():
            raise CuratorError("not_an_output_root", f"{root} is not a directory")
        root = str(Path(root).resolve())
    plan = _read(FlowPlanFile, _join(root, PLAN_NAME))
    if plan is None:
        subdirs = [s for s in STEPS if _is_dir(_join(root, s.output_subdir))]
        if not subdirs:
            spec = _is_step_dir(root)
            if spec is None:
                raise CuratorError(
                    "not_an_output_root",
                    f"{root} holds neither a flow's {PLAN_NAME} nor a step's output "
                    f"({', '.join(s.output_subdir + '/' for s in STEPS)} under a flow's "
                    "output_root, or a step's completion artifact): give the output_root "
                    "of curate flow or the output_dir of curate <step>")
            return _single_step(spec, root)
    return _flow(root, plan, flow_config or (plan.config_file if plan else None)
                 or "FLOW.yaml", by_step=plan is None and not flow_config)


def _single_step(spec: StepSpec, out: str) -> RootStatus:
    status = step_status(spec, {"output_dir": out})
    work = f".{spec.key}-work"
    if status.state == "started" and any(n == work or n.startswith(work + "/")
                                         for n in _names(out)):
        status.state = "resumable"  # the checkpoint is where its config said: unknown here
        status.notes.append("work files of an unfinished run: rerun the same command with "
                            "the same execution.checkpoint_path to resume")
    result = RootStatus(out, "step", [status])
    cmd = spec.command_name
    if status.state == "finished":
        result.notes.append("finished; nothing to resume")
    elif status.state == "running":
        result.notes.append("a run is in progress; wait for it")
    else:
        result.next_commands.append(f"curate {cmd} --config CONFIG.yaml  (the same config "
                                    "and --set keys: finished partitions are skipped)")
    return result


def _rebased(path: str, written: str, root: str) -> str:
    """``path`` under ``root`` when it lies under ``written`` (where the flow wrote the
    root: a root copied or moved since), else ``path``."""
    if storage.is_remote(root) or storage.is_remote(written):
        rel = storage.relative(path, written)
        return _join(root, rel) if rel is not None and written != root else path
    if Path(written) != Path(root) and Path(path).is_relative_to(written):
        return str(Path(root) / Path(path).relative_to(written))
    return path


def _flow(root: str, plan: FlowPlanFile | None, flow_config: str,
          by_step: bool = False) -> RootStatus:
    planned: dict[str, PlannedStep] = {s.key: s for s in (plan.steps or [])} if plan else {}
    report = _read(FlowReportFile, _join(root, REPORT_NAME))
    reported = {s.step_id: s.status for s in (report.steps or [])} if report else {}
    result = RootStatus(root, "flow", [])
    if plan is None:
        result.notes.append(f"no {PLAN_NAME}: the steps' directories were read "
                            "under their default names")
    for spec in STEPS:
        entry = planned.get(spec.key)
        config = dict((entry.config if entry else None) or {})
        # the root's own subdir first (a moved or copied root), else the planned dir
        out = _join(root, spec.output_subdir)
        if not _exists(out) and config.get("output_dir"):
            out = str(config["output_dir"])
        config["output_dir"] = out
        planned_execution = config.get("execution")
        execution = dict(planned_execution) if isinstance(planned_execution, dict) else {}
        written = str((plan.output_root if plan else None) or root)
        ckpt = str(execution.get("checkpoint_path") or _join(root, "checkpoints"))
        execution["checkpoint_path"] = _rebased(ckpt, written, root)
        config["execution"] = execution
        status = step_status(spec, config)
        status.enabled = entry.enabled if entry else None
        status.flow_report_status = reported.get(spec.step_id)
        if status.state == "finished" and status.flow_report_status == "failed":
            status.notes.append("complete artifacts, but the last flow run reported it "
                                "failed: its verdict failed (read its report)")
        if status.state == "finished" and status.enabled \
                and not _is_file(_join(status.output_dir, MARKER)):
            status.notes.append("artifacts complete but no done-marker: the flow runs it "
                                "again (a failed verdict, or a run outside the flow)")
        result.steps.append(status)
    if report is not None:
        result.flow_status = report.status
        result.flow_error = report.error.dump() if report.error else None
        # on a bucket: no modification times to compare (module doc)
        result.run_unfinished = (plan is not None and not plan.dry_run
                                 and not storage.is_remote(root)
                                 and Path(root, PLAN_NAME).stat().st_mtime_ns
                                 > Path(root, REPORT_NAME).stat().st_mtime_ns)
        if result.run_unfinished:
            result.notes.append(f"{REPORT_NAME} is older than {PLAN_NAME}: the last flow "
                                "run has not ended (still running, paused for approval, or "
                                "killed)")
    elif plan is not None and not plan.dry_run:
        result.run_unfinished = True
    if plan is not None and plan.dry_run:
        result.notes.append(f"{PLAN_NAME} is from curate flow --plan (a dry run)")
    result.problems = [p.dump() for p in (plan.problems or [])] if plan else []
    if by_step:
        _next_by_step(result, root)
    else:
        _next(result, root, plan, report, flow_config)
    return result


def _next_by_step(result: RootStatus, root: str) -> None:
    """A root built one ``curate <step>`` at a time (no ``flow_plan.json``, no flow config
    named): the next commands are the steps' own, by their CLI verb (``curate
    decontaminate``), never a flow config that does not exist."""
    specs = {s.key: s for s in STEPS}
    if any(s.state == "running" for s in result.steps):
        result.next_commands.append("none yet: a step is running (rerun curate status "
                                    "when it ends)")
        return
    again = [s for s in result.steps if s.state in ("resumable", "started", "failed")]
    for s in again:
        how = ("resumes from the checkpoint" if s.state == "resumable"
               else "starts afresh")
        result.next_commands.append(
            f"curate {specs[s.key].command_name} --config CONFIG.yaml  (the config of its "
            f"last run: it {how})")
    if again:
        return
    done = [i for i, s in enumerate(result.steps) if s.state == "finished"]
    later = [s for s in result.steps[done[-1] + 1 if done else 0:] if s.state == "not_run"]
    if not later:
        result.notes.append("every step run here finished")
        return
    spec = specs[later[0].key]
    found = {o.port.name: o for o in offers_at_root(Path(root), None, _layout(root, {}))}
    candidates = found.get("candidates")
    policy = _join(root, "policy", "approved_policy.yaml")
    if spec.applies_policy and candidates is not None and \
            _is_file(str(candidates.value)) and not _is_file(policy):
        result.waiting_for_approval = True
        result.next_commands.append(
            f"curate approve --candidate {candidates.value} --out {policy} --approver NAME "
            "--evidence TEXT --set SIGNAL=VALUE ...")
    result.next_commands.append(
        f"curate {spec.command_name} --config CONFIG.yaml  (the next step; or a flow config "
        f"with output_root: {root} runs every step left: curate flow --config FLOW.yaml)")


def _layout(root: str, configs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``configs`` with every step's ``output_dir`` set (its planned dir, else the
    default ``<root>/<output_subdir>``: a URL root is no local path to join)."""
    placed = {}
    for spec in STEPS:
        config = dict(configs.get(spec.key) or {})
        config.setdefault("output_dir", None)
        config["output_dir"] = config["output_dir"] or _join(root, spec.output_subdir)
        placed[spec.key] = config
    return placed


def _next(result: RootStatus, root: str, plan: FlowPlanFile | None,
          report: FlowReportFile | None, flow_config: str) -> None:
    rerun = f"curate flow --config {flow_config}"
    steps = {s.key: s for s in result.steps}
    if any(s.state == "running" for s in result.steps):
        result.next_commands.append("none yet: a step is running (rerun curate status "
                                    "when it ends)")
        return
    if result.problems:
        ids = ", ".join(str(p["error_id"]) for p in result.problems)
        result.notes.append(f"the last plan was refused by its preflight ({ids}): fix the "
                            "flow config")
        result.next_commands.append(rerun)
        return
    artifacts = (plan.artifacts if plan else None) or {}
    # the candidate and its summary: where the step that provides them put them
    configs = {p.key: p.config or {} for p in (plan.steps or [])} if plan else {}
    found = {o.port.name: o for o in offers_at_root(Path(root), None, _layout(root, configs))}
    offered = found.get("candidates")
    candidates = str(artifacts.get("candidates")
                     or (offered.value if offered else _join(root, "candidate_policies.yaml")))
    summary = found["summary"].value if "summary" in found else (
        storage.parent(candidates) if storage.is_remote(candidates)
        else str(Path(candidates).parent))
    policy = str(artifacts.get("approved_policy")
                 or _join(root, "policy", "approved_policy.yaml"))
    appliers = [spec for spec in STEPS if spec.applies_policy]
    policy_step = steps[appliers[0].key] if appliers else None
    profiled = offered is not None and offered.step in steps \
        and steps[offered.step].state == "finished"
    flow_error = report.error if report is not None else None
    error_id = flow_error.error_id if flow_error is not None else None
    if profiled and _is_file(candidates) and not _is_file(policy) \
            and policy_step is not None and policy_step.state != "finished":
        result.waiting_for_approval = True
        if result.run_unfinished and policy_step.enabled:
            result.notes.append("if the flow runs with approve.interactive, it is paused: "
                                "submit the form of its paused run in the Prefect UI")
        result.notes.append(f"approval pending: read {summary}, then choose thresholds")
        result.next_commands.append(
            f"curate approve --candidate {candidates} --out {policy} --approver NAME "
            "--evidence TEXT --set SIGNAL=VALUE ...")
        result.next_commands.append(
            f"{rerun}  (profile off, steps.{policy_step.key}.enabled: true and "
            f"steps.{policy_step.key}.heuristic_filters.approved_policy: {policy}; or, "
            "instead of curate approve, an approve block with the thresholds)")
        return
    unfinished = [s for s in result.steps if s.enabled and s.state != "finished"]
    if unfinished or (error_id and report is not None):
        resumes = [s.key for s in unfinished if s.state == "resumable"]
        runs = [s.key for s in unfinished if s.state != "resumable"]
        what = "; ".join(x for x in (
            f"{', '.join(resumes)} resume{'s' if len(resumes) == 1 else ''} from "
            "the checkpoint" if resumes else "",
            f"{', '.join(runs)} run{'s' if len(runs) == 1 else ''}" if runs else "") if x)
        if error_id:
            message = flow_error.message if flow_error is not None else ""
            result.notes.append(f"the last flow run failed: [{error_id}] "
                                f"{message[:300]}{'...' if len(message) > 300 else ''}")
        result.next_commands.append(f"{rerun}  (finished steps are skipped"
                                    + (f"; {what})" if what else ")"))
        return
    if report is not None and report.status == "ok":
        result.notes.append("the flow finished: every enabled step is done")
        page = _join(root, "report.html")
        if _is_file(page):
            result.notes.append(f"the run on one page: {page}")
        later = [s.key for s in result.steps if not s.enabled and s.state == "not_run"]
        if later:
            result.next_commands.append(f"{rerun}  (after enabling any of: "
                                        f"{', '.join(later)})")
        return
    result.next_commands.append(rerun)
