"""The scan's per-character kernel: normalise, hash every shingle and test it against the
index's filter in one pass over a batch's code points (numba).

The numpy path (:func:`curator.decontamination.text.normalize_batch`, then
:func:`~curator.decontamination.text.window_hashes`, then the filter) makes some twenty
passes over arrays of 8 bytes per character; on a training corpus that is most of the
scan's time (docs/benchmarks.md, section 8). Here each character is read once: mapped
to a space or kept (the same tables as ``normalize_batch``), whitespace runs collapsed
and the ends trimmed, the window's polynomial hash rolled (the same polynomial as
``_rolling``: ``sum(u[i+t] * P**(k-1-t))`` mod 2**64), and only the windows whose
filter bits are set are written out. Equality with the numpy path is tested on hostile
texts for every normalisation switch (tests/decontaminate/test_kernel.py).

NFC and casefold stay in Python (``str`` methods, before the kernel): they change the
number of code points.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from curator.decontamination.index import FILTER_MIX, filter_shift
from curator.decontamination.text import _P, Normalization, _prepare, _Tables, _tables

_SPACE = np.uint64(32)


@njit(cache=True, nogil=True)
def _stripped_windows(units, starts, lengths, keep, known, k, p, pk1, bitmap, shift,
                      out_doc, out_hash):  # pragma: no cover - compiled
    """:func:`_candidate_windows` for the default normalisation (punctuation stripped,
    whitespace collapsed), with one branch per character instead of a loop: about
    twice as fast. ``-1`` when a code point is not yet in the tables (``known``). The
    roll is written out twice (the owed space, then the unit) for the reason
    :func:`_candidate_windows` gives."""
    n = 0
    ring = np.zeros(k, np.uint64)
    one, mix, space = np.uint64(1), FILTER_MIX, _SPACE
    s58, s52, low6 = np.uint64(58), np.uint64(52), np.uint64(63)
    for d in range(len(starts)):
        h = np.uint64(0)
        slot = 0
        count = 0
        ring[:] = 0
        pending = False
        for i in range(starts[d], starts[d] + lengths[d]):
            c = units[i]
            if c >= 128 and not known[c]:
                return -1
            if not keep[c]:
                pending = count > 0
                continue
            if pending:  # the space owed before this kept unit, rolled in first
                pending = False
                h = (h - ring[slot] * pk1) * p + space
                ring[slot] = space
                slot += 1
                if slot == k:
                    slot = 0
                count += 1
                if count >= k:
                    m = h * mix
                    mask = (one << (m >> s58)) | (one << ((m >> s52) & low6))
                    if bitmap[h >> shift] & mask == mask:
                        out_doc[n] = d
                        out_hash[n] = h
                        n += 1
            u = np.uint64(c)
            h = (h - ring[slot] * pk1) * p + u
            ring[slot] = u
            slot += 1
            if slot == k:
                slot = 0
            count += 1
            if count >= k:
                m = h * mix
                mask = (one << (m >> s58)) | (one << ((m >> s52) & low6))
                if bitmap[h >> shift] & mask == mask:
                    out_doc[n] = d
                    out_hash[n] = h
                    n += 1
    return n


@njit(cache=True, nogil=True)
def _candidate_windows(units, starts, lengths, keep, space, known, strip, collapse, k, p,
                       pk1, bitmap, shift, out_doc, out_hash):  # pragma: no cover - compiled
    """Write ``(doc, hash)`` of every window that pass the filter; return how many
    (``-1`` when a code point is not yet in the tables: ``known``).

    Written out flat (no helper for the roll): numba's inlined helper returning a tuple
    measured 2.7x slower here."""
    n = 0
    ring = np.zeros(k, np.uint64)
    one, mix = np.uint64(1), FILTER_MIX
    s58, s52, low6 = np.uint64(58), np.uint64(52), np.uint64(63)
    for d in range(len(starts)):
        h = np.uint64(0)
        slot = 0
        count = 0
        ring[:] = 0  # so the roll needs no special case before k units
        pending = False  # a space owed before the next kept unit
        for i in range(starts[d], starts[d] + lengths[d]):
            c = units[i]
            if c >= 128 and not known[c]:
                return -1
            is_ws = (not keep[c]) if strip else space[c]
            for step in range(2):  # at most two units out: an owed space, then c
                if step == 0:
                    if not collapse:
                        u = _SPACE if (is_ws and strip) else np.uint64(c)
                    elif is_ws:
                        pending = count > 0  # never a leading space
                        break
                    elif pending:
                        u = _SPACE
                        pending = False
                    else:
                        continue
                elif not collapse:
                    break
                else:
                    u = np.uint64(c)
                h = (h - ring[slot] * pk1) * p + u
                ring[slot] = u
                slot += 1
                if slot == k:
                    slot = 0
                count += 1
                if count >= k:
                    m = h * mix  # index.filter_test
                    mask = (one << (m >> s58)) | (one << ((m >> s52) & low6))
                    if bitmap[h >> shift] & mask == mask:
                        out_doc[n] = d
                        out_hash[n] = h
                        n += 1
    return n


@njit(cache=True, nogil=True)
def shared_counts(mine, doc_hashes, doc_offsets, docs):  # pragma: no cover - compiled
    """How many of each holdout document's shingle hashes (``docs``: their numbers, the
    CSR ``doc_offsets``/``doc_hashes``) are in ``mine`` (sorted; repeats allowed): a
    binary search each, with no temporary arrays."""
    out = np.zeros(len(docs), np.int64)
    size = len(mine)
    for j in range(len(docs)):
        h = docs[j]
        c = 0
        for q in range(doc_offsets[h], doc_offsets[h + 1]):
            x = doc_hashes[q]
            lo, hi = 0, size
            while lo < hi:
                mid = (lo + hi) >> 1
                if mine[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < size and mine[lo] == x:
                c += 1
        out[j] = c
    return out


def _code_points(text: str) -> np.ndarray:
    """``text``'s code points as an array: 16-bit when none is astral (the common case:
    encoding is about 2.5x faster than to 32 bits, and the kernel reads half the bytes),
    else 32-bit. A lone surrogate is one unit either way (``surrogatepass``)."""
    data = text.encode("utf-16-le", "surrogatepass")
    if len(data) == 2 * len(text):
        return np.frombuffer(data, dtype=np.uint16)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


class CandidateWindows:
    """The kernel with its reusable output buffers (one per worker)."""

    def __init__(self, normalization: Normalization, k: int, bitmap: np.ndarray) -> None:
        self.n = normalization
        self.k = k
        self.bitmap = bitmap
        self.shift = filter_shift(len(bitmap))
        self.p = np.uint64(_P)
        self.pk1 = np.uint64(pow(int(_P), k - 1, 1 << 64))
        self._doc = np.empty(0, np.int64)
        self._hash = np.empty(0, np.uint64)

    def __call__(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(doc, hash)``: the batch index and hash of every shingle of ``texts`` (as
        normalised) that may be an index key, in document and position order."""
        prepared = [_prepare(t, self.n) for t in texts]
        lengths = np.fromiter((len(t) for t in prepared), dtype=np.int64, count=len(texts))
        units = _code_points("".join(prepared))
        if len(units) > len(self._doc):  # reused: fresh pages are costly on some hosts
            size = max(len(units), 2 * len(self._doc))
            self._doc = np.empty(size, np.int64)
            self._hash = np.empty(size, np.uint64)
        starts = np.cumsum(lengths) - lengths
        found = self._run(units, starts, lengths, _tables())
        if found < 0:  # a code point met for the first time: learn the batch's, again
            found = self._run(units, starts, lengths, _tables().ready(units))
        return self._doc[:found].copy(), self._hash[:found].copy()

    def _run(self, units: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
             t: _Tables) -> int:
        n = self.n
        if n.strip_punctuation and n.collapse_whitespace:
            return _stripped_windows(units, starts, lengths, t.keep, t.known, self.k,
                                     self.p, self.pk1, self.bitmap, self.shift,
                                     self._doc, self._hash)
        return _candidate_windows(units, starts, lengths, t.keep, t.space, t.known,
                                  n.strip_punctuation, n.collapse_whitespace, self.k,
                                  self.p, self.pk1, self.bitmap, self.shift, self._doc,
                                  self._hash)
