"""A pure-Python reference of the dedup kernel's definitions (curator/dedup/shingles.py and
minhash.py docstrings), written from the text, not from the numba code: Python integers
masked to 64 bits, Python's own NFC and ``str.split``, and the simple lower case mapping
of each code point (:func:`lower`)."""

from __future__ import annotations

import unicodedata

M64 = (1 << 64) - 1
POLY = 0x9E3779B97F4A7C15


def fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    return k ^ (k >> 33)


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & M64
    return h


def poly_hash(units: list[int]) -> int:
    h = 0
    for u in units:
        h = (h * POLY + u) & M64
    return fmix64(h)


def lower(text: str) -> str:
    """Unicode's simple lower case mapping, code point by code point: Python's full
    mapping of one character alone, except U+0130, the one character whose full lower
    case mapping is two code points (its simple mapping is U+0069)."""
    return "".join("i" if c == "\u0130" else c.lower() for c in text)


def normalized_words(text: str) -> list[str]:
    return lower(unicodedata.normalize("NFC", text)).split()


def units(text: str, kind: str) -> list[int]:
    words = normalized_words(text)
    if kind == "words":
        return [fnv1a64(w.encode("utf-8")) for w in words]
    return [ord(c) for c in " ".join(words)]


def shingle_hashes(text: str, kind: str = "words", n: int = 5) -> set[int]:
    u = units(text, kind)
    if not u:
        return set()
    if len(u) <= n:
        return {poly_hash(u)}
    return {poly_hash(u[i:i + n]) for i in range(len(u) - n + 1)}


def shingle_strings(text: str, kind: str = "words", n: int = 5) -> set[str]:
    """The shingles as strings: the brute-force Jaccard's sets (no hash)."""
    words = normalized_words(text)
    seq: list[str] = words if kind == "words" else list(" ".join(words))
    sep = " " if kind == "words" else ""
    if not seq:
        return set()
    if len(seq) <= n:
        return {sep.join(seq)}
    return {sep.join(seq[i:i + n]) for i in range(len(seq) - n + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def splitmix64(seed: int, count: int) -> list[int]:
    out, state = [], seed
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out.append(z ^ (z >> 31))
    return out


def signature(text: str, num_perm: int, seed: int, kind: str = "words", n: int = 5
              ) -> list[int]:
    z = splitmix64(seed, 2 * num_perm)
    xs = [h >> 32 for h in shingle_hashes(text, kind, n)]
    if not xs:
        return [0xFFFFFFFF] * num_perm
    return [min((((z[2 * p] | 1) * x + z[2 * p + 1]) & M64) >> 32 for x in xs)
            for p in range(num_perm)]


def band_key(sig: list[int], band: int, rows: int) -> int:
    h = band + 1
    for v in sig[band * rows:(band + 1) * rows]:
        h = (h * POLY + v) & M64
    return fmix64(h)
