"""The holdout's index, built by units (:mod:`curator.decontamination.holdout`) and
read by every scan worker.

Two kinds, one layout (a sorted key array and CSR postings of holdout document
indices), stored as ``.npy`` files in the step's work directory and memory-mapped by
the workers (never pickled: ``np.load(allow_pickle=False)``):

- ``exact``: the keys are the hashes of every shingle of every holdout document. A
  training document with Jaccard >= t (or containment >= c) to holdout document ``h``
  shares at least ``t * |S_h|`` (``c * |S_h|``) of ``h``'s shingles, so counting shared
  shingles per holdout document finds every such pair: no false negatives;
- ``minhash``: the keys are the holdout documents' LSH band keys (``num_bands`` bands of
  ``minhashes_per_band`` min-hashes, seeded). A pair of Jaccard ``s`` shares a band with
  probability ``1 - (1 - s**r)**b``: :func:`banding_recall`.

A filter over the keys lets the scan drop most shingles of a clean document with one
memory access before the sorted-key search: a blocked Bloom filter, two bits per key in
one 64-bit word (:func:`filter_test`), 16 to 32 bits per key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curator.decontamination.text import Shingling, _mix
from curator.errors import CuratorError
from curator.io import shared
from curator.io.writers import atomic_file, write_atomic

META = "index.json"
FILES = ("keys", "offsets", "postings", "sizes", "required", "bitmap", "doc_offsets",
         "doc_hashes", "part_starts", "id_keys", "id_offsets", "id_postings")
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class MinHashParams:
    seed: int = 42
    num_bands: int = 20
    minhashes_per_band: int = 13

    def coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(self.seed)
        n = self.num_bands * self.minhashes_per_band
        a = rng.integers(1, 2**63, size=n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        b = rng.integers(0, 2**63, size=n, dtype=np.uint64)
        return a, b


def banding_recall(similarity: float, bands: int, rows: int) -> float:
    """The chance that a pair of Jaccard ``similarity`` shares at least one band."""
    return 1.0 - (1.0 - similarity ** rows) ** bands


def signatures(hashes: np.ndarray, doc: np.ndarray, n_docs: int, mh: MinHashParams
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(band_keys[n_docs, bands], has_shingles[n_docs])`` from the shingle hashes of a
    batch (``doc`` sorted)."""
    bands, rows = mh.num_bands, mh.minhashes_per_band
    present = np.bincount(doc, minlength=n_docs) > 0
    keys = np.zeros((n_docs, bands), dtype=np.uint64)
    if not len(hashes):
        return keys, present
    a, b = mh.coefficients()
    hashes = _mix(hashes.copy())  # the shingle hashes' low bits are weak
    starts = np.flatnonzero(np.r_[True, doc[1:] != doc[:-1]])
    docs = doc[starts]
    sig = np.empty((len(docs), bands * rows), dtype=np.uint64)
    for p in range(bands * rows):
        sig[:, p] = np.minimum.reduceat(hashes * a[p] + b[p], starts)
    for band in range(bands):
        h = np.full(len(docs), np.uint64(band + 1), dtype=np.uint64)
        for r in range(rows):
            h = h * np.uint64(0x100000001B3) + sig[:, band * rows + r]
        keys[docs, band] = _mix(h)
    return keys, present


@dataclass
class HoldoutIndex:
    """Keys (sorted, unique), CSR postings into holdout documents, and per holdout
    document its number of unique shingles (``sizes``) and, for ``exact``, its sorted
    shingle hashes (``doc_offsets``/``doc_hashes``), to count shared shingles exactly."""

    def doc_shingles(self, h: int) -> np.ndarray:
        return self.doc_hashes[self.doc_offsets[h]:self.doc_offsets[h + 1]]

    keys: np.ndarray
    offsets: np.ndarray
    postings: np.ndarray
    sizes: np.ndarray
    required: np.ndarray  # exact: indexed shingles a candidate must share, per holdout doc
    bitmap: np.ndarray  # uint64 words of the blocked Bloom filter (filter_test)
    doc_offsets: np.ndarray  # exact: CSR of each holdout document's sorted shingle hashes
    doc_hashes: np.ndarray
    kind: str
    meta: dict[str, Any]
    # the merged index's: where each holdout partition's documents start, and the
    # identity keys' table (their sorted hashes, CSR postings of holdout documents)
    part_starts: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    id_keys: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    id_offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    id_postings: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def identity(self, hashes: np.ndarray) -> dict[int, list[int]]:
        """``{position: holdout documents}``: for each identity-key hash that some holdout
        key has, those documents, in holdout order (a caller compares the keys
        themselves: hashes may collide)."""
        if not len(self.id_keys) or not len(hashes):
            return {}
        at = np.minimum(np.searchsorted(self.id_keys, hashes), len(self.id_keys) - 1)
        hit = np.flatnonzero(self.id_keys[at] == hashes)
        return {int(i): [int(x) for x in self.id_postings[
            self.id_offsets[at[i]]:self.id_offsets[at[i] + 1]]] for i in hit}

    def maybe(self, hashes: np.ndarray) -> np.ndarray:
        """A mask of the hashes that may be keys (no false negatives)."""
        word, mask = filter_test(hashes, len(self.bitmap))
        return (self.bitmap[word] & mask) == mask

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(which, key_index)``: positions of ``hashes`` that are keys, and their key."""
        if not len(self.keys) or not len(hashes):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        cand = np.flatnonzero(self.maybe(hashes))
        which, kidx = self.search(hashes[cand])
        return cand[which], kidx

    def search(self, needles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(which, key_index)`` of the ``needles`` that are keys (no bitmap test)."""
        if not len(self.keys) or not len(needles):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        order = np.argsort(needles)  # sorted needles search ~3x faster (cache)
        at = np.empty(len(needles), dtype=np.int64)
        at[order] = np.searchsorted(self.keys, needles[order])
        at_c = np.minimum(at, len(self.keys) - 1)
        hit = np.flatnonzero(self.keys[at_c] == needles)
        return hit, at_c[hit]

    def expand(self, key_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(repeat, holdout_doc)``: for each key, the holdout documents that hold it
        (``repeat``: the position in ``key_index`` each row came from)."""
        lo, hi = self.offsets[key_index], self.offsets[key_index + 1]
        n = (hi - lo).astype(np.int64)
        rep = np.repeat(np.arange(len(key_index)), n)
        first = np.concatenate(([0], np.cumsum(n)[:-1])) if len(n) else n
        pos = np.arange(int(n.sum())) - np.repeat(first, n) + np.repeat(lo, n)
        return rep, self.postings[pos.astype(np.int64)]


#: an odd multiplier (2**64 / golden ratio): the product's high bits mix all of the hash's
FILTER_MIX = np.uint64(0x9E3779B97F4A7C15)


def filter_shift(words: int) -> np.uint64:
    """The shift that takes a hash's high bits to a word index (``words`` a power of 2)."""
    return np.uint64(64 - (words.bit_length() - 1))


def filter_test(hashes: np.ndarray, words: int) -> tuple[np.ndarray, np.ndarray]:
    """``(word, mask)`` of each hash in the blocked Bloom filter: the word from the hash's
    high bits (the polynomial's strong ones), two bits in it from the high bits of the
    hash times :data:`FILTER_MIX`. The scan's kernel computes the same."""
    word = (hashes >> filter_shift(words)).astype(np.int64)
    mixed = hashes * FILTER_MIX
    one = np.uint64(1)
    mask = (one << (mixed >> np.uint64(58))) | (one << ((mixed >> np.uint64(52)) & np.uint64(63)))
    return word, mask


def _pairs(hashes: np.ndarray, doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(hash, doc)`` pairs sorted by hash then doc, each once."""
    order = np.lexsort((doc, hashes))
    h, d = hashes[order], doc[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (h[1:] != h[:-1]) | (d[1:] != d[:-1])
    return h[first], d[first]


def assemble(hashes: np.ndarray, docs: np.ndarray, presorted: bool = False,
             bitmap: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(keys, offsets, postings, filter words)`` of ``(hash, document)`` pairs: the keys
    sorted and unique, each key's documents in order, once (``presorted``: the pairs
    already are, as :func:`_pairs` leaves them)."""
    h_sorted, d_sorted = (hashes, docs) if presorted else _pairs(hashes, docs)
    starts = np.flatnonzero(np.r_[True, h_sorted[1:] != h_sorted[:-1]]) if len(h_sorted) \
        else np.empty(0, np.int64)
    keys = h_sorted[starts]
    offsets = np.r_[starts, len(d_sorted)].astype(np.int64)
    postings = d_sorted.astype(np.int64)
    if not bitmap:
        return keys, offsets, postings, np.zeros(0, np.uint64)
    words = 1 << 14
    while words * 64 < 16 * len(keys) and words < (1 << 25):
        words <<= 1
    bits = np.zeros(words, dtype=np.uint64)
    if len(keys):
        word, mask = filter_test(keys, words)  # word sorted, as the keys are (high bits)
        at = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
        bits[word[at]] = np.bitwise_or.reduceat(mask, at)
    return keys, offsets, postings, bits


def build_index(kind: str, shingling: Shingling, norms: list[str], mh: MinHashParams,
                min_fraction: float = 1.0) -> HoldoutIndex:
    """The index of the holdout's normalised texts (document ``i`` is ``norms[i]``).

    ``exact`` indexes only each holdout document's *prefix* (prefix filtering, as in
    exact similarity joins): with ``need = ceil(min_fraction * |S_h|)`` and
    ``p = |S_h| - need + 1``, its ``L = min(|S_h|, 2p - 1)`` rarest shingles (fewest
    holdout documents, then hash). A training document that shares at least ``need``
    of ``S_h`` misses at most ``|S_h| - need`` of them, so it holds at least
    ``required = L - (|S_h| - need)`` of the indexed ones: a candidate must share that
    many (no false negatives), and the common shingles, which would make nearly every
    document a candidate, are mostly left out. The scan then counts the shared
    shingles of each remaining candidate exactly on ``doc_hashes``.
    """
    from curator.decontamination.text import shingle_hashes

    hashes, doc = shingle_hashes(norms, shingling)
    h_sorted, d_sorted = _pairs(hashes, doc)
    n_docs = len(norms)
    sizes = np.bincount(d_sorted, minlength=n_docs).astype(np.int64)
    doc_offsets = np.zeros(1, np.int64)
    doc_hashes = np.empty(0, np.uint64)
    required = np.ones(n_docs, np.int64)
    if kind == "minhash":
        band_keys, present = signatures(hashes, doc, n_docs, mh)
        docs = np.repeat(np.arange(n_docs), mh.num_bands)[np.repeat(present, mh.num_bands)]
        h_sorted, d_sorted = _pairs(band_keys[present].reshape(-1), docs)
    elif len(h_sorted):
        starts = np.flatnonzero(np.r_[True, h_sorted[1:] != h_sorted[:-1]])
        df = np.diff(np.r_[starts, len(h_sorted)])
        order = np.lexsort((h_sorted, np.repeat(df, df), d_sorted))  # doc, rarity, hash
        d_o, h_o = d_sorted[order], h_sorted[order]
        first = np.cumsum(sizes) - sizes
        rank = np.arange(len(order)) - first[d_o]
        need = np.maximum(np.ceil(min_fraction * sizes - 1e-9), 1).astype(np.int64)
        p = np.minimum(sizes - need + 1, sizes)
        indexed = np.minimum(sizes, 2 * p - 1)
        required = np.maximum(indexed - (sizes - need), 1)
        keep = rank < indexed[d_o]
        by_doc = np.lexsort((h_o, d_o))
        doc_hashes = h_o[by_doc]
        doc_offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        h_sorted, d_sorted = _pairs(h_o[keep], d_o[keep])
    keys, offsets, postings, bitmap = assemble(h_sorted, d_sorted, presorted=True)
    meta = {"kind": kind, "shingling": shingling.describe(), "documents": n_docs,
            "keys": len(keys)}
    if kind == "minhash":
        meta["minhash"] = {"seed": mh.seed, "num_bands": mh.num_bands,
                           "minhashes_per_band": mh.minhashes_per_band}
    else:
        meta["min_fraction"] = min_fraction
    return HoldoutIndex(keys, offsets, postings, sizes, required, bitmap, doc_offsets,
                        doc_hashes, kind, meta)


def save_index(index: HoldoutIndex, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        with atomic_file(folder / f"{name}.npy") as f:
            np.save(f, getattr(index, name), allow_pickle=False)
    write_atomic(folder / META, json.dumps(index.meta, sort_keys=True))


def load_index(folder: Path, expected: dict[str, Any]) -> HoldoutIndex:
    """The index in ``folder``, memory-mapped; ``shingling_mismatch`` when it was built
    with other shingles, normalisation or banding than ``expected`` says."""
    meta = json.loads(shared.localize(folder / META).read_text(encoding="utf-8"))
    for key, value in expected.items():
        if meta.get(key) != value:
            raise CuratorError("shingling_mismatch",
                               f"the holdout index in {folder} was built with {key}="
                               f"{meta.get(key)!r}, this scan uses {value!r}")
    # plain arrays over the maps (a np.memmap's indexing is a Python call each time)
    arrays = {name: np.asarray(np.load(shared.localize(folder / f"{name}.npy"), mmap_mode="r",
                                       allow_pickle=False)) for name in FILES}
    return HoldoutIndex(**arrays, kind=meta["kind"], meta=meta)
