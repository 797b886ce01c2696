"""curate subset: nested training tiers by token budget (spec section 11; docs/subset.md).

One straight line:

1. refuse before anything is read: no id field, budgets or length bands that are not
   positive and increasing, a tokenizer without its revision (or whose vocabulary is
   not that revision), an input that matches nothing or only Parquet;
2. count (engine pass, one unit per source partition): every document's units, from
   the token cache when its id and text digest are there; ids hashed into the global
   order; per-partition arrays in the work directory;
3. plan, on the exchange (:mod:`curator.subset.ranges`): the count pass sends every
   document to the range of the global order its hash falls in; a ``rank`` unit per
   range sorts it, finds repeated ids and names strata; the driver adds up the table
   strata x ranges and computes the D'Hondt quotas and, per tier and stratum, the range
   where its prefix ends; a ``select`` unit per range gives each document its first
   tier (resolving the cut where one ends there) and writes the range's id file;
   ``plan.json`` (a summary listing those files) written before any tier;
4. write (engine pass): each partition's lines copied into the tiers they belong to,
   ``budget_<N>_<unit>/part_<i>.jsonl``;
5. verify: each writer reads its shards back; they must hold the planned ids and nest
   (``tier_write_mismatch`` removes every tier); ``subset_report.json`` last.
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
from pathlib import Path
from typing import Any

import orjson
from pydantic import Field, field_validator

from curator import models
from curator.audit.subset import check_subset
from curator.config import (
    ByteSizeSpelling,
    ConfigBlock,
    CorpusStepConfig,
    Int64,
    path_problem,
)
from curator.corpus.formats import (
    JSONL_EXTENSIONS,
    PARQUET_EXTENSIONS,
    PARQUET_NAMES,
)
from curator.corpus.records import RecordSpec
from curator.errors import CuratorError
from curator.exchange import BucketPartitioning, Exchange, choose_buckets
from curator.execution import Executor
from curator.io import shared, storage
from curator.io.parquet_export import shard_order
from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.io.writers import write_atomic
from curator.models import SubsetReport
from curator.steps.base import ProgressHook, StepRun, partition_ids
from curator.steps.funnel import Funnel, FunnelRow, Loss, MissingCount, need, skips
from curator.steps.spec import (
    FlowContext,
    Phase,
    Port,
    Problem,
    StepSpec,
    in_output,
    without_sidecars,
)
from curator.subset import deciles
from curator.subset.counting import BUNDLED, TokenizerId, identify
from curator.subset.planning import (
    PlanTotals,
    finish_plan,
    plan_table,
)
from curator.subset.ranges import (
    IDS_DIR,
    RankStage,
    SelectStage,
    found_cuts,
    gather,
    ids_file,
    refuse_repeated,
)
from curator.subset.report import (
    PICTURE_NAME,
    PLAN_SCHEMA_VERSION,
    SCHEMA_VERSION,
    interpretation,
    plan_json,
    render,
    tier_rows,
    write_picture,
)
from curator.subset.stages import (
    ALL,
    CountStage,
    WriteStage,
    tier_dir,
    written_file,
)

REPORT_NAME = "subset_report.json"
PLAN_NAME = "plan.json"
DEFAULT_BUDGETS = [100_000_000, 500_000_000, 2_000_000_000]
DEFAULT_BANDS = [128, 512, 2048, 8192]
#: the keys that may name an fsspec URL (docs/storage.md); the token cache stays local
URL_KEYS = ("input_glob", "output_dir")


class SubsetTokenizer(ConfigBlock):
    """``{name, revision}``: a bundled vocabulary (``cl100k_base``, ``o200k_base``) or a
    path to a ``tokenizer.json``; ``revision``: ``sha256:<hex>`` of the vocabulary."""

    name: str
    revision: str | None = None

    @field_validator("name")
    @classmethod
    def _a_name_or_a_path(cls, name: str) -> str:
        """A name may be a path: it must be one a file can have (``config_error``)."""
        problem = path_problem("tokenizer.name", name)
        if problem is not None:
            raise ValueError(problem)
        return name


class SubsetConfig(CorpusStepConfig):
    """Configuration of ``curate subset`` (the reference's keys; see docs/subset.md)."""

    input_glob: str | list[str]
    output_dir: str = "./output/subset"
    id_field: str | None = None
    text_field: str = "text"
    source_field: str | None = None
    token_budgets: list[Int64] = Field(default_factory=lambda: list(DEFAULT_BUDGETS))
    tokenizer: SubsetTokenizer | None = None
    token_cache: str | None = Field(None, description=(
        "default: <output_dir>/.token_cache (tokenizers only)"))
    quality_score_field: str | None = None
    length_bands: list[Int64] = Field(default_factory=lambda: list(DEFAULT_BANDS))
    seed: Int64 = 0
    partition_size: ByteSizeSpelling = "64MB"

    def preflight(self, flow: FlowContext | None = None) -> list[Problem]:
        problems: list[Problem] = []
        # object storage: input_glob and output_dir may be URLs (docs/storage.md)
        problems += self.url_problems()
        if not self.id_field:
            problems.append(("id_field_missing",
                             "id_field is required: tiers are sets of document ids (in a "
                             "flow: corpus.id_field, or ingest's canonical id)"))
        b, bands = self.token_budgets, self.length_bands
        if not b or any(x <= 0 for x in b) or len(set(b)) != len(b):
            problems.append(("invalid_budget_or_length_band",
                             f"token_budgets {b}: give distinct positive integers"))
        if not bands or any(x <= 0 for x in bands) or \
                any(y <= x for x, y in itertools.pairwise(bands)):
            problems.append(("invalid_budget_or_length_band",
                             f"length_bands {bands}: give strictly increasing positive "
                             "integers"))
        if self.tokenizer is not None and not self.tokenizer.revision:
            problems.append(("tokenizer_revision_missing",
                             f"tokenizer {self.tokenizer.name!r} needs a revision (the "
                             f"sha256 of its vocabulary): {_digest(self.tokenizer.name)}"))
        if flow is not None:
            self._flow_checks(flow)
            problems += self._score_column(flow)
        return problems

    def _score_column(self, flow: FlowContext) -> list[Problem]:
        """``score_column_never_written``: a score field ``__<signal>`` that no step
        before it in the flow writes (spec section 12): the ``scores`` port of the
        nearest enabled step that provides one says which columns it writes."""
        field, offer = self.quality_score_field, flow.offer("scores")
        if not field or not field.startswith("__") or offer is None or not offer.enabled:
            return []
        signal, scores = field[2:], offer.value
        why = scores.none_because
        if why is None and flow.policy_signals is not None \
                and signal not in flow.policy_signals:
            why = (f"the policy has no threshold for {signal!r} (it thresholds "
                   f"{', '.join(flow.policy_signals) or 'nothing'})")
        if why is None:
            return []
        return [("score_column_never_written",
                 f"quality_score_field {field!r} is never written: {why}")]

    def _flow_checks(self, flow: FlowContext) -> None:
        """A corpus a disabled later producer left from an earlier run is not read."""
        read = flow.offer("corpus")
        reads = f"the corpus {read.step} writes" if read and read.enabled \
            else "the configured corpus"
        for stale in flow.stale("corpus"):
            out = stale.config.get("output_dir")
            if out and any(Path(out).glob("*.jsonl")):
                flow.warnings.append(
                    f"{out} holds a corpus from an earlier run of {stale.step}, but "
                    f"{stale.step} is off: the subset reads {reads}, not that file")


def _digest(name: str) -> str:
    """The revision to write for ``name``: a bundled vocabulary's published digest, or
    the digest of a ``tokenizer.json`` that exists."""
    from curator.subset.counting import PUBLISHED_SHA256

    if name in BUNDLED:
        return "sha256:" + PUBLISHED_SHA256[name]
    path = Path(name)
    if path.is_file():
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return f"{name} is not a file"


def run_subset(config: SubsetConfig, executor: Executor | None = None,
               on_progress: ProgressHook | None = None) -> dict[str, Any]:
    """Run the subset; return ``subset_report.json`` (also written)."""
    return SubsetRun(config, executor, on_progress).run()


class SubsetRun(StepRun):
    schema_version = SCHEMA_VERSION
    config: SubsetConfig

    def __init__(self, config: SubsetConfig, executor: Executor | None = None,
                 on_progress: ProgressHook | None = None) -> None:
        super().__init__(config, executor, on_progress)
        self.files: list[str] = []
        self.tok = TokenizerId(None, None)
        self.budgets = sorted(config.token_budgets)
        self.stats: dict[str, float] = {}
        self.plan: PlanTotals | None = None
        self.written: list[int] = []
        self.nested = False
        self.sids: list[str] = []

    @property
    def unit(self) -> str:
        return self.tok.unit

    @property
    def cache_dir(self) -> str | None:
        if self.tok.name is None:
            return None
        if self.config.token_cache:
            return str(Path(self.config.token_cache).resolve())
        if self.output_url:  # the local copy goes once published: the cache is kept beside
            # it, on the checkpoint's disk (docs/storage.md)
            return str(storage.local_copy_dir(self.output_url, self.local_checkpoint,
                                              "subset-token-cache"))
        return str(self.out / ".token_cache")

    def tier_dirs(self) -> list[str]:
        return [tier_dir(b, self.unit) for b in self.budgets]

    def corpus_files(self) -> list[Path]:
        """Every tier's shards, tier by tier (each tier is a corpus of its own)."""
        return [p for d in self.tier_dirs()
                for p in shard_order(shared.listing(self.out / d, "part_*.jsonl"))]

    # -- the straight line -------------------------------------------------------------
    def refuse(self) -> None:
        cfg = self.config
        if cfg.tokenizer is not None:
            self.tok = identify(cfg.tokenizer.name, cfg.tokenizer.revision)
        found = resolve_input_files(cfg.input_glob, (*JSONL_EXTENSIONS, *PARQUET_EXTENSIONS))
        found = self.outside_output(without_sidecars(found), "input_glob", cfg.input_glob)
        if not found:
            raise CuratorError("input_glob_no_matches",
                               f"input_glob {cfg.input_glob!r} matches no files")
        self.files = [f for f in found if not f.lower().endswith(PARQUET_NAMES)]
        if not self.files:
            raise CuratorError("input_is_not_readable_here",
                               f"input_glob {cfg.input_glob!r} matches only Parquet files: "
                               "run curate ingest first")
        self.partitions = FilePartitioningStage(file_paths=self.files,
                                                blocksize=cfg.partition_size)

    def clear_outputs(self) -> None:
        for p in self.out.glob("budget_*"):
            if p.is_dir():
                shutil.rmtree(p)
        shutil.rmtree(self.out / IDS_DIR, ignore_errors=True)
        for name in (PLAN_NAME, REPORT_NAME, PICTURE_NAME):
            (self.out / name).unlink(missing_ok=True)

    def config_extra(self) -> dict[str, Any]:
        # the plan's order rule (plan.json schema_version): count files of a run made
        # under another rule are never resumed into this one
        return {"tokenizer_identity": self.tok.to_json(), "plan_schema": PLAN_SCHEMA_VERSION}

    def execute(self) -> None:
        cfg = self.config
        self.sids = partition_ids(self.partitions)
        index = {sid: i for i, sid in enumerate(self.sids)}
        spec = RecordSpec(text_field=cfg.text_field, id_field=cfg.id_field,
                          source_field=cfg.source_field, require_id=True)
        exchange = Exchange.open(self.work / "exchange", choose_buckets(
            sum(storage.size(f) for f in self.files), cfg.execution.exchange_buckets))
        result = self.phase("count", self.partitions, CountStage(
            records=spec, tokenizer=self.tok, seed=cfg.seed,
            score_field=cfg.quality_score_field, index=index, work_dir=str(self.work),
            cache_dir=self.cache_dir, exchange=exchange))
        self.stats = dict(result.stats)
        if not int(self.stats.get("count.documents", 0)):
            n = int(self.stats.get("count.skipped_missing_id", 0))
            raise CuratorError(
                "no_documents",
                f"no document with a text and an id {cfg.id_field!r} was read"
                + (f" ({n} records have no {cfg.id_field!r}: is id_field right?)" if n else ""))
        cut_points = self._score_cut_points(index)
        # rank: each range of the order sorted; the driver keeps the table strata x ranges
        self.phase("rank", BucketPartitioning(exchange=exchange), RankStage(
            exchange=exchange, bands=list(cfg.length_bands), work_dir=str(self.work),
            cut_points=cut_points))
        table = gather(self.work, exchange.buckets)
        refuse_repeated(table)
        plan, cuts = plan_table(table.strata, table.docs, table.tokens, table.shortest,
                                self.budgets, self.unit, cut_points or [])
        # select: each range's documents' first tier; only a cut range resolves its cut
        self.phase("select", BucketPartitioning(exchange=exchange), SelectStage(
            strata=plan.strata, cuts=cuts, budgets=self.budgets, work_dir=str(self.work),
            output_dir=str(self.out)))
        self.plan = finish_plan(plan, cuts, found_cuts(self.work, exchange.buckets),
                                self.unit)
        ranges = [{"file": f"{IDS_DIR}/{ids_file('', r).name}",
                   "documents": int(table.docs[:, r].sum())}
                  for r in range(exchange.buckets)]
        body = plan_json(self.plan, ranges, seed=cfg.seed, budgets=self.budgets,
                         bands=cfg.length_bands, score_field=cfg.quality_score_field,
                         unit=self.unit, tokenizer=self.tok.to_json())
        # the plan is on disk before any tier
        write_atomic(self.out / PLAN_NAME, orjson.dumps(
            body, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        result = self.phase("write", self.partitions, WriteStage(
            tiers=self.tier_dirs(), index=index, work_dir=str(self.work),
            output_dir=str(self.out), id_field=self.config.id_field))
        self.stats.update(result.stats)
        self._verify_written()

    def _score_cut_points(self, index: dict[str, int]) -> list[float] | None:
        """The corpus's score deciles (``None``: no score field): exact order statistics
        found 16 bits at a time by :data:`deciles.PASSES` passes of units over the count
        files (:mod:`curator.subset.deciles`); the driver holds one pass's histogram,
        never the scores."""
        if not self.config.quality_score_field:
            return None
        selection: deciles.Selection | None = None
        for step in range(deciles.PASSES):
            prefixes = selection.distinct if selection is not None else [0]
            self.phase(f"deciles{step}", self.partitions, deciles.DecileStage(
                index=index, work_dir=str(self.work), step=step, prefixes=prefixes))
            counts = deciles.add_histograms(self.work, step, len(self.sids), len(prefixes))
            if selection is None:
                selection = deciles.Selection.start(int(counts.sum()))
                if not selection.ranks:
                    return []
            selection.step(counts)
        assert selection is not None
        return selection.cut_points()

    def _verify_written(self) -> None:
        """The ids in the tiers' shards are the planned ones, and nest: each writer
        checked its partition (ids are unique, partitions disjoint); the driver adds up."""
        assert self.plan is not None
        n = len(self.budgets)
        written, planned, same, nested = [0] * n, [0] * n, [True] * n, True
        for i in range(len(self.sids)):
            part = orjson.loads(shared.localize(written_file(self.work, i)).read_bytes())
            for t in range(n):
                written[t] += part["written"][t]
                planned[t] += part["planned"][t]
                same[t] = same[t] and part["same"][t]
            nested = nested and part["nested"]
        self.written = written
        problem = None
        for t, name in enumerate(self.tier_dirs()):
            if not same[t] or planned[t] != self.plan.tiers[t].document_count:
                problem = f"tier {name}: {written[t]} documents written, {planned[t]} planned"
        if problem is None and not nested:
            problem = "the written tiers do not nest"
        if problem is not None:
            for name in self.tier_dirs():
                shared.remove_tree(self.out / name)
            raise CuratorError("tier_write_mismatch",
                               f"{problem}: every tier is removed")
        self.nested = True

    # -- artifacts ---------------------------------------------------------------------
    def artifacts(self) -> list[tuple[Path | None, dict[str, Any]]]:
        cfg, st = self.config, self.stats

        def n(key: str) -> int:
            return int(st.get(f"count.{key}", 0))

        prefix = "count.unparsable_by_shard."
        by_shard = {k[len(prefix):]: int(v) for k, v in sorted(st.items())
                    if k.startswith(prefix)}
        plan = self.plan
        strata = {}
        tiers: list[dict[str, Any]] = []
        warnings: list[dict[str, Any]] = []
        if plan is not None:
            strata = {k: {"documents": d, "tokens": t, "shortest": s} for k, d, t, s in
                      zip(plan.strata, plan.stratum_docs, plan.stratum_tokens,
                          plan.stratum_shortest, strict=True)}
            outputs = [str(self.out / d) for d in self.tier_dirs()]
            tiers = tier_rows(plan, self.unit, outputs, self.written)
            warnings = plan.warnings
        report: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "step_id": self.step_id,
            "started_at": self.started_at,
            "config_hash": self.config_hash(),
            "unit": self.unit,
            "tokenizer": self.tok.to_json(),
            "token_cache": {"hits": n("cache_hits"), "misses": n("cache_misses"),
                            "dir": self.cache_dir},
            "seed": cfg.seed,
            "input_glob": cfg.input_glob,
            "id_field": cfg.id_field, "text_field": cfg.text_field,
            "source_field": cfg.source_field,
            "plan": str(self.out / PLAN_NAME),
            "corpus": {
                "total_tokens": plan.total_tokens if plan is not None else 0,
                "files": len(self.files), "documents": n("documents"),
                "skipped_missing_text": n("skipped_missing_text"),
                "skipped_missing_id": n("skipped_missing_id"),
                "unparsable_lines": n("unparsable_lines"),
                "unparsable_by_shard": by_shard,
                "source_field_used": cfg.source_field is not None,
            },
            "stratification": {"score_field": cfg.quality_score_field,
                               "length_bands": cfg.length_bands,
                               "score_cut_points": plan.cut_points if plan else [],
                               "strata": strata},
            "tiers": tiers,
            "nesting_verified": self.nested,
            "warnings": warnings,
            "interpretation": interpretation(self.unit),
            "producer": self.producer(),
        }
        if self.completed:
            report["completed_at"] = report["producer"]["completed_at"]
            drawn = SubsetReport.model_validate(models.build(SubsetReport, report))
            report["picture"] = str(write_picture(drawn, self.out / PICTURE_NAME))
        block = self.error_block()
        if block is not None:
            report["error"] = block
        return [(self.out / REPORT_NAME, models.build(SubsetReport, report))]


def _derive(flow: FlowContext) -> dict[str, Any]:
    """The corpus the flow hands on: decontaminated when that step is on, else filtered
    (the corpus view of the last enabled producer), else the raw input."""
    return flow.reads.keys()


def _funnel(r: SubsetReport) -> Funnel:
    """The records it could not count (a row, when any), and one row per tier."""
    corpus, unit = r.corpus, r.unit or "tokens"
    if corpus is None:
        raise MissingCount("corpus")
    skipped = skips(corpus)
    docs = need(corpus.documents, "corpus.documents")
    total = need(corpus.total_tokens, "corpus.total_tokens")
    rows = []
    if skipped:
        rows.append(FunnelRow("subset", "subset (records it could not count)",
                              docs + sum(x.documents for x in skipped), docs, skipped))
    tiers = []
    for t in r.tiers or []:
        name = Path(t.output or str(t.budget)).name
        kept = need(t.document_count, "tiers[].document_count")
        achieved = need(t.achieved_tokens, "tiers[].achieved_tokens")
        tiers.append(FunnelRow(
            "subset", f"tier {name} (budget {t.budget:,} {unit})", docs, kept,
            [Loss(f"not selected: beyond its stratum's share of the {t.budget:,}-"
                  f"{unit} budget", docs - kept, total - achieved)],
            tokens_in=total, tokens_out=achieved,
            note=f"shortfall {need(t.token_shortfall, 'tiers[].token_shortfall'):,} {unit}"))
    return rows, tiers


SPEC = StepSpec(
    key="subset",
    url_keys=URL_KEYS,
    help="Nested training tiers by token budget, counted offline (words or a tokenizer).",
    config=SubsetConfig,
    run=run_subset,
    phases=(Phase("count", "count tokens", "count.records"),
            *(Phase(f"deciles{k}", f"score deciles, key bits {16 * k + 1}-{16 * k + 16}",
                    "deciles.scores") for k in range(4)),
            Phase("rank", "order each range", "rank.documents"),
            Phase("select", "select each range's tiers", "select.documents"),
            Phase("write", "write tiers", "write.documents")),
    output_subdir="subset",
    completion_name=lambda cfg: REPORT_NAME,
    input_key="input_glob",
    derive=_derive,
    model=SubsetReport,
    funnel=_funnel,
    render=render,
    audit=check_subset,
    consumes=(Port("corpus", "corpus"), Port("scores", "scores")),
    provides=(Port("plan", "plan", in_output(PLAN_NAME)),),
    artifacts={"subset_report": REPORT_NAME, "subset_plan": PLAN_NAME},
)

__all__ = ["ALL", "SPEC", "SubsetConfig", "run_subset"]
