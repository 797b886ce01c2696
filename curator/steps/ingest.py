"""curate ingest: raw JSONL/Parquet -> canonical ``part_<n>.jsonl`` shards and a report.

One straight line of engine phases, each resumable by source partition:

1. parse: each input partition is decoded, parsed and validated into its
   accepted records' output lines (``<output_dir>/.staging/<source>.jsonl``), a
   staging table of their ids and positions (``.staging/<source>.parquet``) and its
   rejections (``<output_dir>/rejected/<source>.jsonl``);
2. duplicates: ids are compared over the whole corpus (first copy = input path
   order, then position); ``refuse`` stops here, ``drop`` rejects later copies
   (``rejected/duplicates.jsonl``), ``suffix`` renames them;
3. rejections (only when copies were dropped): one unit writes
   ``rejected/duplicates.jsonl`` from the buckets' decisions, in input order;
4. shards: accepted records, in input order, are cut into ``part_<n>.jsonl``
   shards of ``shard_size`` documents: byte ranges of the staged lines.

The report is built from what is on disk (per-partition statistics stored with
the checkpoint), so a resumed run reports the whole corpus.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from curator import models
from curator.artifacts import file_digest
from curator.config import ByteSizeSpelling, CorpusStepConfig, Int64
from curator.errors import CuratorError
from curator.exchange import BucketPartitioning, Exchange, choose_buckets
from curator.execution import Executor
from curator.ingest.dedup import DuplicateStage, RejectionStage, summarise
from curator.ingest.parse_stage import ParseStage, records_path
from curator.ingest.plan import IngestPartitioning, resolve_inputs
from curator.ingest.records import IdentitySpec
from curator.ingest.report import (
    count_documents,
    document_fields,
    examples_text,
    identity_block,
    reasons_text,
    render,
)
from curator.ingest.shards import ShardPlanStage, ShardWriterStage, digest_path, plan_shards
from curator.io import shared
from curator.io.partitioning import parse_size
from curator.models import IngestReport
from curator.stages import OneUnit
from curator.steps.base import ProgressHook, StepRun
from curator.steps.funnel import Funnel, FunnelRow, Loss, MissingCount, need
from curator.steps.spec import (
    CorpusView,
    FlowContext,
    Phase,
    Port,
    Problem,
    StepSpec,
    sidecars,
)

log = logging.getLogger("curator.ingest")

REPORT_NAME = "ingest_report.json"
STAGING = ".staging"
SCHEMA_VERSION = 2


class IngestConfig(CorpusStepConfig):
    """Configuration of ``curate ingest`` (keys and defaults of the reference)."""

    input: str | list[str]
    output_dir: str = "./output/ingested"
    format: Literal["auto", "jsonl", "parquet"] = "auto"
    text_field: str = "text"
    id_from: str | None = None
    id_fields: list[str] = Field(default_factory=lambda: ["url", "text"])
    id_prefix: str = ""
    source_from: str | None = None
    source: str | None = None
    keep_fields: list[str] = Field(default_factory=lambda: ["url"])
    on_duplicate: Literal["refuse", "drop", "suffix"] = "refuse"
    shard_size: Int64 = Field(50_000, ge=1)
    partition_size: ByteSizeSpelling = "64MB"

    def preflight(self, flow: FlowContext | None = None) -> list[Problem]:
        problems: list[Problem] = []
        if self.id_from is None and self.text_field not in self.id_fields:
            problems.append((
                "invalid_identity_fields",
                f"id_fields {self.id_fields} must include text_field {self.text_field!r}: "
                "an id that ignores the text would merge different documents",
            ))
        if self.source_from and self.source:
            problems.append(("config_error", "set source_from or source, not both"))
        return problems

    def identity(self) -> IdentitySpec:
        """The identity rules (call after :meth:`preflight` found nothing)."""
        reserved = {self.text_field, "text", "id", "source"}
        return IdentitySpec(
            text_field=self.text_field,
            id_from=self.id_from,
            id_fields=tuple(self.id_fields),
            id_prefix=self.id_prefix,
            source_from=self.source_from,
            source=self.source,
            keep_fields=tuple(f for f in self.keep_fields if f not in reserved),
        )


def run_ingest(
    config: IngestConfig,
    executor: Executor | None = None,
    on_progress: ProgressHook | None = None,
) -> dict[str, Any]:
    """Run ingest; return the report (also written to ``<output_dir>/ingest_report.json``)."""
    return IngestRun(config, executor, on_progress).run()


class IngestRun(StepRun):
    """One ingest run (:class:`~curator.steps.base.StepRun` keeps the order of things)."""

    schema_version = SCHEMA_VERSION
    config: IngestConfig

    def __init__(self, config: IngestConfig, executor: Executor | None = None,
                 on_progress: ProgressHook | None = None) -> None:
        super().__init__(config, executor, on_progress)
        self.work = self.out / STAGING  # the staged partitions are the work files
        self.run_id = uuid.uuid4().hex
        self.fields: dict[str, Any] = {"on_duplicate": config.on_duplicate, "warnings": []}

    def refuse(self) -> None:
        self.identity = self.config.identity()
        self.fields["identity"] = identity_block(self.identity)
        # the URL's own files too; never a report a step wrote beside a corpus
        self.plan = resolve_inputs(self.config.input, self.config.format,
                                   self.output_url or self.out, sidecars())

    def clear_outputs(self) -> None:
        for path in self.out.glob("part_*.jsonl"):
            path.unlink()
        shutil.rmtree(self.out / "rejected", ignore_errors=True)
        (self.out / REPORT_NAME).unlink(missing_ok=True)

    def artifacts(self) -> list[tuple[Path | None, dict[str, Any]]]:
        producer = self.producer()
        report = {
            "schema_version": SCHEMA_VERSION, "step_id": self.step_id,
            "run_id": self.run_id, "started_at": self.started_at,
            "output_dir": str(self.out), **self.fields,
            "completed_normally": self.completed, "error": self.error_block(),
            "seconds": producer["seconds"], "producer": producer,
        }
        if self.completed:
            report["completed_at"] = producer["completed_at"]
        return [(self.out / REPORT_NAME, models.build(IngestReport, report))]

    def execute(self) -> None:
        config, out, plan, report = self.config, self.out, self.plan, self.fields
        report["input"] = {
            "glob": config.input, "format": plan.format, "files": len(plan.files),
            "skipped_own_output": len(plan.skipped_own_output),
        }
        staging, rejected = out / STAGING, out / "rejected"
        rejected.mkdir(parents=True, exist_ok=True)

        # 1. parse (each partition's ids go through the exchange, keyed by id)
        partitioning = IngestPartitioning(
            files=plan.files, block=parse_size(config.partition_size) or 1 << 26
        )
        planned = len(partitioning.plan())
        dedup_work = staging / "duplicates"
        buckets = choose_buckets(planned * partitioning.block,
                                 config.execution.exchange_buckets)
        ids = Exchange.open(dedup_work / "ids", buckets)
        claims = (Exchange(str(dedup_work / "claims"), ids.buckets)
                  if config.on_duplicate == "suffix" else None)
        parsed = self.phase("parse", partitioning, ParseStage(
            spec=self.identity, file_index={p: i for i, p in enumerate(plan.files)},
            staging_dir=str(staging), rejected_dir=str(rejected), ids=ids, claims=claims))
        parts = _staged_parts(partitioning, staging)

        # 2. duplicates: one unit per bucket of ids; the driver reads their summaries
        self.phase("duplicates", BucketPartitioning(exchange=ids), DuplicateStage(
            ids=ids, claims=claims, mode=config.on_duplicate, files=plan.files,
            fmt=plan.format, work_dir=str(dedup_work)))
        dedup = summarise(dedup_work, ids.buckets, config.on_duplicate)
        stats = parsed.stats
        counts = count_documents(stats, dedup)
        report.update(document_fields(stats, parsed, dedup, counts))
        report["columns_available"] = sorted(k.split(".", 2)[2] for k in stats
                                             if k.startswith("ingest_parse.column."))
        if dedup.duplicate_ids and config.on_duplicate == "refuse":
            report["counts"] = counts
            report["duplicates"] = {"copies": dedup.duplicate_ids,
                                    "groups": dedup.duplicate_groups,
                                    "examples": dedup.examples}
            raise CuratorError(
                "duplicate_documents",
                f"{dedup.duplicate_ids} duplicate copies in {dedup.duplicate_groups} groups "
                f"of equal ids; examples: {examples_text(dedup)}. Set on_duplicate: drop "
                "(keep the first copy) or suffix (rename later copies), or fix the input.",
                examples=dedup.examples,
            )
        # 3. the dropped copies' rejections: one file, written by one unit
        target = rejected / "duplicates.jsonl"
        if dedup.dropped:
            self.phase("rejections", OneUnit(files=[str(target)]), RejectionStage(
                target=str(target), work_dir=str(dedup_work),
                parts=[sid for sid, _ in parts if dedup.drops.get(sid)]))
        else:
            shared.remove(target)
        if counts["written"] == 0:
            report["counts"] = counts
            raise CuratorError(
                "no_usable_documents",
                f"none of {counts['records_read']} records is usable: "
                f"{reasons_text(report['rejections_by_reason'])}; see {rejected}",
            )

        # 4. shards
        kept = [(sid, rows - dedup.drops.get(sid, 0)) for sid, rows in parts]
        shards = plan_shards(kept, config.shard_size)
        for stale in out.glob("part_*.jsonl"):
            if not _is_planned(stale.name, len(shards)):
                stale.unlink()
        written = self.phase("shards", ShardPlanStage(shards=shards), ShardWriterStage(
            staging_dir=str(staging), output_dir=str(out), decisions_dir=str(dedup_work)))
        if int(written.stats.get("ingest_shard_writer.written", 0)) != counts["written"]:
            raise CuratorError(
                "ingest_count_mismatch",
                f"shards hold {written.stats.get('ingest_shard_writer.written', 0)} documents "
                f"but {counts['written']} were accepted",
            )
        report["counts"] = counts
        report["was_resumed"] = self.resuming or self.resumed_partitions > 0
        report["shards"] = [
            {"name": f"part_{s.index}.jsonl",
             "rows": sum(b - a for _, a, b in s.data),
             "sha256": _shard_digest(out, staging, s.index)}
            for s in shards
        ]
        report["partitions"] = {"parse": parsed.sources_total, "duplicates": ids.buckets,
                                "shards": written.sources_total,
                                "skipped_resumed": self.resumed_partitions}


def _shard_digest(out: Path, staging: Path, index: int) -> str:
    """The digest the shard writer computed while writing the shard, else a fresh one."""
    try:
        digest = shared.localize(digest_path(staging, index)).read_text()
    except OSError:
        digest = ""
    if digest.startswith("sha256:"):
        return digest
    return file_digest(shared.localize(out / f"part_{index}.jsonl"))


def _is_planned(name: str, n: int) -> bool:
    try:
        return int(name[len("part_"):-len(".jsonl")]) < n
    except ValueError:
        return False


def _staged_parts(partitioning: IngestPartitioning, staging: Path) -> list[tuple[str, int]]:
    """(source id, staged rows) of every parse partition, in input order: the rows from
    the staging table's footer (on a cluster, a ranged read of the object, not a copy)."""
    parts = []
    for group in partitioning.plan():
        sid = group.get_deterministic_id()
        path = staging / f"{sid}.parquet"
        rows = shared.parquet_rows(path)
        if rows is None or not shared.exists(records_path(path)):
            raise CuratorError(
                "checkpoint_output_mismatch",
                f"partition {sid} is recorded complete but {path} or "
                f"{records_path(path).name} is missing; "
                "use a new checkpoint_path or remove the old one",
            )
        parts.append((sid, rows))
    return parts


def _derive(flow: FlowContext) -> dict[str, Any]:
    c = flow.corpus
    return {"input": c.input, "text_field": c.text_field, "id_from": c.id_field,
            "id_fields": c.id_fields, "id_prefix": c.id_prefix, "source_from": c.source_field,
            "source": c.source_value, "keep_fields": c.metadata_fields or None}


def _produces(config: dict[str, Any]) -> CorpusView:
    return CorpusView(glob=f"{config['output_dir']}/part_*.jsonl", text_field="text",
                      id_field="id", source_field="source")


def _funnel(r: IngestReport) -> Funnel:
    """Raw records in, canonical documents out, each rejection reason a loss."""
    reasons = r.rejections_by_reason
    if reasons is None:
        raise MissingCount("rejections_by_reason")
    losses = [Loss(f"rejected: {k}", v) for k, v in reasons.items()]
    return [FunnelRow("ingest", "ingest (raw records → canonical shards)",
                      need(r.documents_seen, "documents_seen"),
                      need(r.documents_accepted, "documents_accepted"), losses)], []


SPEC = StepSpec(
    key="ingest",
    url_keys=("input", "output_dir"),
    help="Ingest a raw JSONL/Parquet corpus into canonical shards with an ingest report.",
    config=IngestConfig,
    run=run_ingest,
    phases=(Phase("parse", "parse", "ingest_parse.seen"),
            Phase("duplicates", "find duplicates", "ingest_duplicates.ids"),
            Phase("rejections", "write duplicate rejections", "ingest_duplicate_rejections.rows"),
            Phase("shards", "write shards", "ingest_shard_writer.written")),
    output_subdir="ingested",
    completion_name=lambda cfg: REPORT_NAME,
    input_key="input",
    derive=_derive,
    model=IngestReport,
    funnel=_funnel,
    render=render,
    provides=(Port("corpus", "corpus", _produces),),
    artifacts={"prepared": ""},
    reads_parquet=True,
)
