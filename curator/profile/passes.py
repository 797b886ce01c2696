"""The engine stages of ``curate profile``: populations, sample candidates, scores.

All three run over the same source partitions (files, or byte ranges of large
files) and write one small file per partition under the step's work directory,
atomically, before the engine records the partition complete; the step merges
those files from disk, so a resumed run sees every partition.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from curator.filter.gates import LanguageModel
from curator.io.lines import iter_lines
from curator.io.writers import write_atomic
from curator.langpack import LangPack
from curator.profile.fingerprint import RowDigest, fingerprint_key, text_digest
from curator.profile.sampling import stable_uint64
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

MISSING_SOURCE = "__missing__"
SCORE_BATCH = 2048


@dataclass(frozen=True)
class DocumentSpec:
    """Which fields of a corpus record are the text, the id and the source."""

    text_field: str = "text"
    id_field: str | None = None
    source_field: str | None = "source"
    root: str = ""  # shard paths are reported relative to this when there is no source


@dataclass
class Doc:
    offset: int  # of the line, in the (decompressed) file
    source: str
    doc_id: str | None
    text: str


@dataclass
class ReadCounts:
    records_read: int = 0
    records_without_text: int = 0
    unparsable_lines: int = 0
    damaged_shards: int = 0
    damaged: list[str] = field(default_factory=list)


def _source_of(record: dict, spec: DocumentSpec, shard: str) -> str:
    if spec.source_field is None:
        return shard
    value = record.get(spec.source_field)
    return str(value) if value is not None else MISSING_SOURCE


def iter_documents(
    path: str, rng: tuple[int, int] | None, spec: DocumentSpec, counts: ReadCounts
) -> Iterator[Doc]:
    """The documents with a string text of one partition; every other line is counted."""
    try:
        lines = list(iter_lines(path, rng))
    except (OSError, EOFError, ValueError) as exc:
        counts.damaged_shards += 1
        counts.damaged.append(f"{path}: {type(exc).__name__}: {exc}")
        return
    shard = str(Path(path).relative_to(spec.root)) if spec.root else path
    for offset, line in lines:
        counts.records_read += 1
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            counts.unparsable_lines += 1
            continue
        if not isinstance(record, dict):
            counts.unparsable_lines += 1
            continue
        text = record.get(spec.text_field)
        if not isinstance(text, str):
            counts.records_without_text += 1
            continue
        doc_id = None
        if spec.id_field is not None and record.get(spec.id_field) is not None:
            doc_id = str(record[spec.id_field])
        yield Doc(offset, _source_of(record, spec, shard), doc_id, text)


def work_file(work_dir: str, phase: str, sid: str, suffix: str) -> Path:
    return Path(work_dir) / phase / f"{sid}{suffix}"


@dataclass
class PopulationStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Pass 1: documents per source, read counts, and a partial corpus fingerprint."""

    spec: DocumentSpec
    work_dir: str
    name: str = "profile_populations"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        counts = ReadCounts()
        populations: dict[str, int] = {}
        digest = RowDigest()
        for path in task.data:
            for doc in iter_documents(path, task.byte_range, self.spec, counts):
                populations[doc.source] = populations.get(doc.source, 0) + 1
                digest.add(fingerprint_key(doc.doc_id, text_digest(doc.text)))
        out = work_file(self.work_dir, "populations", sid, ".json")
        write_atomic(out, json.dumps({
            "records_read": counts.records_read,
            "records_without_text": counts.records_without_text,
            "unparsable_lines": counts.unparsable_lines,
            "damaged_shards": counts.damaged_shards,
            "damaged": counts.damaged,
            "populations": populations,
            "fingerprint": digest.to_json(),
        }, sort_keys=True))
        self.stat_update("documents", digest.count)
        return FileGroupTask(data=[str(out)], _metadata={"rows": digest.count})


def _bottom_k(frame: pl.DataFrame, allocations: dict[str, int]) -> pl.DataFrame:
    """Each source's ``k`` rows of smallest (rank, file, offset)."""
    if frame.is_empty():
        return frame
    k = pl.DataFrame({"source": list(allocations), "k": list(allocations.values())},
                     schema={"source": pl.String, "k": pl.Int64})
    return (
        frame.sort(["source", "rank", "file", "offset"])
        .join(k, on="source", how="inner")
        .filter(pl.int_range(pl.len()).over("source") < pl.col("k"))
        .drop("k")
    )


SAMPLE_SCHEMA = {"source": pl.String, "rank": pl.UInt64, "part": pl.String, "file": pl.String,
                 "offset": pl.Int64}


def _parquet_bytes(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf, compression="zstd", statistics=False)
    return buf.getvalue()


@dataclass
class SampleStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Pass 2: this partition's bottom-k candidates per source (a superset of its share)."""

    spec: DocumentSpec
    work_dir: str
    seed: int
    allocations: dict[str, int]
    name: str = "profile_sample"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        rows: dict[str, list] = {"source": [], "rank": [], "part": [], "file": [], "offset": []}
        counts = ReadCounts()
        for path in task.data:
            for doc in iter_documents(path, task.byte_range, self.spec, counts):
                key = doc.doc_id if doc.doc_id is not None else text_digest(doc.text)
                rows["source"].append(doc.source)
                rows["rank"].append(stable_uint64(self.seed, key))
                rows["part"].append(sid)
                rows["file"].append(path)
                rows["offset"].append(doc.offset)
        frame = _bottom_k(pl.DataFrame(rows, schema=SAMPLE_SCHEMA), self.allocations)
        out = work_file(self.work_dir, "candidates", sid, ".parquet")
        write_atomic(out, _parquet_bytes(frame))
        self.stat_update("candidates", frame.height)
        return FileGroupTask(data=[str(out)], _metadata={"rows": frame.height})


def select_sample(candidate_files: list[Path], allocations: dict[str, int]) -> pl.DataFrame:
    """The global sample: bottom-k per source over every partition's candidates."""
    frames = [pl.read_parquet(p) for p in candidate_files]
    frames = [f for f in frames if f.height]
    if not frames:
        return pl.DataFrame(schema=SAMPLE_SCHEMA)
    return _bottom_k(pl.concat(frames), allocations)


#: the score columns of the language-ID model's top label and its confidence
LANGUAGE, LANGUAGE_SCORE = "__language", "__language_score"

@dataclass
class ScoreStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Pass 3: score this partition's sampled documents with every selected signal."""

    spec: DocumentSpec
    work_dir: str
    signals: list[str]
    pack: LangPack | None
    langid: LanguageModel | None = None  # adds LANGUAGE / LANGUAGE_SCORE columns
    name: str = "profile_score"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        sample_path = work_file(self.work_dir, "sample", sid, ".parquet")
        out = work_file(self.work_dir, "scores", sid, ".parquet")
        sample = pl.read_parquet(sample_path) if sample_path.is_file() else None
        if sample is None or sample.is_empty():
            write_atomic(out, _parquet_bytes(pl.DataFrame(schema=SAMPLE_SCHEMA)))
            return FileGroupTask(data=[str(out)], _metadata={"rows": 0})
        wanted = {(f, o) for f, o in zip(sample["file"], sample["offset"], strict=True)}
        texts: dict[tuple[str, int], str] = {}
        counts = ReadCounts()
        for path in task.data:
            for doc in iter_documents(path, task.byte_range, self.spec, counts):
                if (path, doc.offset) in wanted:
                    texts[(path, doc.offset)] = doc.text
        ordered = [texts.get((f, o)) for f, o in zip(sample["file"], sample["offset"],
                                                     strict=True)]
        scores = self._score(ordered)
        self.stat_update("documents", len(ordered))
        parts = [sample, scores]
        if self.langid is not None:
            labels, conf = self.langid.predict([t or "" for t in ordered])
            parts.append(pl.DataFrame({LANGUAGE: labels, LANGUAGE_SCORE: conf},
                                      schema={LANGUAGE: pl.Utf8, LANGUAGE_SCORE: pl.Float64}))
        frame = pl.concat(parts, how="horizontal")
        write_atomic(out, _parquet_bytes(frame))
        return FileGroupTask(data=[str(out)], _metadata={"rows": frame.height})

    def _score(self, texts: list[str | None]) -> pl.DataFrame:
        from curator.signals.scoring import score_batch

        columns: dict[str, list[np.ndarray]] = {name: [] for name in self.signals}
        for start in range(0, len(texts), SCORE_BATCH):
            batch = texts[start:start + SCORE_BATCH]
            try:
                frame = score_batch(batch, self.signals, self.pack)
                for name in self.signals:
                    columns[name].append(frame[name].to_numpy().astype(np.float64))
                continue
            except Exception:  # one signal's failure must not cost the others: retry alone
                pass
            for name in self.signals:
                try:
                    values = score_batch(batch, [name], self.pack)[name].to_numpy()
                except Exception:
                    values = np.full(len(batch), np.nan)
                    self.stat_update(f"scoring_failures.{name}", len(batch))
                columns[name].append(values.astype(np.float64))
        return pl.DataFrame({
            name: np.concatenate(parts) if parts else np.zeros(0)
            for name, parts in columns.items()
        }, schema={name: pl.Float64 for name in self.signals})


def merge_populations(work: Path, sids: list[str]) -> tuple[dict[str, Any], dict[str, int]]:
    """The corpus block (counts, fingerprint) and per-source populations, from disk."""
    totals = {"records_read": 0, "records_without_text": 0, "unparsable_lines": 0,
              "damaged_shards": 0}
    populations: dict[str, int] = {}
    digest = RowDigest()
    damaged: list[str] = []
    for sid in sids:
        part = json.loads(work_file(str(work), "populations", sid, ".json").read_text())
        for key in totals:
            totals[key] += int(part[key])
        damaged += part["damaged"]
        for source, n in part["populations"].items():
            populations[source] = populations.get(source, 0) + int(n)
        digest = digest.merge(RowDigest.from_json(part["fingerprint"]))
    corpus: dict[str, Any] = {
        **totals,
        "document_count": digest.count,
        "source_count": len(populations),
        "fingerprint": digest.digest,
    }
    if damaged:
        corpus["damaged"] = sorted(damaged)
    return corpus, dict(sorted(populations.items()))
