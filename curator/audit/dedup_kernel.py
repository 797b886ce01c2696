"""The dedup audit's own shingle hashes, Jaccard and MinHash estimate: an independent
implementation of the definitions in docs/dedup.md and ``curator/dedup/shingles.py`` /
``minhash.py`` (their docstrings), written from the text in numpy and Python, so that the
audit imports nothing of the dedup step (another step's package).

- normalisation: Unicode NFC (Python's ``unicodedata``), then the simple lower-case
  mapping of each code point (Python's ``str.lower`` of one character, except U+0130 ->
  ``i``); separators are runs of ``str.isspace`` characters (``str.split()``);
- ``words``: FNV-1a 64 of each word's UTF-8 bytes; ``chars``: the code points of the
  words joined by one U+0020;
- a shingle of ``n`` units ``u_0 .. u_{n-1}`` hashes to ``fmix64(sum u_i * P**(n-1-i))``
  mod 2**64; fewer than ``n`` units (but one) give one shingle of them all; none, none;
- signature row ``p``: ``min((a_p * (x >> 32) + b_p) mod 2**64) >> 32`` with ``a_p``
  (odd), ``b_p`` the splitmix64 outputs ``2p``, ``2p + 1`` from ``seed``; the estimate is
  the share of equal rows (0.0 when either text has no shingle).

The Unicode tables are Python's where the step's are Arrow's: the same for assigned code
points under Unicode's stability policies.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import numpy as np

M64 = (1 << 64) - 1
POLY = 0x9E3779B97F4A7C15
_U = np.uint64


def _lower(text: str) -> str:
    if text.isascii():
        return text.lower()
    return "".join("i" if c == "\u0130" else c.lower() if len(c.lower()) == 1 else c
                   for c in text)


@lru_cache(maxsize=1 << 16)
def _fnv1a64(word: str) -> int:
    h = 0xCBF29CE484222325
    for byte in word.encode("utf-8", "surrogatepass"):
        h = ((h ^ byte) * 0x100000001B3) & M64
    return h


def _fmix64(k: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        k = k ^ (k >> _U(33))
        k = k * _U(0xFF51AFD7ED558CCD)
        k = k ^ (k >> _U(33))
        k = k * _U(0xC4CEB9FE1A85EC53)
        return k ^ (k >> _U(33))


def units(text: str, kind: str) -> np.ndarray:
    """The text's units as uint64: word hashes (``words``) or code points (``chars``)."""
    words = _lower(unicodedata.normalize("NFC", text)).split()
    if kind == "words":
        return np.array([_fnv1a64(w) for w in words], np.uint64)
    joined = " ".join(words)
    return np.frombuffer(joined.encode("utf-32-le"), np.uint32).astype(np.uint64)


def shingle_hashes(text: str, kind: str = "words", n: int = 5) -> np.ndarray:
    """The distinct shingle hashes of ``text``, sorted (uint64)."""
    u = units(text, kind)
    if len(u) == 0:
        return u
    width = min(n, len(u))
    count = len(u) - width + 1
    h = np.zeros(count, np.uint64)
    with np.errstate(over="ignore"):
        for i in range(width):  # Horner over the window: h = h * P + u_{t+i}
            h = h * _U(POLY) + u[i:i + count]
    return np.unique(_fmix64(h))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """``|A & B| / |A | B|`` of two sorted distinct hash arrays (0.0 when both empty)."""
    if len(a) == 0 and len(b) == 0:
        return 0.0
    both = len(np.intersect1d(a, b, assume_unique=True))
    return both / (len(a) + len(b) - both)


def _splitmix64(seed: int, count: int) -> list[int]:
    out, state = [], seed & M64
    for _ in range(count):
        state = (state + POLY) & M64
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out.append(z ^ (z >> 31))
    return out


def signature(text: str, perms: int, seed: int, kind: str = "words", n: int = 5
              ) -> np.ndarray | None:
    """The MinHash signature (uint64 values below 2**32), ``None`` without a shingle."""
    x = shingle_hashes(text, kind, n) >> _U(32)
    if len(x) == 0:
        return None
    z = np.array(_splitmix64(seed, 2 * perms), np.uint64).reshape(perms, 2)
    a, b = z[:, 0] | _U(1), z[:, 1]
    with np.errstate(over="ignore"):
        return ((a[:, None] * x[None, :] + b[:, None]) >> _U(32)).min(axis=1)


def estimate(a: np.ndarray | None, b: np.ndarray | None) -> float:
    """The share of equal rows of two signatures (0.0 when either has no shingle)."""
    if a is None or b is None:
        return 0.0
    return float(np.count_nonzero(a == b)) / len(a)


__all__ = ["estimate", "jaccard", "shingle_hashes", "signature", "units"]
