"""MinHash signatures, LSH band keys and the signature's Jaccard estimate (numba).

For a document with shingle hashes ``x`` (:mod:`curator.dedup.shingles`), row ``p`` of its
signature is ``min over x of ((a_p * (x >> 32) + b_p) mod 2**64) >> 32``: Dietzfelbinger's
multiply-add-shift hash of the shingle's top 32 bits, a strongly universal family, as
uint32. ``a_p`` (odd) and ``b_p`` are the outputs ``2p`` and ``2p + 1`` of splitmix64
seeded with ``seed`` (:func:`coefficients`): no dependence on numpy's random streams. A
document with no shingle has every row ``0xFFFFFFFF`` and ``present`` false: the empty
marker; its band keys are not keys (drop them with ``present``), so it is never a candidate.

Band ``j`` of ``bands`` takes rows ``j*rows .. j*rows + rows - 1``; its key is
``fmix64((j + 1) * P**rows + s_0 * P**(rows-1) + ... + s_{rows-1})`` mod 2**64 (``P``:
:data:`~curator.dedup.shingles.POLY`). A pair of Jaccard ``s`` shares a band key with
probability ``1 - (1 - s**rows)**bands`` (:func:`collision_probability`). The defaults,
20 bands of 8 rows (160 rows), put the S-curve's knee below 0.8: a pair at 0.85 collides
with probability 0.998, at 0.8 with 0.975, at 0.7 with 0.70, at 0.5 with 0.075
(docs/decisions/minhash-kernel.md). The kernel choice is measured there too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from curator.dedup.shingles import (
    _KINDS,
    DEFAULT_SHINGLING,
    POLY,
    SPACE,
    Shingling,
    Texts,
    doc_shingles,
    fmix64,
    normalize,
    utf8_buffers,
)

EMPTY = np.uint32(0xFFFFFFFF)
_GOLDEN = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class MinHashParams:
    """The signature's size (``bands * rows``), its banding and seed."""

    bands: int = 20
    rows: int = 8
    seed: int = 0

    def __post_init__(self) -> None:
        if self.bands < 1 or self.rows < 1 or not 0 <= self.seed < 2**64:
            raise ValueError(f"bands and rows must be >= 1, 0 <= seed < 2**64: {self}")

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows


def splitmix64(seed: int, count: int) -> list[int]:
    """The first ``count`` outputs of splitmix64 from state ``seed`` (Python integers)."""
    out, state = [], seed & _MASK
    for _ in range(count):
        state = (state + _GOLDEN) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        out.append(z ^ (z >> 31))
    return out


def coefficients(seed: int, num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``, uint64 each: ``a`` odd, from splitmix64 outputs ``2p``, ``2p + 1``."""
    z = np.array(splitmix64(seed, 2 * num_perm), dtype=np.uint64).reshape(num_perm, 2)
    return z[:, 0] | np.uint64(1), z[:, 1].copy()


@njit(cache=True, nogil=True)
def _signatures(data, offsets, kind, n, space, a, b):  # pragma: no cover - compiled
    docs, perms = len(offsets) - 1, len(a)
    sig = np.full((docs, perms), np.uint32(0xFFFFFFFF), np.uint32)
    present = np.zeros(docs, np.bool_)
    scratch = np.empty(1, np.uint64)
    s32 = np.uint64(32)
    for d in range(docs):
        size = offsets[d + 1] - offsets[d]
        if len(scratch) < size:
            scratch = np.empty(2 * size, np.uint64)
        k = doc_shingles(data, offsets[d], offsets[d + 1], kind, n, space, scratch)
        present[d] = k > 0
        if k == 0:
            continue
        for t in range(k):
            scratch[t] >>= s32
        for p in range(perms):  # row-outer: the inner min-reduction vectorises (2x)
            ap, bp = a[p], b[p]
            m = np.uint32(0xFFFFFFFF)
            for t in range(k):
                m = min(m, np.uint32((ap * scratch[t] + bp) >> s32))
            sig[d, p] = m
    return sig, present


DEFAULT_PARAMS = MinHashParams()


def signatures(texts: Texts, shingling: Shingling = DEFAULT_SHINGLING,
               params: MinHashParams = DEFAULT_PARAMS) -> tuple[np.ndarray, np.ndarray]:
    """``(sig uint32[docs, bands*rows], present bool[docs])`` of a batch of texts
    (normalised here: :func:`~curator.dedup.shingles.normalize`)."""
    data, offsets = utf8_buffers(normalize(texts))
    a, b = coefficients(params.seed, params.num_perm)
    return _signatures(data, offsets, _KINDS[shingling.kind], shingling.n, SPACE, a, b)


@njit(cache=True, nogil=True)
def _band_keys(sig, bands, rows):  # pragma: no cover - compiled
    poly = np.uint64(POLY)
    keys = np.empty((sig.shape[0], bands), np.uint64)
    for d in range(sig.shape[0]):
        for j in range(bands):
            h = np.uint64(j + 1)
            for r in range(j * rows, (j + 1) * rows):
                h = h * poly + np.uint64(sig[d, r])
            keys[d, j] = fmix64(h)
    return keys


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """uint64 ``[docs, bands]``: each band's key (meaningless where not ``present``)."""
    if sig.ndim != 2 or sig.shape[1] != bands * rows:
        raise ValueError(f"signatures of shape {sig.shape} do not have {bands}x{rows} rows")
    return _band_keys(np.ascontiguousarray(sig, np.uint32), bands, rows)


def estimate(sig: np.ndarray, present: np.ndarray, left: np.ndarray,
             right: np.ndarray) -> np.ndarray:
    """The signature's Jaccard estimate of each pair: the share of equal rows (0.0 when
    either document has no shingle)."""
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    same = (sig[left] == sig[right]).mean(axis=1) if len(left) else np.zeros(0)
    return np.where(present[left] & present[right], same, 0.0)


def collision_probability(similarity: float | np.ndarray, bands: int, rows: int
                          ) -> float | np.ndarray:
    """The chance that a pair of Jaccard ``similarity`` shares at least one band key."""
    return 1.0 - (1.0 - np.asarray(similarity, np.float64) ** rows) ** bands
