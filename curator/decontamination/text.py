"""Normalisation, shingles and identity keys (the spec's section 10, "Verify" and
"Source identity").

Normalisation, in this order, each step switchable: NFC; casefold; every character
that is not a letter, number, mark or a zero-width (non-)joiner becomes a space; runs
of whitespace collapse to one space (and the ends are stripped).

Shingles are computed twice, with the same definition:

- hashed (:func:`shingle_hashes`): every window of ``k`` code points (or ``k`` words)
  of a batch of documents, as 64-bit hashes, vectorised with numpy: a polynomial
  rolling hash over the code points modulo 2**64 and a splitmix64 finaliser. Equal
  shingles have equal hashes, so candidate generation on hashes misses nothing; two
  different shingles may share a hash (rarely), which only adds a candidate;
- as strings (:func:`shingle_set`), for the exact Jaccard and containment of a
  candidate pair: no hash is trusted for a removal.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit

import numpy as np

#: the polynomial's multiplier (odd) and the splitmix64 constants
_P = np.uint64(0x100000001B3)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


@dataclass(frozen=True)
class Normalization:
    nfc: bool = True
    casefold: bool = True
    collapse_whitespace: bool = True
    strip_punctuation: bool = True


@dataclass(frozen=True)
class Shingling:
    """What a shingle is: ``kind`` ``char`` (``size`` code points) or ``word``."""

    kind: str = "char"
    size: int = 24
    normalization: Normalization = Normalization()

    def describe(self) -> dict[str, object]:
        n = self.normalization
        return {"kind": self.kind, "size": self.size,
                "normalization": {"nfc": n.nfc, "casefold": n.casefold,
                                  "collapse_whitespace": n.collapse_whitespace,
                                  "strip_punctuation": n.strip_punctuation}}


def _ranges(codes: list[int]) -> str:
    parts: list[str] = []
    start = prev = codes[0]
    for c in codes[1:]:
        if c == prev + 1:
            prev = c
            continue
        parts.append(_span(start, prev))
        start = prev = c
    parts.append(_span(start, prev))
    return "".join(parts)


def _span(a: int, b: int) -> str:
    return re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"


@lru_cache(maxsize=1)
def _punct() -> re.Pattern[str]:
    """Runs of characters that are not letters, numbers, marks or ZWNJ/ZWJ (``\\w`` is
    letters, numbers and ``_``; marks are added, ``_`` is removed)."""
    marks = [c for c in range(sys.maxunicode + 1)
             if unicodedata.category(chr(c)).startswith("M")]
    keep = _ranges([*marks, 0x200C, 0x200D])
    return re.compile(rf"(?:[^\w{keep}]|_)+")


_WS = re.compile(r"\s+")


def normalize(text: str, n: Normalization) -> str:
    if n.nfc:
        text = unicodedata.normalize("NFC", text)
    if n.casefold:
        text = text.casefold()
    if n.strip_punctuation:
        text = _punct().sub(" ", text)
    if n.collapse_whitespace:
        text = _WS.sub(" ", text).strip()
    return text


def _words(text: str) -> list[str]:
    return text.split()


def shingle_set(norm: str, s: Shingling) -> set[str]:
    """The shingles of a normalised text, as strings (empty when it is shorter than one
    shingle: such a document is unverifiable)."""
    k = s.size
    if s.kind == "word":
        words = _words(norm)
        return {" ".join(words[i:i + k]) for i in range(len(words) - k + 1)}
    return {norm[i:i + k] for i in range(len(norm) - k + 1)}


def _mix(h: np.ndarray) -> np.ndarray:
    h ^= h >> _S30
    h *= _M1
    h ^= h >> _S27
    h *= _M2
    h ^= h >> _S31
    return h


def _rolling(units: np.ndarray, k: int) -> np.ndarray:
    """The hash of every window of ``k`` units (uint64 array in, uint64 array out)."""
    m = len(units) - k + 1
    h = units[:m].copy()
    for j in range(1, k):
        h *= _P
        h += units[j:j + m]
    return _mix(h)


def _word_units(words: list[str]) -> np.ndarray:
    return np.fromiter((int.from_bytes(hashlib.blake2b(w.encode("utf-8", "surrogatepass"),
                                                       digest_size=8).digest(), "little")
                        for w in words), dtype=np.uint64, count=len(words))


def shingle_hashes(norms: list[str], s: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, doc)``: the hash of every shingle of every document of a batch (in
    document order, repeats kept) and the batch index of its document."""
    k = s.size
    if s.kind == "word":
        per_doc = [_words(t) for t in norms]
        lengths = np.fromiter((len(w) for w in per_doc), dtype=np.int64, count=len(norms))
        flat = [w for ws in per_doc for w in ws]
        units = _word_units(flat)
        sep = 0
    else:
        lengths = np.fromiter((len(t) for t in norms), dtype=np.int64, count=len(norms))
        joined = "".join(norms)
        units = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"),
                              dtype=np.uint32).astype(np.uint64)
        sep = 0
    del sep
    counts = np.maximum(lengths - k + 1, 0)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    hashes = _rolling(units, k)  # windows across a document boundary are dropped below
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    doc = np.repeat(np.arange(len(norms), dtype=np.int64), counts)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pos = np.arange(total, dtype=np.int64) - np.repeat(first, counts) + np.repeat(starts, counts)
    return hashes[pos], doc


# -- identity keys ---------------------------------------------------------------------
URL_FIELDS = ("url", "warc-target-uri", "warc_target_uri", "source_url", "uri", "link")
_TRACKING = re.compile(r"^(utm_.*|gclid|fbclid|msclkid|dclid|yclid|mc_cid|mc_eid|_ga|_gl|"
                       r"igshid|ref_src|spm)$", re.IGNORECASE)


def canonical_url(url: str) -> str | None:
    """The URL without scheme, fragment, trailing ``/``, repeated ``www.`` and tracking
    parameters, lower-cased, with its remaining parameters sorted (``None``: no host)."""
    url = url.strip()
    if not url:
        return None
    parts = urlsplit(url if "//" in url else "//" + url)
    host = (parts.hostname or "").lower()
    while host.startswith("www."):
        host = host[4:]
    if not host:
        return None
    port = f":{parts.port}" if parts.port and parts.port not in (80, 443) else ""
    path = parts.path.rstrip("/")
    params = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                    if not _TRACKING.match(k))
    query = f"?{urlencode(params)}" if params else ""
    return f"{host}{port}{path}{query}".lower()


def identity_key(record: dict, doc_id: str | None, text: str, split: str,
                 prefer_id_field: bool, shared_id_space: bool) -> tuple[str, str]:
    """``(key field, key)``: the first of canonical URL, id, normalised-text hash
    (``prefer_id_field``: the id first)."""
    url_key: tuple[str, str] | None = None
    for f in URL_FIELDS:
        value = record.get(f)
        if isinstance(value, str):
            canon = canonical_url(value)
            if canon:
                url_key = ("url", f"url:{canon}")
                break
    id_key: tuple[str, str] | None = None
    if doc_id is not None:
        space = "corpus" if shared_id_space else split
        id_key = (f"id@{space}", f"id@{space}:{doc_id}")
    order = (id_key, url_key) if prefer_id_field else (url_key, id_key)
    for key in order:
        if key is not None:
            return key
    basis = _WS.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()
    return "norm", "norm:" + hashlib.sha256(basis.encode("utf-8", "surrogatepass")).hexdigest()
