"""curate subset: nested training tiers by token budget (spec section 11; docs/subset.md).

One straight line:

1. refuse before anything is read: no id field, budgets or length bands that are not
   positive and increasing, a tokenizer without its revision (or whose vocabulary is
   not that revision), an input that matches nothing or only Parquet;
2. count (engine pass, one unit per source partition): every document's units, from
   the token cache when its id and text digest are there; ids hashed into the global
   order; per-partition arrays in the work directory;
3. plan (in memory, over compact arrays): ids unique, strata, D'Hondt quotas, the
   prefixes; nesting verified on the plan; ``plan.json`` written before any tier;
4. write (engine pass): each partition's lines copied into the tiers they belong to,
   ``budget_<N>_<unit>/part_<i>.jsonl``;
5. verify: the ids read back from every tier's shards must be the planned ones and
   nest (``tier_write_mismatch`` removes every tier); ``subset_report.json`` last.
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
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
from curator.execution import Executor
from curator.io import shared, storage
from curator.io.parquet_export import shard_order
from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.io.writers import atomic_file, write_atomic
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
from curator.subset.counting import BUNDLED, TokenizerId, identify
from curator.subset.planning import Plan, make_plan, verify_nesting
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
    count_file,
    select_file,
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
        self.plan: Plan | None = None
        self.written: list[int] = []
        self.nested = False
        self.sids: list[str] = []
        self._sizes: list[int] = []

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
        result = self.phase("count", self.partitions, CountStage(
            records=spec, tokenizer=self.tok, seed=cfg.seed,
            score_field=cfg.quality_score_field, index=index, work_dir=str(self.work),
            cache_dir=self.cache_dir))
        self.stats = dict(result.stats)
        ids = self._plan()
        # the plan is verified and on disk before any tier
        verify_nesting([set(self._planned(t, ids)) for t in range(len(self.budgets))])
        self._write_selection()
        result = self.phase("write", self.partitions, WriteStage(
            tiers=self.tier_dirs(), index=index, work_dir=str(self.work),
            output_dir=str(self.out), id_field=self.config.id_field))
        self.stats.update(result.stats)
        self._verify_written(ids)

    def _load(self) -> pa.Table:
        tables = [pq.read_table(shared.localize(count_file(self.work, i)))
                  for i in range(len(self.sids))]
        return pa.concat_tables(tables) if tables else pa.table({})

    def _plan(self) -> list[str]:
        cfg = self.config
        table = self._load()
        if not table.num_rows:
            n = int(self.stats.get("count.skipped_missing_id", 0))
            raise CuratorError(
                "no_documents",
                f"no document with a text and an id {cfg.id_field!r} was read"
                + (f" ({n} records have no {cfg.id_field!r}: is id_field right?)" if n else ""))
        ids = pl.Series("id", table["id"]) if table.num_rows else pl.Series("id", [], pl.String)
        scores = (table["score"].to_numpy(zero_copy_only=False)
                  if cfg.quality_score_field else None)
        self.plan = make_plan(
            ids, table["hash"].to_numpy(), table["tokens"].to_numpy(),
            _codes(table["source"]), scores, self.budgets, cfg.length_bands, self.unit)
        id_list = ids.to_list()
        body = plan_json(self.plan, id_list, seed=cfg.seed, budgets=self.budgets,
                         bands=cfg.length_bands, score_field=cfg.quality_score_field,
                         unit=self.unit, tokenizer=self.tok.to_json())
        # built through its model (plan_json): Python values only, no numpy to serialize
        write_atomic(self.out / PLAN_NAME, orjson.dumps(
            body, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        self._sizes = [pq.ParquetFile(count_file(self.work, i)).metadata.num_rows
                       for i in range(len(self.sids))]
        return id_list

    def _planned(self, t: int, ids: list[str]) -> list[str]:
        assert self.plan is not None
        return [ids[i] for i in self.plan.tier_members(t).tolist()]

    def _write_selection(self) -> None:
        assert self.plan is not None
        start = 0
        for i, n in enumerate(self._sizes):
            with atomic_file(select_file(self.work, i)) as f:  # every node reads its own
                np.save(f, self.plan.first_tier[start:start + n], allow_pickle=False)
            start += n

    def _verify_written(self, ids: list[str]) -> None:
        """The ids in the tiers' shards are the planned ones, and nest."""
        written: list[set[str]] = []
        self.written = []
        problem = None
        # what each writer read back from its shards (the driver never reads a shard)
        read_back = [orjson.loads(shared.localize(written_file(self.work, i)).read_bytes())
                     for i in range(len(self.sids))]
        for t, name in enumerate(self.tier_dirs()):
            got: list[str] = []
            for ids_of in read_back:
                got += ids_of.get(name, [])
            planned = set(self._planned(t, ids))
            self.written.append(len(got))
            if len(got) != len(planned) or set(got) != planned:
                problem = (f"tier {name}: {len(got)} documents written, {len(planned)} "
                           "planned")
            written.append(set(got))
        if problem is None:
            try:
                verify_nesting(written)
            except CuratorError as exc:
                problem = exc.message
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


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """A string column as (codes, names): one small integer a document."""
    encoded = column.combine_chunks().dictionary_encode()
    return (encoded.indices.to_numpy(zero_copy_only=False),
            [str(x) for x in encoded.dictionary.to_pylist()])


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
