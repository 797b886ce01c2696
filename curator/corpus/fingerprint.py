"""The corpus fingerprint: an order- and sharding-independent digest of a corpus.

Each document contributes one key, ``f"{id}\\0{sha256hex(text)}"`` (or
``sha256hex(text)`` when there is no id). The digest is the sum of
``int(sha256(key))`` over all documents, modulo 2**256, reported with the count as
``"sha256:" + sha256(f"{count}:{total:064x}")``. A sum commutes, so the order of
documents and how they are split into shards or partitions do not matter, and
partial sums of partitions merge by addition. The profile records it; the filter
recomputes it with the same code to refuse a policy approved on another corpus.

:class:`FingerprintStage` is the engine pass that computes it: it reads every line of
a source partition through the kernel's record reader, so the same pass also counts
what every report says about the corpus (records read, rejections by reason, documents
per source). :func:`merge_fingerprints` adds the partitions up from disk.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.corpus.reading import iter_records
from curator.corpus.records import (
    NOT_A_RECORD,
    WITHOUT_TEXT,
    RecordSpec,
    Rejection,
    id_of,
    rejections_by_reason,
    source_of,
)
from curator.io import shared
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

MOD = 1 << 256


def text_digest(text: str) -> str:
    """sha256 hex of a document's text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint_key(doc_id: str | None, text_hex: str) -> str:
    return text_hex if doc_id is None else f"{doc_id}\0{text_hex}"


@dataclass
class RowDigest:
    """A running fingerprint: ``add`` keys, ``merge`` partial digests, read ``digest``."""

    count: int = 0
    total: int = 0

    def add(self, key: str) -> None:
        self.count += 1
        self.total = (self.total + int.from_bytes(
            hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest(), "big")) % MOD

    def merge(self, other: RowDigest) -> RowDigest:
        return RowDigest(self.count + other.count, (self.total + other.total) % MOD)

    def to_json(self) -> dict[str, object]:
        return {"count": self.count, "total": f"{self.total:064x}"}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RowDigest:
        return cls(int(data["count"]), int(str(data["total"]), 16))  # type: ignore[arg-type]

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(
            f"{self.count}:{self.total:064x}".encode()).hexdigest()


#: the engine stat of documents fingerprinted, as progress bars read it (stage name
#: "." "documents")
DOCUMENTS_STAT = "fingerprint.documents"
WORK_SUBDIR = "fingerprint"


def fingerprint_work_file(work_dir: str | Path, sid: str) -> Path:
    return Path(work_dir) / WORK_SUBDIR / f"{sid}.json"


@dataclass
class FingerprintStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Fingerprint one source partition: every line read and classified; documents (the
    accepted records) counted per source and added to a partial fingerprint; rejections
    counted by reason; files that cannot be read counted as damaged. Writes
    ``<work_dir>/fingerprint/<source id>.json``, atomically.

    A document's source is ``spec.source_field``'s value; with no source field, its
    file's path relative to ``root`` (each shard is its own source).
    """

    spec: RecordSpec
    work_dir: str
    root: str = ""
    name: str = "fingerprint"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        records_read = 0
        rejections: dict[str, int] = {}
        damaged: list[str] = []
        populations: dict[str, int] = {}
        digest = RowDigest()
        spec = self.spec
        for path in task.data:
            shard = str(Path(path).relative_to(self.root)) if self.root else path
            try:
                for _, _, record in iter_records(path, task.byte_range, spec):
                    records_read += 1
                    if type(record) is Rejection:
                        rejections[record.reason] = rejections.get(record.reason, 0) + 1
                        continue
                    source = source_of(record, spec.source_field, shard)  # type: ignore[arg-type]
                    populations[source] = populations.get(source, 0) + 1
                    digest.add(fingerprint_key(id_of(record, spec),  # type: ignore[arg-type]
                                               text_digest(record[spec.text_field])))
            except (OSError, EOFError, ValueError) as exc:
                damaged.append(f"{path}: {type(exc).__name__}: {exc}")
        out = fingerprint_work_file(self.work_dir, sid)
        write_atomic(out, json.dumps({
            "records_read": records_read,
            "rejections": rejections,
            "damaged": damaged,
            "populations": populations,
            "fingerprint": digest.to_json(),
        }, sort_keys=True))
        self.stat_update("documents", digest.count)
        return FileGroupTask(data=[str(out)], _metadata={"rows": digest.count})


@dataclass
class CorpusCount:
    """What :class:`FingerprintStage` found, over every partition."""

    records_read: int = 0
    rejections: dict[str, int] = field(default_factory=dict)
    damaged: list[str] = field(default_factory=list)
    populations: dict[str, int] = field(default_factory=dict)
    digest: RowDigest = field(default_factory=RowDigest)

    @property
    def fingerprint(self) -> str:
        return self.digest.digest

    @property
    def document_count(self) -> int:
        return self.digest.count

    def corpus_block(self) -> dict[str, Any]:
        """The counts every report's corpus block carries: ``records_read`` (non-blank
        lines), ``document_count``, ``rejections_by_reason``, ``unparsable_lines`` (lines
        that are not a JSON object: ``unparsable_line`` + ``not_an_object``),
        ``records_without_text`` (``missing_text`` + ``text_not_a_string`` +
        ``empty_text``), ``damaged_shards`` (and ``damaged``, when any),
        ``source_count`` and ``fingerprint``."""
        r = self.rejections
        block: dict[str, Any] = {
            "records_read": self.records_read,
            "records_without_text": sum(r.get(k, 0) for k in WITHOUT_TEXT),
            "unparsable_lines": sum(r.get(k, 0) for k in NOT_A_RECORD),
            "rejections_by_reason": rejections_by_reason(r),
            "damaged_shards": len(self.damaged),
            "document_count": self.document_count,
            "source_count": len(self.populations),
            "fingerprint": self.fingerprint,
        }
        if self.damaged:
            block["damaged"] = sorted(self.damaged)
        return block


def merge_fingerprints(work_dir: str | Path, sids: list[str]) -> CorpusCount:
    """The whole corpus's count and fingerprint, from the partitions' files on disk."""
    total = CorpusCount()
    for sid in sids:
        part = json.loads(shared.localize(fingerprint_work_file(work_dir, sid)).read_text())
        total.records_read += int(part["records_read"])
        for reason, n in part["rejections"].items():
            total.rejections[reason] = total.rejections.get(reason, 0) + int(n)
        total.damaged += part["damaged"]
        for source, n in part["populations"].items():
            total.populations[source] = total.populations.get(source, 0) + int(n)
        total.digest = total.digest.merge(RowDigest.from_json(part["fingerprint"]))
    total.populations = dict(sorted(total.populations.items()))
    return total
