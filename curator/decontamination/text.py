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
from collections.abc import Iterable
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


_WS = re.compile(r"\s+")
_SPACE = 32


class _Tables:
    """``keep`` (a letter, number, mark or ZWNJ/ZWJ, not ``_``) and ``space``
    (``str.isspace``) per code point, filled in for the code points met so far (asking
    ``unicodedata`` for all 1.1M at start-up takes seconds in every worker)."""

    def __init__(self) -> None:
        size = sys.maxunicode + 1
        self.known = np.zeros(size, dtype=bool)
        self.keep = np.zeros(size, dtype=bool)
        self.space = np.zeros(size, dtype=bool)
        self.learn(np.arange(128, dtype=np.uint32))

    def learn(self, codes: np.ndarray) -> None:
        for c in codes.tolist():
            ch = chr(c)
            self.keep[c] = (ch.isalnum() or unicodedata.category(ch)[0] == "M"
                            or c in (0x200C, 0x200D)) and ch != "_"
            self.space[c] = ch.isspace()
        self.known[codes] = True

    def ready(self, units: np.ndarray) -> _Tables:
        unknown = units[~self.known[units]]
        if len(unknown):
            self.learn(np.unique(unknown))
        return self


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    return _Tables()


def _prepare(text: str, n: Normalization) -> str:
    if text.isascii():  # NFC already; casefold is lower()
        return text.lower() if n.casefold else text
    if n.nfc and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text.casefold() if n.casefold else text


def normalize_batch(texts: list[str], n: Normalization) -> tuple[np.ndarray, np.ndarray]:
    """``(units, lengths)``: the normalised texts of a batch as one array of code points
    (uint32, documents back to back) and each one's length. NFC and casefold run per
    text (``lower()`` for ASCII, which is the same), the rest on the array."""
    prepared = [_prepare(t, n) for t in texts]
    lengths = np.fromiter((len(t) for t in prepared), dtype=np.int64, count=len(texts))
    units = np.frombuffer("".join(prepared).encode("utf-32-le", "surrogatepass"),
                          dtype=np.uint32)
    if not len(units):
        return units.copy(), lengths
    tables = _tables().ready(units)
    if n.strip_punctuation:
        ws = ~tables.keep[units]
        units = np.where(ws, np.uint32(_SPACE), units)
    else:
        ws = tables.space[units]
        units = units.copy()
    if not n.collapse_whitespace:
        return units, lengths
    units[ws] = _SPACE
    total = len(units)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    ends = starts + lengths
    doc = np.repeat(np.arange(len(texts)), lengths)
    prev_ws = np.empty(total, dtype=bool)
    prev_ws[0] = True
    prev_ws[1:] = ws[:-1]
    prev_ws[starts[lengths > 0]] = True  # leading whitespace goes
    pos = np.arange(total, dtype=np.int64)
    nxt = np.minimum.accumulate(np.where(ws, total, pos)[::-1])[::-1]  # next non-space
    keep = ~ws | (~prev_ws & (nxt < ends[doc]))  # one space per run, none at the end
    return units[keep], np.bincount(doc[keep], minlength=len(texts)).astype(np.int64)


def decode(units: np.ndarray) -> str:
    return np.ascontiguousarray(units, dtype=np.uint32).tobytes().decode(
        "utf-32-le", "surrogatepass")


#: ASCII bytes: letters and digits kept, everything else (``_`` too) a space
_ASCII = bytes(c if chr(c).isalnum() and c < 128 else _SPACE for c in range(256))


def _ascii_fast(text: str, n: Normalization) -> bool:
    # without strip_punctuation, str.isspace's \x1c-\x1f are not bytes.split's whitespace
    return text.isascii() and (n.strip_punctuation or not n.collapse_whitespace)


def _normalize_ascii(text: str, n: Normalization) -> str:
    b = text.encode("ascii")
    if n.casefold:
        b = b.lower()
    if n.strip_punctuation:
        b = b.translate(_ASCII)
    if n.collapse_whitespace:
        b = b" ".join(b.split())
    return b.decode("ascii")


def normalize(text: str, n: Normalization) -> str:
    """NFC, casefold, non-alphanumerics to spaces, whitespace collapsed (the switches in
    ``n``); ASCII texts on bytes, others with :func:`normalize_batch` (tested equal)."""
    if _ascii_fast(text, n):
        return _normalize_ascii(text, n)
    units, _ = normalize_batch([text], n)
    return decode(units)


def normalize_many(texts: list[str], n: Normalization) -> list[str]:
    """:func:`normalize` of every text; the non-ASCII ones in one vectorised batch."""
    out = [_normalize_ascii(t, n) if _ascii_fast(t, n) else None for t in texts]
    rest = [i for i, t in enumerate(out) if t is None]
    if rest:
        units, lengths = normalize_batch([texts[i] for i in rest], n)
        ends = np.cumsum(lengths)
        for i, end, length in zip(rest, ends, lengths, strict=True):
            out[i] = decode(units[end - length:end])
    return out  # type: ignore[return-value]


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


def _pow(x: int, e: int) -> np.uint64:
    return np.uint64(pow(x, e, 1 << 64))


def _rolling(units: np.ndarray, k: int) -> np.ndarray:
    """The hash of every window of ``k`` units (uint64 in, uint64 out): the polynomial
    ``sum(u[i+t] * P**(k-1-t))`` mod 2**64, built by doubling (windows of 1, 2, 4, ...
    units, combined along the bits of ``k``: about a dozen array passes, not ``2k``),
    not mixed: its low bits are weak, so users take the high bits (the index's bitmap)
    or mix it first (MinHash)."""
    p = int(_P)
    levels = {1: units}
    size = 1
    while 2 * size <= k:
        h = levels[size]
        levels[2 * size] = h[:-size] * _pow(p, size) + h[size:]
        size *= 2
    m = len(units) - k + 1
    acc: np.ndarray | None = None
    off = 0
    for size in sorted(levels, reverse=True):
        if k & size:
            part = levels[size][off:off + m]
            acc = part.copy() if acc is None else acc * _pow(p, size) + part
            off += size
    assert acc is not None
    return acc


def _word_units(words: list[str]) -> np.ndarray:
    return np.fromiter((int.from_bytes(hashlib.blake2b(w.encode("utf-8", "surrogatepass"),
                                                       digest_size=8).digest(), "little")
                        for w in words), dtype=np.uint64, count=len(words))


def unit_hashes(units: np.ndarray, lengths: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, doc)``: the hash of every window of ``k`` units that lies inside one
    document (documents back to back in ``units``), and its document's batch index."""
    counts = np.maximum(lengths - k + 1, 0)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    hashes = _rolling(units.astype(np.uint64), k)  # windows across documents dropped below
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    doc = np.repeat(np.arange(len(lengths), dtype=np.int64), counts)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pos = np.arange(total, dtype=np.int64) + np.repeat(starts - first, counts)
    return hashes[pos], doc


def window_hashes(units: np.ndarray, k: int) -> np.ndarray:
    """The hash of every window of ``k`` units of ``units`` (windows that cross documents
    included: callers drop them), ``len(units) - k + 1`` of them."""
    if len(units) < k:
        return np.empty(0, np.uint64)
    return _rolling(units.astype(np.uint64), k)


def char_units(norms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(units, lengths)`` of normalised texts, back to back."""
    lengths = np.fromiter((len(t) for t in norms), dtype=np.int64, count=len(norms))
    return np.frombuffer("".join(norms).encode("utf-32-le", "surrogatepass"),
                         dtype=np.uint32), lengths


def shingle_hashes(norms: list[str], s: Shingling) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, doc)`` of normalised texts: every shingle's hash (in document order,
    repeats kept) and the batch index of its document."""
    if s.kind == "word":
        per_doc = [_words(t) for t in norms]
        lengths = np.fromiter((len(w) for w in per_doc), dtype=np.int64, count=len(norms))
        units = _word_units([w for ws in per_doc for w in ws])
    else:
        units, lengths = char_units(norms)
    return unit_hashes(units, lengths, s.size)


# -- identity keys ---------------------------------------------------------------------
URL_FIELDS = ("url", "warc-target-uri", "warc_target_uri", "source_url", "uri", "link")
_TRACKING = re.compile(r"^(utm_.*|gclid|fbclid|msclkid|dclid|yclid|mc_cid|mc_eid|_ga|_gl|"
                       r"igshid|ref_src|spm)$", re.IGNORECASE)


def canonical_url(url: str) -> str | None:
    """The URL without scheme, fragment, trailing ``/``, repeated ``www.`` and tracking
    parameters, lower-cased, with its remaining parameters sorted (``None``: no host).
    String operations for the common form; ``urllib`` for user info, ports and odd
    forms (the same result, tested)."""
    url = url.strip()
    start = url.find("://")
    rest = url[start + 3:] if start >= 0 else url
    if start < 0 and ("/" in url.split("?", 1)[0][:1] or ":" in url):
        return _canonical_url(url)
    rest = rest.split("#", 1)[0]
    rest, _, query = rest.partition("?")
    host, slash, path = rest.partition("/")
    if not host or "@" in host or ":" in host or "%" in host or "[" in host:
        return _canonical_url(url)
    host = host.lower()
    while host.startswith("www."):
        host = host[4:]
    if not host:
        return None
    path = ("/" + path).rstrip("/") if slash else ""
    if query:
        params = sorted((k, v) for k, v in parse_qsl(query, keep_blank_values=True)
                        if not _TRACKING.match(k))
        query = f"?{urlencode(params)}" if params else ""
    return f"{host}{path}{query}".lower()


def _canonical_url(url: str) -> str | None:
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


#: the URL key of a document whose host no holdout document has (it matches nothing)
NO_MATCH = "url:\0"


def _quick_host(url: str) -> str | None:
    """The host :func:`canonical_url` gives ``url``, or ``None`` when that is not plain."""
    url = url.strip()
    start = url.find("://")
    if start < 0:
        return None
    host = url[start + 3:]
    for sep in "/?#":
        host = host.split(sep, 1)[0]
    if not host or "@" in host or ":" in host or "%" in host or "[" in host:
        return None
    host = host.lower()
    while host.startswith("www."):
        host = host[4:]
    return host or None


def url_hosts(keys: Iterable[str]) -> frozenset[str]:
    """The hosts of the URL keys among ``keys`` (what :func:`identity_key`'s ``hosts``
    takes)."""
    return frozenset(k[4:].split("/", 1)[0].split("?", 1)[0] for k in keys
                     if k.startswith("url:"))


def identity_key(record: dict, doc_id: str | None, text: str, split: str,
                 prefer_id_field: bool, shared_id_space: bool,
                 hosts: frozenset[str] | None = None) -> tuple[str, str]:
    """``(key field, key)``: the first of canonical URL, id, normalised-text hash
    (``prefer_id_field``: the id first). With ``hosts`` (the other split's URL hosts),
    a URL whose host is not among them is not canonicalised: its key is
    :data:`NO_MATCH`, which matches nothing (the key field is the same)."""
    url_key: tuple[str, str] | None = None
    for f in URL_FIELDS:
        value = record.get(f)
        if isinstance(value, str):
            if hosts is not None:
                quick = _quick_host(value)
                if quick is not None and quick not in hosts:
                    url_key = ("url", NO_MATCH)
                    break
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
