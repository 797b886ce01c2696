"""curate profile: measure a corpus, propose candidate thresholds, write a summary.

One straight line (the reference's algorithm, on the engine):

1. populations (engine pass): documents per source, read counts and the
   order-independent ``corpus.fingerprint``;
2. allocation: per-source proportional, ``max_total_docs`` in all;
3. sample (engine pass): hash-bottom-k candidates per partition, merged into the
   global per-source bottom-k;
4. scores (engine pass): every selected signal over the sampled documents;
5. statistics, in one process over the sample in (source, rank) order:
   views, histograms, retention, bands, co-occurrence, policy simulation;
6. artifacts: ``profile_report.json`` (digest before the producer block),
   ``sample_manifest.json``, ``candidate_policies.yaml``, ``profile_summary.md``
   with its plots. The report is written last: it marks completion.

Every engine pass is resumable by source partition (``execution.checkpoint_path``);
the result does not depend on the executor, the worker count or interruptions.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import Field

from curator import models
from curator.config import ByteSizeSpelling, ConfigBlock, Int64, Real, StepConfig, TokenizerRef
from curator.corpus.fingerprint import FingerprintStage, merge_fingerprints
from curator.corpus.formats import JSONL_EXTENSIONS
from curator.corpus.langid import DEFAULT_MAX_CHARS, FastTextLangId
from curator.corpus.records import RecordSpec
from curator.corpus.sampling import allocate
from curator.errors import CuratorError
from curator.exchange import BucketPartitioning, Exchange, choose_buckets
from curator.execution import Executor
from curator.io import shared
from curator.io.partitioning import FilePartitioningStage, parse_size, resolve_input_files
from curator.langpack import LangPack
from curator.langpack.loader import blank_langpack_dir, load_langpack
from curator.models import ProfileReport
from curator.pipeline import PipelineResult
from curator.profile.passes import SampleStage, ScoreStage, SelectStage, work_file
from curator.profile.report import build_report, render, sample_manifest
from curator.signals.registry import REGISTRY, SignalSpec, missing_requirements
from curator.steps.base import ProgressHook, StepRun, partition_ids
from curator.steps.spec import (
    FlowContext,
    Phase,
    Port,
    Problem,
    StepSpec,
    in_output,
    without_sidecars,
)

log = logging.getLogger("curator.profile")

REPORT_NAME = "profile_report.json"
SAMPLE_MANIFEST = "sample_manifest.json"
SUMMARY_NAME = "profile_summary.md"
CANDIDATES_NAME = "candidate_policies.yaml"
PLOTS_DIR = "plots"
ARTIFACTS = (REPORT_NAME, SAMPLE_MANIFEST, SUMMARY_NAME, CANDIDATES_NAME)
#: the keys that may name an fsspec URL (docs/storage.md); the pack and model stay local
URL_KEYS = ("input_glob", "output_dir")



class BandSearch(ConfigBlock):
    min_keep_rate: Real = Field(0.80, ge=0, le=1)
    max_keep_rate: Real = Field(0.995, ge=0, le=1)


class Models(ConfigBlock):
    fasttext_langid: str | None = None
    tokenizer: TokenizerRef | None = None


class ProfileConfig(StepConfig):
    """Configuration of ``curate profile`` (keys and defaults of the reference)."""

    input_glob: str | list[str]
    output_dir: str = "./output/profile"
    language: str | None = None
    langpack_dir: str | None = None
    text_field: str = "text"
    source_field: str | None = "source"
    id_field: str | None = None
    signals: list[str] = Field(default_factory=list)
    max_total_docs: Int64 = Field(200_000, ge=0)
    seed: Int64 = 0
    band_search: BandSearch = BandSearch()
    models: Models = Models()
    partition_size: ByteSizeSpelling = "64MB"

    def preflight(self, flow: FlowContext | None = None) -> list[Problem]:
        problems: list[Problem] = []
        # object storage: input_glob and output_dir may be URLs (docs/storage.md)
        problems += self.url_problems()
        where = "corpus." if flow is not None else ""
        if blank_langpack_dir(self.langpack_dir):
            problems.append(("missing_langpack_dir",
                             f"{where}langpack_dir is blank: leave it unset for the packs "
                             "installed with curator, or name a directory"))
        if not self.language:
            problems.append(("missing_language",
                             f"{where}language is required (there is no default)"))
        if self.models.tokenizer is not None:
            problems.append(("config_error",
                             "models.tokenizer: no tokenizer backend is bundled yet; remove it "
                             "(token_count is then skipped)"))
        if self.models.fasttext_langid and not Path(self.models.fasttext_langid).is_file():
            problems.append(("config_error", f"models.fasttext_langid "
                             f"{self.models.fasttext_langid!r} not found"))
        return problems


def run_profile(
    config: ProfileConfig,
    executor: Executor | None = None,
    on_progress: ProgressHook | None = None,
) -> dict[str, Any]:
    """Profile the corpus; return the report (also written to ``profile_report.json``)."""
    return ProfileRun(config, executor, on_progress).run()


class ProfileRun(StepRun):
    """One profile run (:class:`~curator.steps.base.StepRun` keeps the order of things)."""

    schema_version = 1
    config: ProfileConfig

    def refuse(self) -> None:
        config = self.config
        assert config.language is not None  # preflight: missing_language
        self.pack = load_langpack(config.langpack_dir, config.language)
        self.specs, self.notes = select_signals(config.signals, self.pack,
                                                config.models.tokenizer is not None)
        files = without_sidecars(resolve_input_files(config.input_glob, JSONL_EXTENSIONS))
        self.files = [f for f in files if not self.inside_output(f)]
        if not self.files:
            raise CuratorError("empty_corpus", f"no JSONL files match {config.input_glob!r}")
        self.report: dict[str, Any] | None = None
        self.sample_manifest: dict[str, Any] = {}

    def clear_outputs(self) -> None:
        _clear_artifacts(self.out)

    def execute(self) -> None:
        config, files, work = self.config, self.files, self.work
        spec = RecordSpec(text_field=config.text_field, id_field=config.id_field,
                          source_field=config.source_field)
        root = _common_root(files)
        notes = self.notes
        if config.source_field is None:
            notes.append("source_field is not set: each shard file is its own source")
        partitions = FilePartitioningStage(file_paths=files, blocksize=config.partition_size)

        def phase(name: str, stage: Any) -> PipelineResult:
            return self.phase(name, partitions, stage)

        # 1. populations and the fingerprint
        phase("populations", FingerprintStage(spec=spec, work_dir=str(work), root=root))
        sids = partition_ids(partitions)
        census = merge_fingerprints(work, sids)
        corpus, populations = census.corpus_block(), census.populations
        corpus.update({"glob": config.input_glob, "file_count": len(files),
                       "source_field": config.source_field})
        if corpus["document_count"] == 0:
            raise CuratorError(
                "empty_corpus",
                f"no documents with a string {config.text_field!r} in {len(files)} files "
                f"({corpus['records_read']} records read)",
            )
        # 2. allocation; 3. sample
        allocations = allocate(populations, config.max_total_docs)
        buckets = choose_buckets(len(sids) * (parse_size(config.partition_size) or 1 << 26),
                                 config.execution.exchange_buckets)
        candidates = Exchange.open(work / "candidates", buckets)
        phase("sample", SampleStage(spec=spec, work_dir=str(work), seed=config.seed,
                                    allocations=allocations, candidates=candidates, root=root))
        self.phase("select", BucketPartitioning(exchange=candidates), SelectStage(
            candidates=candidates, allocations=allocations, work_dir=str(work)))
        # 4. scores
        langid = FastTextLangId.open(config.models.fasttext_langid, DEFAULT_MAX_CHARS)
        scored = phase("scores", ScoreStage(spec=spec, work_dir=str(work),
                                            signals=[s.name for s in self.specs],
                                            pack=self.pack, langid=langid))
        scores = pl.concat([pl.read_parquet(shared.localize(work_file(str(work), "scores", s,
                                                                      ".parquet")))
                            for s in sids], how="diagonal_relaxed")
        if scores.height:
            scores = scores.sort(["source", "rank", "file", "offset"])

        # 5. statistics; 6. the other artifacts (the report last, in artifacts())
        sampling = {"seed": config.seed, "max_total_docs": config.max_total_docs}
        self.report = build_report(sampling, config.band_search.model_dump(), self.pack,
                                   self.specs, notes, corpus, populations, allocations,
                                   scores, scored.stats, langid, self.step_id)
        self.sample_manifest = sample_manifest(sampling, populations, allocations, scores)

    def artifacts(self) -> list[tuple[Path | None, Any]]:
        producer = self.producer()
        producer["digest_covers"] = "every key except producer and profile_digest"
        if self.completed and self.report is not None:
            return [*_policy_and_summary(self.report, self.sample_manifest, self.out),
                    (self.out / REPORT_NAME,
                     models.build(ProfileReport, {**self.report, "producer": producer}))]
        _clear_artifacts(self.out)  # a failed profile leaves nothing that looks like a result
        return [(self.out / REPORT_NAME, models.build(ProfileReport, {
            "schema_version": self.schema_version, "step_id": self.step_id,
            "error": self.error_block(), "producer": producer}))]


def _clear_artifacts(out: Path) -> None:
    for name in ARTIFACTS:
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / PLOTS_DIR, ignore_errors=True)


def select_signals(
    names: list[str], pack: LangPack, has_tokenizer: bool
) -> tuple[list[SignalSpec], list[str]]:
    """The signals to compute: all the pack supports (``[]``), or those named."""
    capabilities = set(pack.capabilities) | ({"tokenizer"} if has_tokenizer else set())
    notes: list[str] = []
    if not names:
        chosen = []
        for spec in REGISTRY.values():
            unmet = missing_requirements(spec, capabilities)
            if unmet:
                notes.append(f"skipped {spec.name}: requires {unmet}")
                log.warning("skipped %s: requires %s", spec.name, unmet)
            else:
                chosen.append(spec)
        return chosen, notes
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise CuratorError("unknown_signal",
                           f"unknown signals {unknown}; known: {sorted(REGISTRY)}")
    unmet_named = {n: missing_requirements(REGISTRY[n], capabilities) for n in names}
    unmet_named = {n: u for n, u in unmet_named.items() if u}
    if unmet_named:
        raise CuratorError(
            "signal_requirements_unmet",
            "; ".join(f"{n} requires {u}" for n, u in unmet_named.items())
            + f" (pack {pack.language_tag} supports {sorted(pack.capabilities)})",
        )
    return [REGISTRY[n] for n in dict.fromkeys(names)], notes


def _common_root(files: list[str]) -> str:
    """The folder every input file is in. With no source field a document's source is
    its file relative to it, so the same files locally and on a bucket (``s3://b/raw/``)
    give the same sources: ``Path`` reads ``s3://b/raw/a.jsonl`` as ``s3:/b/raw/a.jsonl``
    on both sides of ``relative_to``."""
    import os

    root = os.path.commonpath([str(Path(f).parent) for f in files])
    return root


def _policy_and_summary(report: dict[str, Any], manifest: dict[str, Any], out: Path
                        ) -> list[tuple[Path, Any]]:
    """The profile's artifacts before its report: the sample manifest, the candidate
    policy and the summary (its plots are drawn into ``out/plots`` here)."""
    from curator.policy import build_candidate, candidate_bytes
    from curator.profile.plots import write_plots
    from curator.profile.summary import render_summary

    candidate = candidate_bytes(build_candidate(report), out / CANDIDATES_NAME)
    plots = write_plots(report, out)
    return [(out / SAMPLE_MANIFEST, manifest), (out / CANDIDATES_NAME, candidate),
            (out / SUMMARY_NAME, render_summary(report, plots))]


def _derive(flow: FlowContext) -> dict[str, Any]:
    return {**flow.reads.keys(), "language": flow.corpus.language,
            "langpack_dir": flow.corpus.langpack_dir}


SPEC = StepSpec(
    key="profile",
    url_keys=URL_KEYS,
    help="Profile a corpus: quality signals, candidate thresholds and a summary with plots.",
    config=ProfileConfig,
    run=run_profile,
    phases=(Phase("populations", "count sources", "fingerprint.documents"),
            Phase("sample", "sample", "profile_sample.candidates"),
            Phase("select", "select the sample", "profile_select.selected"),
            Phase("scores", "score", "profile_score.documents")),
    output_subdir="profile",
    completion_name=lambda cfg: REPORT_NAME,
    input_key="input_glob",
    derive=_derive,
    reports=(SAMPLE_MANIFEST,),
    model=ProfileReport,
    render=render,
    consumes=(Port("corpus", "corpus"),),
    provides=(Port("candidates", "candidates", in_output(CANDIDATES_NAME)),
              Port("summary", "summary", in_output(SUMMARY_NAME))),
    artifacts={"profile": "", "candidates": CANDIDATES_NAME, "profile_report": REPORT_NAME},
)
