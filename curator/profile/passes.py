"""The engine stages of ``curate profile`` after the kernel's fingerprint pass:
sample candidates, the sample's selection, scores.

The candidate and score passes run over the same source partitions as the fingerprint
pass (:class:`curator.corpus.fingerprint.FingerprintStage`, which counts the
populations). A partition's bottom-k candidates per source go through the exchange
keyed by source (:mod:`curator.exchange`); one unit per bucket merges its sources'
candidates file by file, never holding more than ``k`` rows per source beside one
file, and writes the selected documents back by partition
(``sample/<partition>/b<bucket>.parquet``), which the score pass reads. Every file is
written atomically before the engine records its unit complete, so a resumed run sees
every unit's.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from curator.corpus.fingerprint import text_digest
from curator.corpus.langid import LanguageModel
from curator.corpus.reading import iter_records
from curator.corpus.records import RecordSpec, Rejection, id_of, source_of
from curator.corpus.sampling import stable_uint64
from curator.exchange import BucketTask, Exchange
from curator.io import shared
from curator.io.writers import write_atomic
from curator.langpack import LangPack
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

SCORE_BATCH = 2048


@dataclass
class Doc:
    offset: int  # of the line, in the (decompressed) file
    source: str
    doc_id: str | None
    text: str


def iter_documents(path: str, rng: tuple[int, int] | None, spec: RecordSpec,
                   root: str = "") -> Iterator[Doc]:
    """The documents (accepted records) of one partition's file, as the fingerprint pass
    counted them; rejected lines are skipped (that pass counted them), and so is a file
    that cannot be read (counted there as damaged)."""
    shard = str(Path(path).relative_to(root)) if root else path
    try:
        for offset, _, record in iter_records(path, rng, spec):
            if type(record) is Rejection:
                continue
            yield Doc(offset, source_of(record, spec.source_field, shard),  # type: ignore[arg-type]
                      id_of(record, spec), record[spec.text_field])  # type: ignore[arg-type,index]
    except (OSError, EOFError, ValueError):
        return


def work_file(work_dir: str, phase: str, sid: str, suffix: str) -> Path:
    return Path(work_dir) / phase / f"{sid}{suffix}"


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

    spec: RecordSpec
    work_dir: str
    seed: int
    allocations: dict[str, int]
    candidates: Exchange
    root: str = ""  # with no source field, a document's source is its file relative to this
    name: str = "profile_sample"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        rows: dict[str, list] = {"source": [], "rank": [], "part": [], "file": [], "offset": []}
        for path in task.data:
            for doc in iter_documents(path, task.byte_range, self.spec, self.root):
                key = doc.doc_id if doc.doc_id is not None else text_digest(doc.text)
                rows["source"].append(doc.source)
                rows["rank"].append(stable_uint64(self.seed, key))
                rows["part"].append(sid)
                rows["file"].append(path)
                rows["offset"].append(doc.offset)
        frame = _bottom_k(pl.DataFrame(rows, schema=SAMPLE_SCHEMA), self.allocations)
        self.candidates.write(sid, frame, "source")
        self.stat_update("candidates", frame.height)
        return FileGroupTask(data=[], _metadata={"rows": frame.height})


def sample_folder(work_dir: str, sid: str) -> Path:
    """Where the selection units leave partition ``sid``'s share of the sample."""
    return Path(work_dir) / "sample" / sid


@dataclass
class SelectStage(ProcessingStage[BucketTask, FileGroupTask]):
    """The sample of one bucket of sources: bottom-k per source over every partition's
    candidates, merged one file at a time; written back by partition."""

    candidates: Exchange
    allocations: dict[str, int]
    work_dir: str
    name: str = "profile_select"

    def process(self, task: BucketTask) -> FileGroupTask:
        bucket = task.data
        kept = pl.DataFrame(schema=SAMPLE_SCHEMA)
        for path in self.candidates.files(bucket):
            more = pl.read_parquet(shared.localize(path)).cast(SAMPLE_SCHEMA)  # type: ignore[arg-type]
            kept = _bottom_k(pl.concat([kept, more]), self.allocations)
        for (part,), mine in kept.partition_by("part", as_dict=True,
                                               maintain_order=True).items():
            write_atomic(sample_folder(self.work_dir, str(part)) / f"b{bucket:05d}.parquet",
                         _parquet_bytes(mine))
        self.stat_update("selected", kept.height)
        return FileGroupTask(data=[], _metadata={"rows": kept.height})


def read_sample(work_dir: str, sid: str) -> pl.DataFrame:
    """Partition ``sid``'s share of the sample, in sample order (no file: none of its
    documents was selected)."""
    files = shared.listing(sample_folder(work_dir, sid), "*.parquet")
    frames = [pl.read_parquet(shared.localize(f)) for f in files]
    if not frames:
        return pl.DataFrame(schema=SAMPLE_SCHEMA)
    return pl.concat(frames).cast(SAMPLE_SCHEMA).sort(  # type: ignore[arg-type]
        ["source", "rank", "file", "offset"])


#: the score columns of the language-ID model's top label and its confidence
LANGUAGE, LANGUAGE_SCORE = "__language", "__language_score"

@dataclass
class ScoreStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Pass 3: score this partition's sampled documents with every selected signal."""

    spec: RecordSpec
    work_dir: str
    signals: list[str]
    pack: LangPack | None
    langid: LanguageModel | None = None  # adds LANGUAGE / LANGUAGE_SCORE columns
    name: str = "profile_score"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        out = work_file(self.work_dir, "scores", sid, ".parquet")
        sample = read_sample(self.work_dir, sid)
        if sample.is_empty():
            write_atomic(out, _parquet_bytes(pl.DataFrame(schema=SAMPLE_SCHEMA)))
            return FileGroupTask(data=[str(out)], _metadata={"rows": 0})
        wanted = {(f, o) for f, o in zip(sample["file"], sample["offset"], strict=True)}
        texts: dict[tuple[str, int], str] = {}
        for path in task.data:
            for doc in iter_documents(path, task.byte_range, self.spec):
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
