"""Normalisation, shingles and their 64-bit hashes, for near-duplicate detection.

**Normalisation** (:func:`normalize`), columnar in Arrow: Unicode NFC
(``utf8_normalize``), then the Unicode lower-case mapping of each code point
(``utf8_lower``: the simple mapping, one code point to one and without context, so U+0130
becomes ``"i"`` and a word-final capital sigma the medial small sigma U+03C3, where Python's
``str.lower`` gives two code points and the final sigma U+03C2); a null is an empty text.
Whitespace is handled in the kernel: a maximal run of Unicode ``White_Space`` code points
(:data:`WHITE_SPACE`, the property's fixed list, plus U+001C..U+001F: exactly Python's
``str.isspace``) is one separator, and the ends are trimmed. Punctuation is kept.

**Shingles** of a normalised text:

- ``words``: the words are the runs between separators; a shingle is ``n`` consecutive
  words; each word is hashed once, by FNV-1a 64 over its UTF-8 bytes, and the shingle
  ``w_0 .. w_{n-1}`` is ``fmix64(w_0 * P**(n-1) + ... + w_{n-1})`` mod 2**64;
- ``chars``: the units are the code points of the text with each separator written as one
  U+0020; a shingle is ``n`` consecutive units, hashed ``fmix64(c_0 * P**(n-1) + ... +
  c_{n-1})`` mod 2**64 (rolled, one multiply per unit).

``P`` is :data:`POLY` (odd), ``fmix64`` MurmurHash3's 64-bit finaliser. A text with fewer
than ``n`` units but at least one has exactly one shingle, all its units (so two copies of
a one-word document are duplicates); a text with no unit (empty, null, only whitespace) has
no shingle, gets the empty-signature marker and is never a candidate
(:mod:`curator.dedup.minhash`). The hash is defined on the bytes and code points above,
written here in numba with wrapping uint64 arithmetic: the same values on every platform
and version (tests/dedup/test_minhash.py pins them against a pure-Python reference).
The normalisation follows the Unicode tables of the installed Arrow (stable for assigned
code points under Unicode's normalisation and case-pair stability policies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

#: the shingle polynomial's multiplier (odd: 2**64 / golden ratio)
POLY = 0x9E3779B97F4A7C15
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
#: Unicode's White_Space property (Unicode 6.3 and later) plus U+001C..U+001F
WHITE_SPACE = frozenset([*range(0x09, 0x0E), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680,
                         *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000])

Texts = pa.Array | pa.ChunkedArray | pl.Series | list[str | None]


@dataclass(frozen=True)
class Shingling:
    """What a shingle is: ``n`` consecutive ``words`` or ``chars`` (code points)."""

    kind: Literal["words", "chars"] = "words"
    n: int = 5

    def __post_init__(self) -> None:
        if self.kind not in ("words", "chars") or self.n < 1:
            raise ValueError(f"shingle must be words or chars with n >= 1, got {self}")


DEFAULT_SHINGLING = Shingling()


def normalize(texts: Texts) -> pa.LargeStringArray:
    """NFC and lower case, as one ``large_string`` array (nulls become empty texts)."""
    if isinstance(texts, pl.Series):
        arr: pa.Array | pa.ChunkedArray = texts.to_arrow()
    elif isinstance(texts, list):
        arr = pa.array(texts, pa.large_string())
    else:
        arr = texts
    arr = pc.utf8_lower(pc.utf8_normalize(arr.cast(pa.large_string()), "NFC"))
    arr = pc.fill_null(arr, "")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_string())
    return arr


def utf8_buffers(arr: pa.LargeStringArray) -> tuple[np.ndarray, np.ndarray]:
    """``(data uint8, offsets int64[len + 1])`` of a ``large_string`` array, zero-copy."""
    _, off, data = arr.buffers()
    offsets = np.frombuffer(off, np.int64)[arr.offset:arr.offset + len(arr) + 1]
    return (np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8),
            offsets)


def _space_table() -> np.ndarray:
    table = np.zeros(0x3001, np.bool_)
    table[sorted(WHITE_SPACE)] = True
    return table


SPACE = _space_table()
_KINDS = {"words": 0, "chars": 1}


@njit(cache=True, nogil=True, inline="always")
def fmix64(k):  # pragma: no cover - compiled
    """MurmurHash3's 64-bit finaliser (a bijection)."""
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xFF51AFD7ED558CCD)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> np.uint64(33)
    return k


@njit(cache=True, nogil=True)
def doc_shingles(data, start, end, kind, n, space, out):  # pragma: no cover - compiled
    """Write the shingle hashes of the text ``data[start:end]`` (normalised UTF-8) to
    ``out`` in position order (``len(out) >= end - start`` suffices); return how many."""
    poly, zero = np.uint64(POLY), np.uint64(0)
    # the units (word hashes or code points), at most one per byte, first into out[n:]
    m = 0
    word = np.uint64(FNV_OFFSET)
    in_word = False
    pending = False  # a separator owed before the next unit (chars)
    i = start
    while i < end:
        b = np.int64(data[i])
        if b < 0x80:
            c, w = b, 1
        elif b < 0xE0:
            c, w = ((b & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2
        elif b < 0xF0:
            c = ((b & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (
                np.int64(data[i + 2]) & 0x3F)
            w = 3
        else:
            c = ((b & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12) | (
                (np.int64(data[i + 2]) & 0x3F) << 6) | (np.int64(data[i + 3]) & 0x3F)
            w = 4
        is_space = c < len(space) and space[c]
        if kind == 0:
            if is_space:
                if in_word:
                    out[m] = word
                    m += 1
                    in_word = False
                    word = np.uint64(FNV_OFFSET)
            else:
                for j in range(i, i + w):
                    word = (word ^ np.uint64(data[j])) * np.uint64(FNV_PRIME)
                in_word = True
        elif is_space:
            pending = m > 0
        else:
            if pending:
                out[m] = np.uint64(32)
                m += 1
                pending = False
            out[m] = np.uint64(c)
            m += 1
        i += w
    if in_word:
        out[m] = word
        m += 1
    if m == 0:
        return 0
    if m <= n:  # one shingle: every unit
        h = zero
        for t in range(m):
            h = h * poly + out[t]
        out[0] = fmix64(h)
        return 1
    # rolled polynomial over the units, written over them (position t is read before
    # shingle t is written, and shingle t needs units t .. t+n-1)
    top = np.uint64(1)
    for _ in range(n - 1):
        top = top * poly
    h = zero
    for t in range(n):
        h = h * poly + out[t]
    first = out[0]
    out[0] = fmix64(h)
    for t in range(1, m - n + 1):
        h = (h - first * top) * poly + out[t + n - 1]
        first = out[t]
        out[t] = fmix64(h)
    return m - n + 1


@njit(cache=True, nogil=True)
def _shingle_sets(data, offsets, kind, n, space):  # pragma: no cover - compiled
    docs = len(offsets) - 1
    counts = np.zeros(docs + 1, np.int64)
    out = np.empty(max(len(data), 1), np.uint64)
    scratch = np.empty(1, np.uint64)
    fill = 0
    for d in range(docs):
        size = offsets[d + 1] - offsets[d]
        if len(scratch) < size:
            scratch = np.empty(2 * size, np.uint64)
        k = doc_shingles(data, offsets[d], offsets[d + 1], kind, n, space, scratch)
        s = np.sort(scratch[:k])
        u = 0
        for t in range(k):
            if t == 0 or s[t] != s[t - 1]:
                out[fill + u] = s[t]
                u += 1
        fill += u
        counts[d + 1] = fill
    return counts, out[:fill].copy()


@dataclass(frozen=True)
class ShingleSets:
    """Each document's distinct shingle hashes, sorted: CSR ``offsets``/``hashes``."""

    offsets: np.ndarray
    hashes: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def of(self, doc: int) -> np.ndarray:
        return self.hashes[self.offsets[doc]:self.offsets[doc + 1]]


def shingle_sets(texts: Texts, shingling: Shingling = DEFAULT_SHINGLING) -> ShingleSets:
    """The distinct shingle hashes of every text (normalised here), for exact Jaccard."""
    data, offsets = utf8_buffers(normalize(texts))
    counts, hashes = _shingle_sets(data, offsets, _KINDS[shingling.kind], shingling.n, SPACE)
    return ShingleSets(counts, hashes)


@njit(cache=True, nogil=True)
def _jaccard(offsets, hashes, left, right):  # pragma: no cover - compiled
    out = np.zeros(len(left), np.float64)
    for q in range(len(left)):
        i, ie = offsets[left[q]], offsets[left[q] + 1]
        j, je = offsets[right[q]], offsets[right[q] + 1]
        union = (ie - i) + (je - j)
        if union == 0:
            continue
        both = 0
        while i < ie and j < je:
            a, b = hashes[i], hashes[j]
            if a == b:
                both += 1
                i += 1
                j += 1
            elif a < b:
                i += 1
            else:
                j += 1
        out[q] = both / (union - both)
    return out


def jaccard(sets: ShingleSets, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The exact Jaccard of the shingle sets of documents ``left[q]`` and ``right[q]``
    (0.0 when both have no shingle). Sets of 64-bit hashes: two distinct shingles of a
    pair share a hash with probability about ``|A| * |B| / 2**64``."""
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    if len(left) != len(right):
        raise ValueError("left and right must have the same length")
    return _jaccard(sets.offsets, sets.hashes, left, right)
