"""curate decontaminate: remove training documents that overlap a holdout set.

One straight line:

1. refuse what cannot be right before anything is written: no holdout, inputs that
   match nothing, a holdout whose ids are missing or repeated, identity key spaces that
   cannot meet (``identity_key_spaces_disjoint``);
2. in the driver: read the holdout once (its ids, fingerprint, key fields and, in the
   same read, the digest of its bytes; no text is kept);
3. holdout (engine pass, one unit per holdout partition) and holdout_index (one unit):
   the holdout normalised, shingled and indexed by units into ``.npy`` files in the
   work directory (:mod:`curator.decontamination.holdout`);
4. scan (engine pass, one unit per source partition): each training partition against
   the index, kept documents into ``part_<i>.jsonl``, removed ones with the proof into
   ``removed/part_<i>.jsonl``;
5. ids (one unit per bucket of the exchange) and fingerprint (one unit): the training
   ids unique and fingerprinted on workers; then the holdout's bytes unchanged
   (``holdout_modified``, exit 3), then ``decontamination_report.json``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from curator import models
from curator.audit.decontamination import check_decontamination
from curator.config import ByteSizeSpelling, ConfigBlock, CorpusStepConfig, Int64, Real
from curator.corpus.formats import (
    JSONL_EXTENSIONS,
    PARQUET_NAMES,
    is_compressed,
    is_parquet,
    shard_name,
    summary_path,
    written_summary,
)
from curator.corpus.reading import iter_records, read_bytes, split_lines
from curator.corpus.records import MISSING_ID, RecordSpec, Rejection, classify_line
from curator.decontamination.holdout import HoldoutStage, IndexMergeStage
from curator.decontamination.ids import FingerprintStage, TrainIdStage, fingerprint_file
from curator.decontamination.ids import summarise as summarise_ids
from curator.decontamination.index import MinHashParams, banding_recall
from curator.decontamination.report import REPORT_NAME, SCHEMA_VERSION, build_report, render
from curator.decontamination.stage import Rules, ScanStage, scan_work_file
from curator.decontamination.text import Normalization, Shingling, identity_key
from curator.errors import CuratorError
from curator.exchange import BucketPartitioning, Exchange, choose_buckets
from curator.execution import Executor
from curator.io import shared, storage
from curator.io.partitioning import FilePartitioningStage, parse_size, resolve_input_files
from curator.io.writers import safe_name
from curator.models import DecontaminationReport
from curator.stages import OneUnit
from curator.steps.base import ProgressHook, StepRun, partition_ids
from curator.steps.funnel import Funnel, FunnelRow, Loss, MissingCount, need, skips
from curator.steps.spec import CorpusView, FlowContext, Phase, Port, Problem, StepSpec

#: training records read per file by the refusal that compares the key spaces, from at
#: most its first KEY_SAMPLE_BYTES, file after file until a key field meets the
#: holdout's: the driver reads that much of one file when they meet, of every training
#: file only when it refuses (it read every file's head until 5 December: 1.6 MB of the
#: 200 MB cluster benchmark, bench/cluster_driver_io.py)
KEY_SAMPLE = 200
KEY_SAMPLE_BYTES = 1 << 16
#: the keys that may name an fsspec URL (docs/storage.md)
URL_KEYS = ("train_glob", "holdout_glob", "holdout", "output_dir")


class NormalizationConfig(ConfigBlock):
    nfc: bool = True
    casefold: bool = True
    collapse_whitespace: bool = True
    strip_punctuation: bool = True


class MinHashConfig(ConfigBlock):
    seed: Int64 = Field(42, ge=0)
    char_ngrams: Int64 = Field(24, ge=1)
    num_bands: Int64 = Field(20, ge=1)
    minhashes_per_band: Int64 = Field(13, ge=1)


class ContainmentConfig(ConfigBlock):
    enabled: bool = True
    threshold: Real = Field(0.8, gt=0, le=1)
    min_shingles: Int64 = Field(25, ge=1, description=(
        "a holdout document shorter than this many shingles is never removed by containment"))


class DecontaminationConfig(CorpusStepConfig):
    """Configuration of ``curate decontaminate`` (the reference's keys and this project's
    ``candidates``, ``containment``, ``word_ngrams``, ``partition_size``; see
    docs/decontamination.md)."""

    train_glob: str | list[str]
    holdout_glob: str | list[str] | None = None
    holdout: str | list[str] | None = Field(None, description=(
        "the flow's name of ``holdout_glob`` (``steps.decontamination.holdout``)"))
    output_dir: str = "./output/decontaminated"
    id_field: str | None = None
    text_field: str = "text"
    source_field: str | None = Field(None, description=(
        "passed on to the next step (the corpus view)"))
    threshold: Real = Field(0.8, gt=0, le=1)
    shingle_kind: Literal["char", "word"] = "char"
    word_ngrams: Int64 = Field(8, ge=1)
    normalization: NormalizationConfig = NormalizationConfig()
    minhash: MinHashConfig = MinHashConfig()
    candidates: Literal["exact", "minhash"] = "exact"
    containment: ContainmentConfig = ContainmentConfig()
    prefer_id_field: bool = False
    shared_id_space: bool = True
    work_dir: str | None = Field(None, description=(
        "where the run's work files go (the holdout index, per-partition scan results): "
        "``<work_dir>/<output dir's name>-<digest of its path>/``, so several runs can share "
        "one ``work_dir``; default ``<output_dir>/.decontamination-work``"))
    skip_similarity: bool = False
    partition_size: ByteSizeSpelling = "64MB"

    @property
    def holdout_files_spec(self) -> str | list[str] | None:
        return self.holdout_glob if self.holdout_glob is not None else self.holdout

    def preflight(self, flow: FlowContext | None = None) -> list[Problem]:
        # object storage: the inputs and output_dir may be URLs, work_dir stays local
        # (docs/storage.md)
        problems: list[Problem] = self.url_problems()
        if not self.holdout_files_spec:
            where = "steps.decontamination.holdout" if flow is not None else "holdout_glob"
            problems.append(("decontamination_needs_a_holdout",
                             f"{where} is required: the holdout (evaluation) documents the "
                             "training corpus is decontaminated against"))
        if self.holdout_glob is not None and self.holdout is not None \
                and self.holdout_glob != self.holdout:
            problems.append(("config_error", "holdout and holdout_glob name different files: "
                             "set one"))
        if not self.id_field:
            problems.append(("id_field_missing_or_duplicated",
                             "id_field is required (unique per split)"
                             + (": set corpus.id_field or enable ingest" if flow else "")))
        return problems

    def shingling(self) -> Shingling:
        n = self.normalization
        size = self.word_ngrams if self.shingle_kind == "word" else self.minhash.char_ngrams
        return Shingling(self.shingle_kind, size,
                         Normalization(n.nfc, n.casefold, n.collapse_whitespace,
                                       n.strip_punctuation))

    def rules(self) -> Rules:
        m = self.minhash
        return Rules(threshold=self.threshold, containment=self.containment.enabled,
                     containment_threshold=self.containment.threshold,
                     containment_min_shingles=self.containment.min_shingles,
                     candidates=self.candidates, skip_similarity=self.skip_similarity,
                     prefer_id_field=self.prefer_id_field,
                     shared_id_space=self.shared_id_space,
                     minhash=MinHashParams(m.seed, m.num_bands, m.minhashes_per_band))


def run_decontamination(
    config: DecontaminationConfig,
    executor: Executor | None = None,
    on_progress: ProgressHook | None = None,
) -> dict[str, Any]:
    """Run the decontamination; return ``decontamination_report.json`` (also written)."""
    return DecontaminationRun(config, executor, on_progress).run()


def ids_fingerprint(ids: list[str]) -> str:
    """The spec's split fingerprint: sha256 over the sorted unique ids, each then ``\\0``."""
    h = hashlib.sha256()
    for i in sorted(set(ids)):
        h.update(i.encode("utf-8", "surrogatepass") + b"\0")
    return "sha256:" + h.hexdigest()


def files_digest(files: list[str]) -> str:
    """sha256 over the files' names and bytes, in sorted order (what ``holdout_modified``
    compares, and what the audit checker recomputes). A file may be an object
    (``s3://...``): its bytes are read again, not taken from its ETag."""
    # a loop, not hashlib.file_digest: one digest over several files and their names
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(_name_bytes(name))
        _digest_bytes_of(name, h)
        h.update(b"\0")
    return "sha256:" + h.hexdigest()


def _name_bytes(name: str) -> bytes:
    return name.encode("utf-8", "surrogatepass") + b"\0"


def _digest_bytes_of(name: str, digest: Any) -> None:
    """``digest`` takes in the file's bytes as stored (compressed or not), 1 MiB at a time."""
    with storage.open_file(name) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)


def digested_records(files: list[str], spec: RecordSpec, digest: Any
                     ) -> Iterator[tuple[str, int, dict[str, Any] | Rejection]]:
    """``(file, offset, record)`` of every line of ``files`` (sorted), while ``digest``
    (a sha256) takes in what :func:`files_digest` would: one read of an uncompressed
    file for both (the parser reads a file whole anyway), two of a compressed one."""
    for name in sorted(files):
        digest.update(_name_bytes(name))
        if is_compressed(name):
            _digest_bytes_of(name, digest)
            records = ((o, r) for o, _, r in iter_records(name, None, spec))
        else:
            data = read_bytes(name)
            digest.update(data)
            records = ((o, classify_line(line, spec)) for o, line in split_lines(data, 0))
        for offset, record in records:
            yield name, offset, record
        digest.update(b"\0")


def work_folder(work_dir: Path, out: Path) -> Path:
    """The run's folder under a user's ``work_dir``: one per output directory."""
    digest = hashlib.sha256(str(out).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return work_dir.resolve() / f"{safe_name(out.name, 60)}-{digest}"


class DecontaminationRun(StepRun):
    """One decontamination run (:class:`~curator.steps.base.StepRun` keeps the order)."""

    schema_version = SCHEMA_VERSION
    config: DecontaminationConfig

    def __init__(self, config: DecontaminationConfig, executor: Executor | None = None,
                 on_progress: ProgressHook | None = None) -> None:
        super().__init__(config, executor, on_progress)
        if config.work_dir:
            self.work = work_folder(Path(config.work_dir), self.out)
        self.removed_dir = self.out / "removed"
        self.report_path = self.out / REPORT_NAME
        self.files: list[str] = []
        self.holdout_files: list[str] = []
        self.holdout_split: dict[str, Any] = {}
        self.holdout_key_fields: dict[str, int] = {}
        self.scans: list[dict[str, Any]] = []
        self.shards: list[dict[str, Any]] = []
        self.train_split: dict[str, Any] = {"documents": 0, "fingerprint": None}
        self.warnings: list[dict[str, str]] = []

    # -- the straight line -------------------------------------------------------------
    def refuse(self) -> None:
        cfg = self.config
        if self.output_url and cfg.work_dir:
            raise CuratorError(
                "config_error",
                f"{self.step_id}: work_dir {cfg.work_dir!r} is a local folder, but "
                f"output_dir {self.output_url} is on object storage: every node then reads "
                "and writes the work files through it (<output_dir>/.decontamination-work, "
                "docs/cluster.md); leave work_dir unset")
        self.files = self._resolve(cfg.train_glob, "train_glob")
        self.holdout_files = self._resolve(cfg.holdout_files_spec, "holdout_glob")
        overlap = set(self.files) & set(self.holdout_files)
        if overlap:
            raise CuratorError("config_error", f"train_glob and holdout_glob both match "
                               f"{sorted(overlap)[:3]}")
        with storage.store_errors(f"{self.step_id}: reading the holdout and the training "
                                  "files", storage.any_remote([*self.files,
                                                               *self.holdout_files])):
            self._read_holdout()
            self._check_key_spaces()
        self.partitions = FilePartitioningStage(file_paths=self.files,
                                                blocksize=cfg.partition_size)

    def _index_holdout(self) -> tuple[Path, dict[str, Any]]:
        """The holdout phases (:mod:`curator.decontamination.holdout`); return the index's
        folder and the meta a scan checks it against."""
        cfg = self.config
        rules, shingling = cfg.rules(), cfg.shingling()
        meta: dict[str, Any] = {"kind": cfg.candidates, "shingling": shingling.describe()}
        if cfg.candidates == "minhash":
            mh = rules.minhash
            meta["minhash"] = {"seed": mh.seed, "num_bands": mh.num_bands,
                               "minhashes_per_band": mh.minhashes_per_band}
        else:
            meta["min_fraction"] = rules.min_fraction
        parts = FilePartitioningStage(file_paths=self.holdout_files,
                                      blocksize=cfg.partition_size)
        self.phase("holdout", parts, HoldoutStage(
            records=self._spec(), shingling=shingling, kind=cfg.candidates,
            minhash=rules.minhash, min_fraction=rules.min_fraction,
            skip_similarity=cfg.skip_similarity, prefer_id_field=cfg.prefer_id_field,
            shared_id_space=cfg.shared_id_space, work_dir=str(self.work)))
        index_dir = self.work / "index"
        self.phase("holdout_index", OneUnit(files=list(self.holdout_files)), IndexMergeStage(
            parts=partition_ids(parts), kind=cfg.candidates, meta=meta,
            work_dir=str(self.work), index_dir=str(index_dir)))
        return index_dir, meta

    def execute(self) -> None:
        cfg = self.config
        shingling = cfg.shingling()
        index_dir, index_meta = self._index_holdout()
        sids = partition_ids(self.partitions)
        ids = Exchange.open(self.work / "exchange-ids", choose_buckets(
            len(sids) * (parse_size(cfg.partition_size) or 1 << 26),
            cfg.execution.exchange_buckets))
        self.removed_dir.mkdir(parents=True, exist_ok=True)
        stage = ScanStage(
            records=RecordSpec(text_field=cfg.text_field, id_field=cfg.id_field,
                               require_id=True),
            shingling=shingling, rules=cfg.rules(), index_dir=str(index_dir),
            index_meta=index_meta, work_dir=str(self.work), output_dir=str(self.out),
            removed_dir=str(self.removed_dir), index={sid: i for i, sid in enumerate(sids)},
            ids=ids)
        self.phase("scan", self.partitions, stage)
        self.scans = [json.loads(shared.localize(scan_work_file(self.work, sid)).read_text("utf-8"))
                      for sid in sids]
        # the training ids: unique, and fingerprinted, one bucket at a time
        id_work = self.work / "ids"
        self.phase("ids", BucketPartitioning(exchange=ids),
                   TrainIdStage(ids=ids, work_dir=str(id_work)))
        found = summarise_ids(id_work, ids.buckets)
        if found.repeated:
            raise CuratorError("id_field_missing_or_duplicated",
                               f"{found.repeated} training ids occur more than once "
                               f"({found.examples}): id_field {cfg.id_field!r} must be unique")
        self.phase("fingerprint", OneUnit(files=[str(id_work)]),
                   FingerprintStage(work_dir=str(id_work), buckets=ids.buckets))
        self.train_split = {"documents": found.documents, "fingerprint": shared.localize(
            fingerprint_file(id_work)).read_text("utf-8")}
        self.shards = [s for s in (self._shard(i) for i in range(len(sids))) if s is not None]
        with storage.store_errors(f"{self.step_id}: reading the holdout again",
                                  storage.any_remote(self.holdout_files)):
            after = files_digest(self.holdout_files)
        self.holdout_split["content_digest_after"] = after
        if after != self.holdout_split["content_digest"]:
            self.holdout_split["modified"] = True
            raise CuratorError("holdout_modified",
                               f"the holdout files changed during the run "
                               f"({self.holdout_split['content_digest']} before, {after} "
                               "after): the holdout is read-only")
        unverifiable = sum(int(s["counts"].get("unverifiable_pairs", 0)) for s in self.scans)
        if unverifiable:
            self.warnings.append({"id": "unverifiable_pairs", "message":
                                  f"{unverifiable} pairs matched by identity could not be "
                                  "verified: a document is shorter than one shingle"})
        n_in = sum(int(s["counts"].get("documents", 0)) for s in self.scans)
        if n_in and n_in == sum(int(s["counts"].get("removed", 0)) for s in self.scans):
            self.warnings.append({"id": "everything_removed", "message":
                                  f"every training document ({n_in}) overlaps the holdout and "
                                  "was removed: is the holdout the training corpus itself?"})

    def output_dirs(self) -> list[Path]:
        return [self.out, self.removed_dir]

    def config_extra(self) -> dict[str, Any]:
        """The holdout's bytes: a run is never resumed against another holdout."""
        return {"holdout_content_digest": self.holdout_split.get("content_digest")}

    def clear_outputs(self) -> None:
        for p in self.out.glob("part_*.jsonl"):
            p.unlink()
        shutil.rmtree(self.removed_dir, ignore_errors=True)
        self.report_path.unlink(missing_ok=True)

    # -- refusals ----------------------------------------------------------------------
    def _resolve(self, spec: Any, key: str) -> list[str]:
        try:
            found = resolve_input_files(spec, JSONL_EXTENSIONS) if spec else []
        except CuratorError as exc:  # a path named outright that does not exist
            if exc.error_id != "input_matched_no_files":
                raise
            raise CuratorError(f"{key}_no_matches", f"{key}: {exc.message}") from exc
        found = self.outside_output([f for f in found if not f.lower().endswith(PARQUET_NAMES)],
                                    key, spec)
        if not found:
            raise CuratorError(f"{key}_no_matches", f"{key} {spec!r} matches no JSONL files")
        return found

    def _spec(self) -> RecordSpec:
        return RecordSpec(text_field=self.config.text_field, id_field=self.config.id_field,
                          require_id=True)

    def _read_holdout(self) -> None:
        cfg = self.config
        ids: list[str] = []  # the holdout's, to refuse a repeated one before any work
        fields: dict[str, int] = {}
        skipped: dict[str, int] = {}
        digest = hashlib.sha256()  # files_digest's, in the same read
        for path, offset, record in digested_records(self.holdout_files, self._spec(), digest):
            if type(record) is Rejection:
                if record.reason == MISSING_ID:
                    raise CuratorError("id_field_missing_or_duplicated",
                                       f"{path} at byte {offset}: a holdout record has "
                                       f"no {cfg.id_field!r}")
                skipped[record.reason] = skipped.get(record.reason, 0) + 1
                continue
            doc_id = str(record[cfg.id_field])
            text = record[cfg.text_field]
            field = identity_key(record, doc_id, text, "holdout", cfg.prefer_id_field,
                                 cfg.shared_id_space)[0]
            fields[field] = fields.get(field, 0) + 1
            ids.append(doc_id)
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            dups = sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
            raise CuratorError("id_field_missing_or_duplicated",
                               f"{len(dups)} holdout ids occur more than once ({dups[:3]})")
        if not ids:
            raise CuratorError("holdout_empty", f"holdout_glob {cfg.holdout_files_spec!r} "
                               "holds no documents")
        self.holdout_key_fields = dict(sorted(fields.items()))
        self.holdout_split = {
            "documents": len(ids), "fingerprint": ids_fingerprint(ids),
            "content_digest": "sha256:" + digest.hexdigest(),
            "unparsable_lines": skipped.get("unparsable_line", 0),
            "skipped_non_mapping": skipped.get("not_an_object", 0),
            "skipped_missing_text": sum(skipped.get(r, 0) for r in
                                        ("missing_text", "text_not_a_string", "empty_text")),
            "modified": False,
        }
        if skipped:  # a person must see it: overlap with a skipped line is never found
            why = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items()))
            n = sum(skipped.values())
            self.warnings.append({"id": "holdout_lines_skipped", "message":
                                  f"{n} holdout line{'s were' if n != 1 else ' was'} skipped "
                                  f"({why}): "
                                  "a training document that overlaps one of them is not "
                                  "removed; fix the holdout file"})

    def _check_key_spaces(self) -> None:
        """Refuse when no training key field can meet a holdout key field (read from the
        first records of each training file, file after file until one can: a corpus
        whose key spaces meet costs the driver the head of one file, not of every file)."""
        cfg = self.config
        fields: set[str] = set()
        holdout = set(self.holdout_key_fields)
        for path in self.files:
            for n, (_, _, record) in enumerate(_head_records(path, self._spec())):
                if n >= KEY_SAMPLE:
                    break
                if type(record) is Rejection:
                    continue
                fields.add(identity_key(record, str(record[cfg.id_field]),
                                        record[cfg.text_field], "train", cfg.prefer_id_field,
                                        cfg.shared_id_space)[0])
            if fields & holdout:
                return
        if fields:
            raise CuratorError(
                "identity_key_spaces_disjoint",
                f"the training documents are keyed by {sorted(fields)}, the holdout's by "
                f"{sorted(self.holdout_key_fields)}: no identity can match (give both splits "
                "the same URL or id field, or set prefer_id_field: true"
                + ("" if cfg.shared_id_space else
                   ", with shared_id_space: true (it is false: ids never match across splits)")
                + ")")

    # -- artifacts ---------------------------------------------------------------------
    def _shard(self, index: int) -> dict[str, Any] | None:
        return written_summary(self.work, self.out / shard_name(index))

    def _written_shards(self) -> list[Path]:
        """The shards a failed run's partitions wrote, on this disk or any node's."""
        left = shared.localize_dir(summary_path(self.work, "x").parent)
        names = {p.name for p in self.out.glob("part_*.jsonl")}
        names |= {p.name[:-len(".json")] for p in left.glob("part_*.jsonl.json")}
        return [self.out / n for n in sorted(names)
                if n[5:-6].isdigit()]

    def params(self) -> dict[str, Any]:
        cfg = self.config
        s = cfg.shingling()
        m = cfg.minhash
        params: dict[str, Any] = {
            "threshold": cfg.threshold, "shingle_kind": s.kind, "shingle_size": s.size,
            "normalization": cfg.normalization.model_dump(), "minhash": m.model_dump(),
            "candidates": cfg.candidates, "containment": cfg.containment.model_dump(),
            "prefer_id_field": cfg.prefer_id_field, "shared_id_space": cfg.shared_id_space,
            "skip_similarity": cfg.skip_similarity,
        }
        if cfg.candidates == "minhash":
            params["expected_recall"] = round(banding_recall(cfg.threshold, m.num_bands,
                                                             m.minhashes_per_band), 6)
        return params

    def artifacts(self) -> list[tuple[Path | None, dict[str, Any]]]:
        cfg = self.config
        scans = self.scans
        if not self.completed and not scans:  # what the completed partitions left
            scan_dir = shared.localize_dir(self.work / "scan")  # any node's
            found = sorted(scan_dir.glob("*.json")) if scan_dir.is_dir() else []
            scans = [json.loads(p.read_text("utf-8")) for p in found]
        shards = self.shards if self.completed else [
            s for s in (self._shard(int(p.stem[5:])) for p in self._written_shards())
            if s is not None]
        paths = {"train_glob": cfg.train_glob, "train_files": self.files,
                 "holdout_glob": cfg.holdout_files_spec, "holdout_files": self.holdout_files,
                 "output_dir": str(self.out), "removed_dir": str(self.removed_dir),
                 "id_field": cfg.id_field, "text_field": cfg.text_field}
        report = build_report(
            params=self.params(), splits={"train": self.train_split,
                                          "holdout": self.holdout_split},
            scans=scans, holdout_key_fields=self.holdout_key_fields, paths=paths,
            producer=self.producer(), completed=self.completed, error=self.error_block(),
            shards=shards, warnings=self.warnings)
        return [(self.report_path, models.build(DecontaminationReport, report))]


def _head_records(path: str, spec: RecordSpec
                  ) -> Iterator[tuple[int, bytes | None, dict[str, Any] | Rejection]]:
    """The records of a training file's first ``KEY_SAMPLE_BYTES`` (a compressed file:
    all of it). An object is read with one ranged GET, not whole."""
    if not storage.is_remote(path) or is_compressed(path) or is_parquet(path):
        head = None if is_compressed(path) else (0, KEY_SAMPLE_BYTES)  # not the whole file
        yield from iter_records(path, head, spec)
        return
    data = storage.read(path, 0, KEY_SAMPLE_BYTES)
    if len(data) == KEY_SAMPLE_BYTES:  # whole lines only
        data = data[:data.rfind(b"\n") + 1]
    for offset, line in split_lines(data):
        yield offset, line, classify_line(line, spec)


def _derive(flow: FlowContext) -> dict[str, Any]:
    return flow.reads.keys("train_glob")


def _produces(config: dict[str, Any]) -> CorpusView:
    return CorpusView(glob=f"{config['output_dir']}/part_*.jsonl",
                      text_field=config.get("text_field", "text"),
                      id_field=config.get("id_field"), source_field=config.get("source_field"))


def _depends_on(config: dict[str, Any]) -> list[str]:
    spec = config.get("holdout_glob") or config.get("holdout")
    try:
        return resolve_input_files(spec, JSONL_EXTENSIONS) if spec else []
    except CuratorError:
        return []


def _funnel(r: DecontaminationReport) -> Funnel:
    """Training documents in and out, the overlap by rule and the skipped records."""
    res, splits = r.result, r.splits
    if res is None or splits is None or splits.train is None:
        raise MissingCount("result or splits.train")
    skipped = skips(splits.train)
    losses = [Loss("holdout overlap: source identity only",
                   res.removed_by_group_identity_only or 0),
              Loss("holdout overlap: similarity only (jaccard/containment)",
                   res.removed_by_similarity_only or 0),
              Loss("holdout overlap: identity and similarity", res.removed_by_both or 0)]
    losses = [x for x in losses if x.documents] + skipped
    read = need(res.train_documents_in, "result.train_documents_in") \
        + sum(x.documents for x in skipped)
    return [FunnelRow("decontamination", "decontamination (holdout overlap removed)", read,
                      need(res.train_documents_out, "result.train_documents_out"),
                      losses)], []


SPEC = StepSpec(
    key="decontamination",
    url_keys=URL_KEYS,
    help="Remove training documents that overlap a holdout set (identity, Jaccard, "
         "containment), with the proof of each removal.",
    config=DecontaminationConfig,
    run=run_decontamination,
    phases=(Phase("holdout", "index the holdout", "holdout.documents"),
            Phase("holdout_index", "merge the holdout index", "holdout_index.documents"),
            Phase("scan", "decontaminate", "scan.documents"),
            Phase("ids", "check training ids", "train_ids.ids"),
            Phase("fingerprint", "fingerprint training ids", "ids_fingerprint.buckets")),
    output_subdir="decontaminated",
    completion_name=lambda cfg: REPORT_NAME,
    input_key="train_glob",
    derive=_derive,
    model=DecontaminationReport,
    funnel=_funnel,
    render=render,
    audit=check_decontamination,
    consumes=(Port("corpus", "corpus"), Port("holdout", "holdout")),
    provides=(Port("corpus", "corpus", _produces),),
    depends_on=_depends_on,
    artifacts={"decontaminated": ""},
    command="decontaminate",
)

__all__ = ["SPEC", "DecontaminationConfig", "files_digest", "ids_fingerprint",
           "run_decontamination"]
