"""The holdout, indexed by units on the executor and read by the scan from storage.

Two phases before the scan, neither in the driver:

- **holdout** (:class:`HoldoutStage`, one unit per partition of the holdout files):
  reads its partition, normalises and shingles it and builds the partition's own index
  (:func:`curator.decontamination.index.build_index`: ``exact``'s prefixes ranked by
  the shingles' rarity *within the partition*, or ``minhash``'s band keys). It writes
  ``holdout/<source id>.npz`` (per document its shingle count, the shingles a candidate
  must share, its sorted shingle hashes, its identity key's hash; the partition's
  ``(key, document)`` pairs) and ``holdout/<source id>.parquet`` (per document its id,
  identity key and normalised text: what the scan reads only for a match).
- **holdout_index** (:class:`IndexMergeStage`, one unit): the partitions' pairs merged
  into the one sorted index the scan memory-maps (keys, CSR postings, the filter), the
  partitions' document arrays put back to back, and the identity keys' table (their
  sorted hashes, CSR postings), with the URL keys' hosts in ``index.json``.

A document's number is its place in the holdout (files in order, then bytes): the
partitions' counts added up. Any subset of a holdout document's shingles of the
prefix's size gives the same guarantee (no false negatives, see ``build_index``), so
ranking by rarity within a partition instead of the whole holdout only changes which
candidates the exact count then rejects, never a verdict; a holdout within one
partition gets today's index exactly.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from curator.corpus.reading import iter_records
from curator.corpus.records import RecordSpec, Rejection
from curator.decontamination.index import (
    HoldoutIndex,
    MinHashParams,
    assemble,
    build_index,
    save_index,
)
from curator.decontamination.text import Shingling, identity_key, normalize_many, url_hosts
from curator.exchange.keyhash import key_hash
from curator.io import shared
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

#: the per-partition arrays a holdout unit writes
PART_ARRAYS = ("sizes", "required", "doc_lengths", "doc_hashes", "pair_keys", "pair_docs",
               "key_hashes")


def part_files(work: str | Path, sid: str) -> tuple[Path, Path]:
    """``(arrays, documents)`` of one holdout partition."""
    folder = Path(work) / "holdout"
    return folder / f"{sid}.npz", folder / f"{sid}.parquet"


def key_hashes(keys: list[str]) -> np.ndarray:
    """The stable 64-bit hash of identity keys (:func:`curator.exchange.keyhash.key_hash`)."""
    if not keys:
        return np.empty(0, np.uint64)
    return key_hash(pl.Series(keys, dtype=pl.String))


@dataclass
class HoldoutStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """One partition of the holdout: its documents and its own index (module docstring).
    The driver has already refused what cannot be indexed (ids missing or repeated)."""

    records: RecordSpec
    shingling: Shingling
    kind: str
    minhash: MinHashParams
    min_fraction: float
    skip_similarity: bool
    prefer_id_field: bool
    shared_id_space: bool
    work_dir: str
    name: str = "holdout"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        ids: list[str] = []
        keys: list[str] = []
        texts: list[str] = []
        id_field, text_field = self.records.id_field or "id", self.records.text_field
        for path in task.data:
            for _, _, record in iter_records(path, task.byte_range, self.records):
                if type(record) is Rejection:
                    continue  # counted (and refused, for a missing id) by the driver
                doc_id = str(record[id_field])
                text = record[text_field]
                keys.append(identity_key(record, doc_id, text, "holdout", self.prefer_id_field,
                                         self.shared_id_space)[1])
                ids.append(doc_id)
                texts.append("" if self.skip_similarity else text)
        norms = normalize_many(texts, self.shingling.normalization)
        index = build_index(self.kind, self.shingling, norms, self.minhash, self.min_fraction)
        counts = np.diff(index.offsets)
        arrays = {"sizes": index.sizes, "required": index.required,
                  "doc_lengths": np.diff(index.doc_offsets), "doc_hashes": index.doc_hashes,
                  "pair_keys": np.repeat(index.keys, counts), "pair_docs": index.postings,
                  "key_hashes": key_hashes(keys)}
        arrays_path, docs_path = part_files(self.work_dir, task.source_id or "part")
        with atomic_file(arrays_path) as f:
            np.savez(f, **arrays)
        buf = io.BytesIO()
        pl.DataFrame({"id": ids, "key": keys, "norm": norms},
                     schema={"id": pl.String, "key": pl.String, "norm": pl.String}
                     ).write_parquet(buf, compression="zstd", compression_level=1)
        write_atomic(docs_path, buf.getvalue())
        self.stat_update("documents", len(ids))
        return FileGroupTask(data=[], _metadata={"rows": len(ids)})


@dataclass
class IndexMergeStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """The partitions' indexes merged into the one the scan maps (module docstring)."""

    parts: list[str]  # the holdout partitions' source ids, in holdout order
    kind: str
    meta: dict[str, Any]
    work_dir: str
    index_dir: str
    name: str = "holdout_index"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        loaded = []
        for sid in self.parts:
            with np.load(shared.localize(part_files(self.work_dir, sid)[0]),
                         allow_pickle=False) as z:
                loaded.append({name: z[name] for name in PART_ARRAYS})
        counts = np.array([len(p["sizes"]) for p in loaded], np.int64)
        starts = np.r_[0, np.cumsum(counts)].astype(np.int64)
        sizes = np.concatenate([p["sizes"] for p in loaded]).astype(np.int64)
        required = np.concatenate([p["required"] for p in loaded]).astype(np.int64)
        if self.kind == "minhash":
            doc_offsets, doc_hashes = np.zeros(1, np.int64), np.empty(0, np.uint64)
        else:
            lengths = np.concatenate([p["doc_lengths"] for p in loaded]).astype(np.int64)
            doc_offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
            doc_hashes = np.concatenate([p["doc_hashes"] for p in loaded]).astype(np.uint64)
        pair_keys = np.concatenate([p["pair_keys"] for p in loaded]).astype(np.uint64)
        pair_docs = np.concatenate([p["pair_docs"] + s for p, s in zip(loaded, starts[:-1],
                                                                         strict=True)])
        keys, offsets, postings, bitmap = assemble(pair_keys, pair_docs.astype(np.int64))
        id_keys, id_offsets, id_postings, _ = assemble(
            np.concatenate([p["key_hashes"] for p in loaded]).astype(np.uint64),
            np.arange(int(starts[-1]), dtype=np.int64), bitmap=False)
        hosts: set[str] = set()
        for sid in self.parts:
            frame = pl.read_parquet(shared.localize(part_files(self.work_dir, sid)[1]),
                                    columns=["key"])
            hosts |= url_hosts(k for k in frame["key"] if k.startswith("url:"))
        meta = {**self.meta, "documents": int(starts[-1]), "keys": len(keys),
                "parts": list(self.parts), "hosts": sorted(hosts)}
        index = HoldoutIndex(keys, offsets, postings, sizes, required, bitmap, doc_offsets,
                             doc_hashes, self.kind, meta, part_starts=starts,
                             id_keys=id_keys, id_offsets=id_offsets, id_postings=id_postings)
        save_index(index, Path(self.index_dir))
        self.stat_update("documents", int(starts[-1]))
        return FileGroupTask(data=[], _metadata={"rows": int(starts[-1])})


class HoldoutDocuments:
    """A worker's view of the holdout's documents: a partition's ids, keys and
    normalised texts read when a match first needs one of them."""

    def __init__(self, work_dir: str | Path, index: HoldoutIndex) -> None:
        self.work_dir = work_dir
        self.parts: list[str] = index.meta["parts"]
        self.starts = np.asarray(index.part_starts)
        self._loaded: dict[int, dict[str, list[str]]] = {}

    def _doc(self, h: int) -> tuple[dict[str, list[str]], int]:
        p = int(np.searchsorted(self.starts, h, side="right")) - 1
        if p not in self._loaded:
            frame = pl.read_parquet(shared.localize(part_files(self.work_dir,
                                                               self.parts[p])[1]))
            self._loaded[p] = {c: frame[c].to_list() for c in ("id", "key", "norm")}
        return self._loaded[p], h - int(self.starts[p])

    def id(self, h: int) -> str:
        part, i = self._doc(h)
        return part["id"][i]

    def key(self, h: int) -> str:
        part, i = self._doc(h)
        return part["key"][i]

    def norm(self, h: int) -> str:
        part, i = self._doc(h)
        return part["norm"][i]
