"""The flow's plan: derived paths, step configs, preflight, and which steps are done.

``plan_flow(config)`` turns a flow config into one config per step with every path
derived under ``output_root`` (an authored step key overrides the derived value), and
checks everything that can be checked before a step runs, reporting every problem at
once. ``step_is_done`` decides, on a rerun, whether a step's artifacts are complete and
were made by the same step config, so the flow can skip it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from curator.artifacts import canonical_digest, file_digest
from curator.config import ExecutionConfig
from curator.errors import CuratorError
from curator.io.partitioning import COMPRESSED_SUFFIXES, JSONL_EXTENSIONS, resolve_input_files

ORDER = ("ingest", "profile", "filter", "audit", "decontamination", "subset")
AVAILABLE = ("ingest", "profile", "filter")
STEP_IDS = {name: f"curate/{name}" for name in ORDER}
MARKER = ".curate_flow_step.json"
#: what profile and filter read without ingest: JSONL, also compressed
_JSONL_NAMES = tuple(e + c for e in JSONL_EXTENSIONS for c in ("", *COMPRESSED_SUFFIXES))


class Corpus(BaseModel):
    model_config = ConfigDict(extra="forbid")

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


class Approve(BaseModel):
    """How the filter's policy is approved inside the flow (see docs/flow.md)."""

    model_config = ConfigDict(extra="forbid")

    from_: str | None = Field(None, alias="from")
    thresholds: dict[str, float | list[float]] = Field(default_factory=dict)
    approver: str = ""
    evidence: str = ""
    method: str = "manual"
    date: str | None = None
    verify_corpus: bool = True
    interactive: bool = False
    timeout_seconds: int = Field(3600, gt=0)


class FlowConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    corpus: Corpus = Corpus()
    output_root: str = "./output/curate"
    steps: dict[str, dict[str, Any]] = Field(default_factory=dict)
    approve: Approve | None = None
    execution: ExecutionConfig = ExecutionConfig()


@dataclass
class StepPlan:
    key: str
    enabled: bool
    config: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    extra: str | None = None  # what else the result depends on (the filter's policy bytes)

    @property
    def step_id(self) -> str:
        return STEP_IDS[self.key]

    @property
    def output_dir(self) -> str | None:
        return self.config.get("output_dir")

    def config_hash(self) -> str:
        body = {k: v for k, v in self.config.items() if k != "execution"}
        return canonical_digest({"config": body, "extra": self.extra})


@dataclass
class FlowPlan:
    root: Path
    steps: list[StepPlan]
    approve: Approve | None
    artifacts: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def step(self, key: str) -> StepPlan:
        return next(s for s in self.steps if s.key == key)

    def to_json(self, dry_run: bool) -> dict[str, Any]:
        return {
            "schema_version": 1, "output_root": str(self.root), "dry_run": dry_run,
            "artifacts": self.artifacts,
            "steps": [{"key": s.key, "step_id": s.step_id, "enabled": s.enabled,
                       "notes": s.notes, "config": s.config} for s in self.steps],
            "warnings": self.warnings,
            "problems": [{"error_id": i, "message": m} for i, m in self.problems],
        }

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
        raise CuratorError("config_error", f"invalid flow config: {exc}") from exc


def plan_flow(config: FlowConfig) -> FlowPlan:
    """Derive every step's config and check what can be checked now (all at once)."""
    root = Path(config.output_root).resolve()
    paths = {
        "prepared": str(root / "ingested"),
        "profile": str(root / "profile"),
        "candidates": str(root / "profile" / "candidate_policies.yaml"),
        "profile_report": str(root / "profile" / "profile_report.json"),
        "approved_policy": str(root / "policy" / "approved_policy.yaml"),
        "corpus": str(root / "filtered_jsonl"),
        "checkpoints": str(root / "checkpoints"),
    }
    problems: list[tuple[str, str]] = []
    warnings: list[str] = []
    for key in config.steps:
        if key not in ORDER:
            problems.append(("unknown_step", f"steps.{key}: known steps are {list(ORDER)}"))
    enabled = {k for k, v in config.steps.items() if k in ORDER and v.get("enabled", False)}
    for key in sorted(enabled - set(AVAILABLE)):
        problems.append(("step_not_available",
                         f"steps.{key} is not built yet in this version (available: "
                         f"{list(AVAILABLE)})"))
    if not enabled:
        problems.append(("no_steps_enabled", "no step has enabled: true"))
    corpus = config.corpus
    execution = config.execution.model_dump()
    if execution.get("checkpoint_path") is None:
        execution["checkpoint_path"] = paths["checkpoints"]
    ingest_on = "ingest" in enabled

    if corpus.input is None:
        problems.append(("corpus_input_missing", "corpus.input is required"))
    else:
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
        elif not ingest_on and not any(f.lower().endswith(_JSONL_NAMES) for f in files):
            problems.append(("input_has_nothing_readable",
                             "with ingest off, corpus.input must hold JSONL files"))

    # step configs: derived values, then the authored keys on top
    downstream = {"text_field": "text", "id_field": "id", "source_field": "source"} \
        if ingest_on else {"text_field": corpus.text_field, "id_field": corpus.id_field,
                           "source_field": corpus.source_field}
    read_glob = (f"{paths['prepared']}/part_*.jsonl" if ingest_on else corpus.input)
    derived: dict[str, dict[str, Any]] = {
        "ingest": _drop_none({
            "input": corpus.input, "output_dir": paths["prepared"],
            "text_field": corpus.text_field, "id_from": corpus.id_field,
            "id_fields": corpus.id_fields, "id_prefix": corpus.id_prefix,
            "source_from": corpus.source_field, "source": corpus.source_value,
            "keep_fields": corpus.metadata_fields or None,
        }),
        "profile": _drop_none({
            "input_glob": read_glob, "output_dir": paths["profile"],
            "language": corpus.language, "langpack_dir": corpus.langpack_dir, **downstream,
        }),
        "filter": _drop_none({
            "input_glob": read_glob, "output_dir": paths["corpus"], **downstream,
            "metadata_fields": [] if ingest_on else corpus.metadata_fields,
            "emit_manifest": "run_manifest.json", "emit_ledger": "curation_ledger.json",
        }),
    }
    steps: list[StepPlan] = []
    for key in ORDER:
        authored = {k: v for k, v in config.steps.get(key, {}).items() if k != "enabled"}
        cfg = {**derived.get(key, {}), **authored}
        if key in derived:
            cfg["execution"] = {**execution, **(authored.get("execution") or {})}
        steps.append(StepPlan(key, key in enabled, cfg))
    plan = FlowPlan(root, steps, config.approve, paths, warnings, problems)
    _check_steps(plan, config, enabled, problems, warnings)
    return plan


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _check_steps(plan: FlowPlan, config: FlowConfig, enabled: set[str],
                 problems: list[tuple[str, str]], warnings: list[str]) -> None:
    corpus, approve = config.corpus, config.approve
    profile, filt = plan.step("profile"), plan.step("filter")
    if "profile" in enabled:
        if not profile.config.get("langpack_dir") or \
                str(profile.config["langpack_dir"]).lower() == "bundled":
            problems.append(("missing_langpack_dir",
                             "profile is on: set corpus.langpack_dir (e.g. langpacks)"))
        if not profile.config.get("language"):
            problems.append(("missing_language", "profile is on: set corpus.language"))
    hf = dict(filt.config.get("heuristic_filters") or {})
    if approve is not None:
        if "filter" not in enabled:
            warnings.append("approve is set but the filter is off: the policy is written, "
                            "not applied")
        if hf.get("approved_policy"):
            problems.append(("conflicting_approved_policy",
                             "approve is set and steps.filter.heuristic_filters."
                             "approved_policy names a policy too: choose one"))
        if not approve.interactive:
            candidate = approve.from_ or plan.artifacts["candidates"]
            if "profile" in enabled:
                problems.append((
                    "profile_enabled_during_approval",
                    "approve.thresholds needs the profile a person has read: run the flow "
                    "once with profile on and approve off, then with profile off and approve "
                    "set (or use approve.interactive)",
                ))
            elif not Path(candidate).is_file():
                problems.append(("approve_before_profile",
                                 f"the candidate {candidate} does not exist: profile first"))
            if not approve.thresholds:
                problems.append(("policy_thresholds_empty", "approve.thresholds is empty"))
            if not approve.approver.strip():
                problems.append(("approval_missing_approver", "approve.approver is empty"))
            if not approve.evidence.strip():
                problems.append(("approval_missing_evidence", "approve.evidence is empty"))
        elif "profile" not in enabled and \
                not Path(approve.from_ or plan.artifacts["candidates"]).is_file():
            problems.append(("approve_before_profile",
                             "interactive approval needs a profile: enable steps.profile"))
        hf.setdefault("approved_policy", plan.artifacts["approved_policy"])
    if "filter" in enabled:
        if hf.get("approved_policy") and not hf.get("langpack_dir"):
            if corpus.langpack_dir:
                hf["langpack_dir"] = corpus.langpack_dir
            else:
                problems.append(("missing_langpack_dir",
                                 "a policy is applied: set corpus.langpack_dir"))
        if hf:
            filt.config["heuristic_filters"] = hf
        q = filt.config.get("quality_filters") or {}
        if ("min_words" in q) != ("max_words" in q):
            problems.append(("incomplete_word_filter",
                             "steps.filter.quality_filters: min_words and max_words go "
                             "together"))
        elif "min_words" in q and hf.get("approved_policy") and hf.get("langpack_dir") \
                and corpus.language and _lacks_words(hf["langpack_dir"], corpus.language):
            problems.append(("incomplete_word_filter",
                             "steps.filter.quality_filters: min_words/max_words need word "
                             f"segmentation, which pack {corpus.language!r} in "
                             f"{hf['langpack_dir']} does not declare"))
        if not hf.get("approved_policy"):
            warnings.append("the filter has no policy: only the language and word gates apply")
        elif approve is None and not Path(hf["approved_policy"]).is_file():
            problems.append(("missing_upstream_artifact",
                             f"steps.filter.heuristic_filters.approved_policy "
                             f"{hf['approved_policy']!r} does not exist and no approve block "
                             "writes it"))
        codes = filt.config.get("language_codes", ["en"])
        if corpus.language and codes and not _shares_subtag(codes, corpus.language):
            warnings.append(f"steps.filter.language_codes {codes} share no subtag with "
                            f"corpus.language {corpus.language!r}: the language gate may "
                            "remove every document")
        out = Path(filt.config["output_dir"])
        set_extra(filt)  # a finished filter's marker hashes its inputs and policy too
        done = step_is_done(filt)
        if out.is_dir() and any(out.glob("*.jsonl")) and not done and \
                not _resumable(filt):
            problems.append(("stale_filter_output",
                             f"{out} already holds shards from another run: remove them or "
                             "choose another output_root"))
    for key in ("profile", "filter"):
        if key in enabled and "ingest" not in enabled and plan.step(key).config.get(
                "input_glob") is None:
            problems.append(("missing_upstream_artifact",
                             f"{key} needs corpus.input or ingest"))


def _shares_subtag(codes: list[str], language: str) -> bool:
    """Whether a gate code and the pack's tag share a subtag (``en`` ~ ``en-GB``/``en_Latn``)."""
    def subtags(tag: str) -> set[str]:
        return {t for t in tag.lower().replace("_", "-").split("-") if t}

    wanted = subtags(language)
    return any(subtags(c) & wanted for c in codes)


def _lacks_words(langpack_dir: str, language: str) -> bool:
    """Whether the pack the filter will load declares no word segmentation (a pack that
    does not load is left for the step to report)."""
    from curator.langpack.loader import load_langpack

    try:
        pack = load_langpack(langpack_dir, language)
    except CuratorError:
        return False
    return not pack.supports("word_segmentation")


def set_extra(step: StepPlan) -> None:
    """What a step's result depends on besides its config: the files it reads (path,
    size, mtime: a raw file that arrived later, or shards an upstream step rewrote, make
    it not done) and, for the filter, its policy's bytes."""
    source = step.config.get("input" if step.key == "ingest" else "input_glob")
    try:
        files = resolve_input_files(source) if source else []
    except CuratorError:
        files = []
    out = Path(step.output_dir).resolve() if step.output_dir else None
    inputs = []
    for name in files:
        path = Path(name)
        if out is not None and path.is_relative_to(out):
            continue  # the step's own output is not its input
        try:
            st = path.stat()
        except OSError:
            continue
        inputs.append([name, st.st_size, st.st_mtime_ns])
    extra: dict[str, Any] = {"inputs": inputs}
    if step.key == "filter":
        policy = (step.config.get("heuristic_filters") or {}).get("approved_policy")
        extra["policy"] = file_digest(policy) if policy and Path(policy).is_file() else None
    step.extra = canonical_digest(extra)


def _resumable(step: StepPlan) -> bool:
    ckpt = (step.config.get("execution") or {}).get("checkpoint_path")
    return bool(ckpt) and any(Path(ckpt, step.key).glob("*/*/*.mdb"))


def step_is_done(step: StepPlan) -> bool:
    """Whether a step's artifacts are complete and were made by this step config."""
    out = step.output_dir
    if not out:
        return False
    marker = Path(out) / MARKER
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if recorded.get("config_hash") != step.config_hash():
        return False
    return _artifact_complete(step)


def _artifact_complete(step: StepPlan) -> bool:
    out = Path(step.output_dir or "")
    try:
        if step.key == "ingest":
            return bool(json.loads((out / "ingest_report.json").read_text())
                        .get("completed_normally"))
        if step.key == "profile":
            return "producer" in json.loads((out / "profile_report.json").read_text())
        if step.key == "filter":
            manifest = step.config.get("emit_manifest") or "run_manifest.json"
            return "completed_at" in json.loads((out / manifest).read_text())["producer"]
    except (OSError, ValueError, KeyError):
        return False
    return False


def mark_done(step: StepPlan, completed_at: str) -> None:
    """Record that ``step`` finished with this config (read by :func:`step_is_done`)."""
    from curator.io.writers import write_atomic

    write_atomic(Path(step.output_dir or ".") / MARKER, json.dumps(
        {"step_id": step.step_id, "config_hash": step.config_hash(),
         "completed_at": completed_at}, indent=2, sort_keys=True) + "\n")
