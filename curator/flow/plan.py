"""The flow's plan: derived paths, step configs, preflight, and which steps are done.

``plan_flow(config)`` turns a flow config into one config per step with every path
derived under ``output_root`` (an authored step key overrides the derived value), and
checks everything that can be checked before a step runs, reporting every problem at
once. ``step_is_done`` decides, on a rerun, whether a step's artifacts are complete and
were made by the same step config, so the flow can skip it.

An ``output_root`` on object storage (``s3://...``) keeps every step's output, its
done-marker and the checkpoint under the URL, and the flow's own files in a local copy
of the root that goes up as it is written (:mod:`curator.flow.remote`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from curator import models
from curator.artifacts import canonical_digest, file_digest
from curator.config import (
    ConfigBlock,
    ExecutionConfig,
    Int64,
    _deep_merge,
    config_problem,
    validate_config,
)
from curator.corpus.formats import JSONL_NAMES
from curator.errors import CuratorError
from curator.flow import remote
from curator.io import shared, storage
from curator.io.partitioning import resolve_input_files
from curator.models import FlowPlanFile, StepMarker
from curator.steps.registry import BY_KEY, STEPS
from curator.steps.spec import CorpusView, FlowContext, Problem, StepSpec, offers

MARKER = ".curate_flow_step.json"


class Corpus(ConfigBlock):
    input: str | list[str] | None = None
    text_field: str = "text"
    id_field: str | None = None
    id_fields: list[str] | None = None
    id_prefix: str | None = None
    source_field: str | None = None
    source_value: str | None = None
    metadata_fields: list[str] = Field(default_factory=list)
    language: str | None = None
    langpack_dir: str | None = None


class Approve(ConfigBlock):
    """How the filter's policy is approved inside the flow (see docs/flow.md)."""

    from_: str | None = Field(None, alias="from")
    thresholds: dict[str, float | list[float]] | list[dict[str, Any]] = Field(
        default_factory=dict, description="``{signal: value | [lo, hi]}``, or the approved "
        "policy's own list form ``[{signal, min, max}]`` (docs/flow.md)")
    approver: str = ""
    evidence: str = ""
    method: str = "manual"
    date: str | None = None
    verify_corpus: bool = True
    interactive: bool = False
    timeout_seconds: Int64 = Field(3600, gt=0)


class FlowConfig(ConfigBlock):
    corpus: Corpus = Corpus()
    output_root: str = "./output/curate"
    steps: dict[str, dict[str, Any]] = Field(default_factory=dict)
    approve: Approve | None = None
    execution: ExecutionConfig = ExecutionConfig()


@dataclass
class StepPlan:
    spec: StepSpec
    enabled: bool
    config: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    extra: str | None = None  # what else the result depends on (input files, policy bytes)
    context: FlowContext | None = None
    #: (the root's local copy, its URL) for a root on object storage: what the config
    #: hash names instead of the local copy (a driver with another scratch dir agrees)
    root_map: tuple[str, str] | None = None

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def step_id(self) -> str:
        return self.spec.step_id

    @property
    def output_dir(self) -> str | None:
        return self.config.get("output_dir")

    def config_hash(self) -> str:
        body = self.stable({k: v for k, v in self.config.items() if k != "execution"})
        return canonical_digest({"config": body, "extra": self.extra})

    def stable(self, value: Any) -> Any:
        """``value`` with the root's local copy named by its URL (:attr:`root_map`)."""
        return remote.rebase(value, *self.root_map) if self.root_map else value


@dataclass
class FlowPlan:
    #: where the flow writes its own files: the output root, or for a root on object
    #: storage its local copy (:func:`curator.flow.remote.root_copy`)
    root: Path
    steps: list[StepPlan]
    approve: Approve | None
    artifacts: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    config_file: str | None = None  # the flow config's path, when read from a file
    root_url: str | None = None  # the output root when it is a URL (``s3://b/run``)

    @property
    def area(self) -> shared.SharedArea | None:
        """The root's local copy and its URL: active while the flow writes its files,
        each goes up as it is written (``None`` for a local root)."""
        return shared.SharedArea(str(self.root), self.root_url) if self.root_url else None

    @property
    def output_root(self) -> str:
        """The output root as the flow's files name it: the URL, or the local path."""
        return self.root_url or str(self.root)

    def published(self, data: Any) -> Any:
        """``data`` with the root's local copy named by the URL (a local root: as is)."""
        return remote.rebase(data, str(self.root), self.root_url) if self.root_url else data

    def step(self, key: str) -> StepPlan:
        return next(s for s in self.steps if s.key == key)

    def locate(self, port: str) -> Any:
        """Where the port ``port`` is, as the last step that provides it places it."""
        found = offers([(s.spec, s.config, s.enabled) for s in self.steps])
        return next((o.value for o in reversed(found) if o.port.name == port), None)

    def to_json(self, dry_run: bool) -> dict[str, Any]:
        """``flow_plan.json`` (:class:`curator.models.FlowPlanFile`)."""
        return models.build(FlowPlanFile, self.published({
            "schema_version": 1, "output_root": self.output_root, "dry_run": dry_run,
            "config_file": self.config_file,
            "artifacts": self.artifacts,
            "steps": [{"key": s.key, "step_id": s.step_id, "enabled": s.enabled,
                       "notes": s.notes, "config": s.config} for s in self.steps],
            "warnings": self.warnings,
            "problems": [{"error_id": i, "message": m} for i, m in self.problems],
        }))

    def raise_problems(self) -> None:
        if self.problems:
            raise CuratorError(
                "flow_preflight_failed",
                f"{len(self.problems)} problems: "
                + "; ".join(f"[{i}] {m}" for i, m in self.problems),
                problems=[{"error_id": i, "message": m} for i, m in self.problems],
            )


def load_flow_config(data: dict[str, Any]) -> FlowConfig:
    try:
        return FlowConfig.model_validate(data)
    except ValidationError as exc:
        raise config_problem(FlowConfig, exc) from exc


def _policy_signals(approve: Approve | None, steps: list[StepPlan]
                    ) -> tuple[str, ...] | None:
    """The signals the applied policy thresholds, if known while planning: the approve
    block's thresholds, else the policy file a step that applies one names."""
    from curator.flow.approval import thresholds_from

    if approve is not None and approve.thresholds:
        try:
            return tuple(sorted(thresholds_from(approve.thresholds)))
        except CuratorError:
            return None  # reported by the approval's own checks
    for step in steps:
        if not step.spec.applies_policy:
            continue
        for path in step.spec.depends_on(step.config):
            try:
                doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
                return tuple(sorted(str(t["signal"]) for t in doc["thresholds"]))
            except (OSError, yaml.YAMLError, KeyError, TypeError):
                return None
    return None


def plan_flow(config: FlowConfig) -> FlowPlan:
    """Derive every step's config and check what can be checked now (all at once).

    A URL ``output_root`` (:mod:`curator.flow.remote`): every step's output dir, the
    artifacts and the default checkpoint are URLs under it; the approved policy is a
    file of the root's local copy, fetched from the URL first (a new driver's disk is
    empty)."""
    # only what the flow config sets: CURATE_EXECUTION__* fill the rest, as for a step
    execution = config.execution.model_dump(exclude_unset=True)
    root_url = config.output_root.rstrip("/") if storage.is_remote(config.output_root) \
        else None
    if root_url is not None:
        execution.setdefault("checkpoint_path", storage.join(root_url, "checkpoints"))
        root = remote.root_copy(root_url, execution["checkpoint_path"])

        def under(*names: str) -> str:
            return storage.join(root_url, *names)
    else:
        root = Path(config.output_root).resolve()

        def under(*names: str) -> str:
            return str(root.joinpath(*names))
    paths = {name: under(spec.output_subdir, rel).rstrip("/.")
             for spec in STEPS for name, rel in spec.artifacts.items()}
    paths["approved_policy"] = str(root / "policy" / "approved_policy.yaml")
    paths["checkpoints"] = under("checkpoints")
    execution.setdefault("checkpoint_path", paths["checkpoints"])
    root_map = (str(root), root_url) if root_url is not None else None
    if root_url is not None and config.approve is not None:
        # read by the done-checks (its bytes) and by the approval (its date)
        remote.pull(shared.SharedArea(str(root), root_url), Path(paths["approved_policy"]))
    problems: list[Problem] = []
    warnings: list[str] = []
    for key in config.steps:
        if key not in BY_KEY:
            problems.append(("unknown_step", f"steps.{key}: known steps are "
                             f"{[s.key for s in STEPS]}"))
    enabled = {k for k, v in config.steps.items() if v.get("enabled", False)}
    if not enabled:
        problems.append(("no_steps_enabled", "no step has enabled: true"))
    corpus = config.corpus
    raw_files = _check_input(corpus, problems)

    reads = CorpusView(glob=corpus.input, text_field=corpus.text_field,
                       id_field=corpus.id_field, source_field=corpus.source_field,
                       metadata_fields=tuple(corpus.metadata_fields))
    approved = paths["approved_policy"] if config.approve is not None else None
    steps: list[StepPlan] = []
    for spec in STEPS:
        ctx = FlowContext(root=root, corpus=corpus, reads=reads, approved_policy=approved,
                          policy_signals=_policy_signals(config.approve, steps),
                          output_dir=under(spec.output_subdir),
                          offers=offers([(s.spec, s.config, s.enabled) for s in steps]))
        authored = {k: v for k, v in config.steps.get(spec.key, {}).items() if k != "enabled"}
        derived = {"output_dir": ctx.output_dir, **_drop_none(spec.derive(ctx))}
        cfg = _deep_merge(derived, authored)
        cfg["execution"] = {**execution, **(authored.get("execution") or {})}
        step = StepPlan(spec, spec.key in enabled, cfg, context=ctx, root_map=root_map)
        steps.append(step)
        if step.enabled:
            if reads.glob == corpus.input and not spec.reads_parquet and raw_files and \
                    not any(f.lower().endswith(JSONL_NAMES) for f in raw_files):
                problems.append(("input_has_nothing_readable",
                                 f"{spec.step_id} reads corpus.input, which holds no JSONL "
                                 "files: enable ingest"))
                raw_files = []  # said once, for the first step that reads it
            produced = spec.produces(cfg)
            if produced is not None:
                reads = produced
    plan = FlowPlan(root, steps, config.approve, paths, warnings, problems,
                    root_url=root_url)
    _check_approval(plan, config, enabled, problems, warnings)
    for step in steps:
        if step.enabled:
            problems.extend(_preflight(step, warnings))
        elif config.steps.get(step.key):  # a disabled block: its keys must still exist
            problems.extend(p for p in _preflight(step, warnings, keys_only=True))
    return plan


def _check_input(corpus: Corpus, problems: list[Problem]) -> list[str]:
    if corpus.input is None:
        problems.append(("corpus_input_missing", "corpus.input is required"))
        return []
    try:
        files = resolve_input_files(corpus.input)
        missing = ""
    except CuratorError as exc:  # a path named outright that does not exist
        files, missing = [], f" ({exc.message})"
    if not files:
        problems.append((
            "input_matched_no_files",
            f"corpus.input {corpus.input!r} matches no files{missing} (relative paths "
            f"are resolved from the working directory {Path.cwd()})",
        ))
    return files


def _preflight(step: StepPlan, warnings: list[str], keys_only: bool = False) -> list[Problem]:
    """The step's own checks: its config model (unknown keys, types), then its preflight
    (``keys_only``: unknown keys only, for a disabled step's block)."""
    try:
        model = validate_config(step.spec.config, step.config, where=f"steps.{step.key}.")
    except CuratorError as exc:
        if keys_only and exc.error_id != "unknown_config_key":
            return []
        return [(exc.error_id, exc.message)]
    if keys_only:
        return []
    assert step.context is not None
    step.context.warnings = warnings
    set_extra(step)  # a finished step's marker hashes its inputs too
    step.context.done = step_is_done(step)
    return model.preflight(flow=step.context)


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _check_approval(plan: FlowPlan, config: FlowConfig, enabled: set[str],
                    problems: list[Problem], warnings: list[str]) -> None:
    """The approve block: what it needs, and the step that applies its policy."""
    approve = config.approve
    if approve is None:
        return
    appliers = [s for s in plan.steps if s.spec.applies_policy]
    if not any(s.enabled for s in appliers):
        warnings.append("approve is set but no step that applies a policy is on: the policy "
                        "is written, not applied")
    for step in appliers:
        authored = (config.steps.get(step.key) or {}).get("heuristic_filters") or {}
        if authored.get("approved_policy"):
            problems.append(("conflicting_approved_policy",
                             f"approve is set and steps.{step.key}.heuristic_filters."
                             "approved_policy names a policy too: choose one"))
    candidate = approve.from_ or plan.artifacts["candidates"]
    if not approve.interactive:
        if "profile" in enabled:
            problems.append((
                "profile_enabled_during_approval",
                "approve.thresholds needs the profile a person has read: run the flow "
                "once with profile on and approve off, then with profile off and approve "
                "set (or use approve.interactive)",
            ))
        elif not _is_file(candidate):
            problems.append(("approve_before_profile",
                             f"the candidate {candidate} does not exist: profile first"))
        if not approve.thresholds:
            problems.append(("policy_thresholds_empty", "approve.thresholds is empty"))
        if not approve.approver.strip():
            problems.append(("approval_missing_approver", "approve.approver is empty"))
        if not approve.evidence.strip():
            problems.append(("approval_missing_evidence", "approve.evidence is empty"))
    elif "profile" not in enabled and not _is_file(candidate):
        problems.append(("approve_before_profile",
                         "interactive approval needs a profile: enable steps.profile"))


def _is_file(path: str) -> bool:
    """Whether a local path or an object's URL names a file (the store's own errors:
    ``object_storage_error``)."""
    with storage.store_errors(f"cannot look up {path}", storage.is_remote(path), url=path):
        return storage.is_file_at(path)


def set_extra(step: StepPlan) -> None:
    """What a step's result depends on besides its config: the files it reads (path,
    size and version: a raw file that arrived later, or shards an upstream step rewrote,
    make it not done) and what the files its spec names hold (the filter's policy).

    A local file's version is its mtime; an object's (``s3://``, any fsspec URL) is its
    ETag, else its modification time (:func:`curator.io.storage.version`, from the
    listing just made): a rewritten input object makes the step run again. A file
    ``depends_on`` names is hashed when local; an object is its size and ETag (read
    once by the step itself, not downloaded again to plan). Names under a URL root's
    local copy are recorded by their URL (:meth:`StepPlan.stable`)."""
    source = step.config.get(step.spec.input_key)
    try:
        files = resolve_input_files(source) if source else []
    except CuratorError:
        files = []
    out = step.output_dir
    inputs = []
    for name in files:
        if out and storage.within(name, out):
            continue  # the step's own output is not its input
        size, version = _version(name)
        if size is None:
            continue  # gone since it was listed
        inputs.append([name, size, version])
    depends = {name: (list(_version(name)) if storage.is_remote(name)
                      else file_digest(name) if Path(name).is_file() else None)
               for name in step.spec.depends_on(step.config)}
    step.extra = canonical_digest(step.stable({"inputs": inputs, "depends_on": depends}))


def _version(name: str) -> tuple[int | None, str | int | None]:
    """:func:`curator.io.storage.version`, the store's errors (credentials, network)
    reported as ``object_storage_error``."""
    with storage.store_errors(f"cannot look up {name}", storage.is_remote(name), url=name):
        return storage.version(name)


def step_is_done(step: StepPlan) -> bool:
    """Whether a step's artifacts are complete and were made by this step config (its
    marker and completion artifact: files, or objects under a URL ``output_dir``; the
    store's own errors are ``object_storage_error``, never "not done")."""
    out = step.output_dir
    if not out:
        return False
    try:
        if storage.is_remote(out):
            where = storage.join(out, MARKER)
            raw = remote.read_bytes(where)
            if raw is None:
                return False
            recorded = models.load(StepMarker, raw, where)
        else:
            recorded = models.read(StepMarker, Path(out) / MARKER)
    except CuratorError as exc:
        if exc.error_id != models.ARTIFACT_INVALID:  # the store's: not an answer
            raise
        return False  # malformed: not done
    except OSError:  # absent or unreadable: not done
        return False
    if recorded.config_hash != step.config_hash():
        return False
    return step.spec.is_complete(step.config)


def clear_done(step: StepPlan) -> None:
    """Forget that ``step`` finished: it is about to run again, and a run that ends in an
    error (a verdict's too, whose artifacts are complete) must not leave the earlier
    run's marker beside its new artifacts."""
    out = step.output_dir
    if not out:
        return
    if storage.is_remote(out):
        remote.remove(storage.join(out, MARKER))
    else:
        (Path(out) / MARKER).unlink(missing_ok=True)


def mark_done(step: StepPlan, completed_at: str) -> None:
    """Record that ``step`` finished with this config (read by :func:`step_is_done`):
    a file, or one put of an object beside a URL ``output_dir``'s outputs."""
    from curator.io.writers import write_atomic

    text = json.dumps(models.build(
        StepMarker, {"step_id": step.step_id, "config_hash": step.config_hash(),
                     "completed_at": completed_at}), indent=2, sort_keys=True) + "\n"
    out = step.output_dir or "."
    if storage.is_remote(out):
        remote.write_bytes(storage.join(out, MARKER), text.encode("utf-8"))
    else:
        write_atomic(Path(out) / MARKER, text)
