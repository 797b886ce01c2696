"""curate dedup: near-duplicate removal across the whole corpus (MinHash LSH on the
engine's exchange; docs/dedup.md).

One straight line of engine phases, each resumable per unit:

1. ``signatures`` (per input partition): MinHash band keys into the ``bands`` exchange;
2. ``candidates`` (per band bucket): each band group's members linked to its smallest;
3. ``send`` and ``verify`` (per partition, twice): each candidate pair's two texts meet
   in the partition of one side; the pairs at or above the threshold are the edges;
4. ``components`` (per label bucket, rounds of large-star and small-star until nothing
   changes): every component a star around its survivor (:mod:`curator.dedup.components`);
5. ``assign`` (per bucket), ``survivors`` (per partition): each removed document's
   survivor, sent to the removed document's partition;
6. ``write`` (per partition): kept lines as they are, removed records with their survivor,
   the similarity to it and the edge they were joined by; then ``dedup_report.json``.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from curator import models
from curator.audit.dedup import check_dedup
from curator.config import ByteSizeSpelling, CorpusStepConfig, Int64, Real
from curator.corpus.formats import JSONL_EXTENSIONS, PARQUET_NAMES
from curator.dedup.components import MAX_ROUNDS, AssignStage, StarStage
from curator.dedup.docs import Rules
from curator.dedup.minhash import MinHashParams, collision_probability
from curator.dedup.report import (
    REPORT_NAME,
    SCHEMA_VERSION,
    components,
    config_digest,
    render,
    written,
)
from curator.dedup.shingles import Shingling
from curator.dedup.stages import (
    CandidateStage,
    SendStage,
    SignatureStage,
    SurvivorStage,
    VerifyStage,
    WriteStage,
)
from curator.errors import CuratorError
from curator.exchange import BucketPartitioning, Exchange, choose_buckets
from curator.execution import Executor
from curator.io import storage
from curator.io.partitioning import FilePartitioningStage, parse_size, resolve_input_files
from curator.models import DedupReport
from curator.steps.base import ProgressHook, StepRun, partition_ids
from curator.steps.funnel import Funnel, FunnelRow, Loss, need
from curator.steps.spec import (
    CorpusView,
    FlowContext,
    Phase,
    Port,
    Problem,
    StepSpec,
    without_sidecars,
)

SKIP_REASONS = ("unparsable_line", "not_an_object", "missing_text", "text_not_a_string",
                "empty_text")


class DedupConfig(CorpusStepConfig):
    """Configuration of ``curate dedup`` (docs/dedup.md, "Configuration")."""

    input_glob: str | list[str]
    output_dir: str = "./output/deduplicated"
    id_field: str | None = Field(None, description="the record's id (required)")
    text_field: str = "text"
    source_field: str | None = Field(None, description="counted in removed_by_source")
    shingle: Literal["words", "chars"] = "words"
    n: Int64 = Field(5, ge=1, description="shingle length in words or code points")
    bands: Int64 = Field(20, ge=1)
    rows: Int64 = Field(8, ge=1)
    threshold: Real = Field(0.8, gt=0, le=1, description=(
        "Jaccard at or above which a candidate pair is a duplicate"))
    verify: bool = Field(True, description=(
        "verify every candidate pair by the exact Jaccard of its shingle sets; false: the "
        "signature's estimate"))
    keep: str = Field("hash", description=(
        "the survivor of a component: hash (smallest stable hash of the id), longest, or "
        "score:<field> (highest); ties by the stable hash"))
    seed: Int64 = Field(0, ge=0)
    partition_size: ByteSizeSpelling = "64MB"

    @field_validator("keep")
    @classmethod
    def _keep(cls, value: str) -> str:
        if value in ("hash", "longest") or (value.startswith("score:") and len(value) > 6):
            return value
        raise ValueError("keep must be hash, longest or score:<field>")

    def preflight(self, flow: FlowContext | None = None) -> list[Problem]:
        problems: list[Problem] = self.url_problems()
        if not self.id_field:
            problems.append(("id_field_missing_or_duplicated",
                             "id_field is required: removed records name their survivor "
                             "by id" + (" (set corpus.id_field or enable ingest)"
                                        if flow else "")))
        return problems

    def rules(self) -> Rules:
        assert self.id_field is not None
        return Rules(id_field=self.id_field, text_field=self.text_field,
                     source_field=self.source_field, shingling=Shingling(self.shingle, self.n),
                     params=MinHashParams(self.bands, self.rows, self.seed),
                     threshold=self.threshold, verify=self.verify, keep=self.keep)

    def params(self) -> dict[str, Any]:
        return {"id_field": self.id_field, "text_field": self.text_field,
                "source_field": self.source_field, "shingle": self.shingle, "n": self.n,
                "bands": self.bands, "rows": self.rows, "threshold": self.threshold,
                "verify": self.verify, "keep": self.keep, "seed": self.seed,
                "expected_recall": round(float(collision_probability(
                    self.threshold, self.bands, self.rows)), 6)}


def run_dedup(config: DedupConfig, executor: Executor | None = None,
              on_progress: ProgressHook | None = None) -> dict[str, Any]:
    """Run dedup; return ``dedup_report.json`` (also written)."""
    return DedupRun(config, executor, on_progress).run()


class DedupRun(StepRun):
    """One dedup run (:class:`~curator.steps.base.StepRun` keeps the order of things)."""

    schema_version = SCHEMA_VERSION
    config: DedupConfig

    def __init__(self, config: DedupConfig, executor: Executor | None = None,
                 on_progress: ProgressHook | None = None) -> None:
        super().__init__(config, executor, on_progress)
        self.run_id = uuid.uuid4().hex
        self.removed_dir = self.out / "removed"
        self.files: list[str] = []
        self.sids: list[str] = []
        self.counts: dict[str, Any] = {}
        self.warnings: list[dict[str, str]] = []

    def refuse(self) -> None:
        cfg = self.config
        try:
            found = resolve_input_files(cfg.input_glob, JSONL_EXTENSIONS)
        except CuratorError as exc:
            if exc.error_id != "input_matched_no_files":
                raise
            found = []
        # never a report a step wrote beside a corpus (ingest_report.json is not JSONL)
        found = self.outside_output([f for f in without_sidecars(found)
                                     if not f.lower().endswith(PARQUET_NAMES)],
                                    "input_glob", cfg.input_glob)
        if not found:
            raise CuratorError("input_matched_no_files",
                               f"input_glob {cfg.input_glob!r} matches no JSONL files")
        self.files = sorted(found)
        self.partitions = FilePartitioningStage(file_paths=self.files,
                                                blocksize=cfg.partition_size)

    def clear_outputs(self) -> None:
        for p in self.out.glob("part_*.jsonl"):
            p.unlink()
        shutil.rmtree(self.removed_dir, ignore_errors=True)
        (self.out / REPORT_NAME).unlink(missing_ok=True)

    def output_dirs(self) -> list[Path]:
        return [self.out, self.removed_dir]

    def execute(self) -> None:
        cfg, work = self.config, self.work
        rules = cfg.rules()
        self.sids = sids = partition_ids(self.partitions)
        index = {sid: i for i, sid in enumerate(sids)}
        file_index = {f: i for i, f in enumerate(self.files)}
        buckets = choose_buckets(len(sids) * (parse_size(cfg.partition_size) or 1 << 26),
                                 cfg.execution.exchange_buckets)
        bands = Exchange.open(work / "bands", buckets)
        n = bands.buckets
        common = {"rules": rules, "file_index": file_index, "index": index,
                  "work_dir": str(work)}

        seen = self.phase("signatures", self.partitions, SignatureStage(**common, bands=bands))
        stats = seen.stats
        self.counts["skipped"] = {r: int(stats.get(f"dedup_signatures.skipped.{r}", 0))
                                  for r in SKIP_REASONS
                                  if stats.get(f"dedup_signatures.skipped.{r}", 0)}
        by_bucket = BucketPartitioning(exchange=bands)
        self.phase("candidates", by_bucket, CandidateStage(bands=bands, work_dir=str(work)))
        sent = self.phase("send", self.partitions, SendStage(**common))
        edges = Exchange(str(work / "cc" / "0"), n)
        checked = self.phase("verify", self.partitions, VerifyStage(**common, edges=edges))
        candidates = int(sent.stats.get("dedup_send.pairs", 0))
        verified = int(checked.stats.get("dedup_verify.verified", 0))
        self.counts.update(candidate_pairs=candidates, verified_pairs=verified,
                           rejected_pairs=candidates - verified)

        rounds = 0
        while verified:
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise CuratorError(
                    "dedup_components_not_converged",
                    f"connected components did not converge in {MAX_ROUNDS} rounds (an "
                    "internal invariant: report it, with the run's report)",
                    rounds=MAX_ROUNDS)
            mid = Exchange(str(work / "cc" / f"{rounds - 1}s"), n)
            nxt = Exchange(str(work / "cc" / str(rounds)), n)
            large = self.phase(f"components-{rounds}-large", BucketPartitioning(exchange=edges),
                               StarStage(source=edges, target=mid, large=True,
                                         name="dedup_large_star"))
            small = self.phase(f"components-{rounds}-small", BucketPartitioning(exchange=mid),
                               StarStage(source=mid, target=nxt, large=False,
                                         name="dedup_small_star"))
            edges = nxt
            changed = int(large.stats.get("dedup_large_star.changed", 0)) + \
                int(small.stats.get("dedup_small_star.changed", 0))
            if changed == 0:
                break
        self.counts["rounds"] = rounds
        self.phase("assign", BucketPartitioning(exchange=edges),
                   AssignStage(source=edges, work_dir=str(work)))
        self.counts.update(components(work, n))
        self.phase("survivors", self.partitions, SurvivorStage(**common))
        self.removed_dir.mkdir(parents=True, exist_ok=True)
        self.phase("write", self.partitions, WriteStage(**common, output_dir=str(self.out)))
        self.counts["partitions"] = {"signatures": len(sids), "buckets": n}
        gone = written(work, sids)["removed"]
        planned = self.counts["documents_in_components"] - self.counts["components"]
        if gone != planned:
            raise CuratorError(
                "dedup_counts_do_not_balance",
                f"{gone} documents written as removed, but the components remove {planned} "
                "(an internal invariant: report it; rerun without the checkpoint)",
                written=gone, planned=planned)

    def artifacts(self) -> list[tuple[Path | None, dict[str, Any]]]:
        cfg = self.config
        producer = self.producer()
        params = cfg.params()
        report: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "step_id": self.step_id, "run_id": self.run_id,
            "started_at": self.started_at, "completed_normally": self.completed,
            "error": self.error_block(), "seconds": producer["seconds"],
            "producer": producer,
            "input": {"glob": cfg.input_glob, "files": len(self.files)},
            "output_dir": str(self.out), "removed_dir": str(self.removed_dir),
            "params": params, "config_digest": config_digest(params),
        }
        if self.sids:
            report.update(written(self.work, self.sids))
        report.update(self.counts)
        report["warnings"] = self.warnings
        if self.completed:
            report["completed_at"] = producer["completed_at"]
        return [(self.out / REPORT_NAME, models.build(DedupReport, report))]


def _derive(flow: FlowContext) -> dict[str, Any]:
    return flow.reads.keys("input_glob")


def _produces(config: dict[str, Any]) -> CorpusView:
    out = str(config["output_dir"])
    glob = storage.join(out, "part_*.jsonl") if storage.is_remote(out) \
        else f"{out}/part_*.jsonl"
    return CorpusView(glob=glob, text_field=config.get("text_field", "text"),
                      id_field=config.get("id_field"), source_field=config.get("source_field"))


def _funnel(r: DedupReport) -> Funnel:
    """Documents in and out; the near-duplicates removed are the loss."""
    return [FunnelRow("dedup", "dedup (near-duplicates removed)",
                      need(r.documents_in, "documents_in"),
                      need(r.documents_out, "documents_out"),
                      [Loss("near-duplicate", need(r.removed, "removed"))])], []


SPEC = StepSpec(
    key="dedup",
    url_keys=("input_glob", "output_dir"),
    help="Remove near-duplicate documents across the whole corpus (MinHash LSH, verified "
         "pairs, connected components), keeping every removed one with its survivor.",
    config=DedupConfig,
    run=run_dedup,
    phases=(Phase("signatures", "signatures", "dedup_signatures.documents"),
            Phase("candidates", "candidate pairs", "dedup_candidates.pairs"),
            Phase("send", "send pairs", "dedup_send.pairs"),
            Phase("verify", "verify pairs", "dedup_verify.pairs"),
            Phase("assign", "assign survivors", "dedup_assign.removed"),
            Phase("survivors", "send survivors", "dedup_survivors.removed"),
            Phase("write", "write shards", "dedup_write.documents")),
    output_subdir="deduplicated",
    completion_name=lambda cfg: REPORT_NAME,
    input_key="input_glob",
    derive=_derive,
    model=DedupReport,
    funnel=_funnel,
    render=render,
    audit=check_dedup,
    consumes=(Port("corpus", "corpus"),),
    provides=(Port("corpus", "corpus", _produces),),
    artifacts={"deduplicated": ""},
)

__all__ = ["SPEC", "DedupConfig", "run_dedup"]
