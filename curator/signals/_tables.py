"""Per-code-point property tables for the character-class signals (private).

Every character-class count in :mod:`curator.signals.scoring` is one lookup of a
code point's *class* (a small integer naming a combination of the properties
below) followed by one ``bincount`` over (document, class). The tables are built
once per process (the base properties, from :mod:`unicodedata`) and once per
language pack (charset membership and foldability), then cached.
"""

from __future__ import annotations

import threading
import unicodedata
from dataclasses import dataclass

import numpy as np

from curator.langpack.model import LangPack

N_CODEPOINTS = 0x110000

#: Python's ``str.isspace`` set (what ``str.split()``/``str.strip()`` use), Unicode 14+
PY_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
#: NeMo Curator's ``white_space_list``
CURATOR_WHITESPACE = "\t\n\r\b "
#: NeMo Curator's ``regex_alphanum`` = ``[a-zA-Z0-9\n?!,.]``
ASCII_ALNUM_EXTRA = "\n?!,."
#: NeMo Curator's ``regex_paren``
PARENTHESES = "{}⟨⟩[]()"
ZWNJ_ZWJ = "\u200c\u200d"
#: NeMo Curator's bullet_list (``bullet_ratio`` runs its line regex only on documents
#: that have one of these characters)
BULLETS = "\u2022\u2023\u2043\u204c\u204d\u2219\u25cb\u25cf\u25d8\u25e6\u29be\u29bf"

# property bits
PY_WS = 1 << 0  # str.isspace()
CUR_WS = 1 << 1  # Curator's white_space_list
ASCII_ANP = 1 << 2  # [a-zA-Z0-9\n?!,.]
UNI_ANP = 1 << 3  # Unicode L/N/M, ZWNJ/ZWJ, or \n?!,.
DIGIT = 1 << 4  # [0-9]
PAREN = 1 << 5  # {}⟨⟩[]()
LETTER = 1 << 6  # category L*
LETTER_MARK = 1 << 7  # category L* or M*
ASCII_ALPHA = 1 << 8  # [a-zA-Z]
IN_CHARSET = 1 << 9  # in the pack's charset (pack tables only)
FOLDS = 1 << 10  # a letter with pack.fold(ch) != ch (pack tables only)
BULLET = 1 << 11  # one of BULLETS


@dataclass(frozen=True)
class ClassTable:
    """``cls[cp]`` is the class of code point ``cp``; ``bits[k]`` the properties of class k."""

    cls: np.ndarray  # uint8, one entry per code point
    bits: np.ndarray  # int64, one entry per class

    @property
    def n_classes(self) -> int:
        return len(self.bits)

    def columns(self, mask: int, exclude: int = 0) -> np.ndarray:
        """Classes having every property in ``mask`` and none in ``exclude``."""
        return np.flatnonzero(((self.bits & mask) == mask) & ((self.bits & exclude) == 0))


_LOCK = threading.Lock()
_BASE: np.ndarray | None = None
_PACK_CACHE: dict[tuple[object, ...], ClassTable] = {}


def _set(table: np.ndarray, chars: str, bit: int) -> None:
    table[[ord(c) for c in chars]] |= bit


def base_bits() -> np.ndarray:
    """The pack-independent property bits of every code point (built once)."""
    global _BASE
    with _LOCK:
        if _BASE is None:
            table = np.zeros(N_CODEPOINTS, dtype=np.int64)
            letters, marks, numbers = [], [], []
            for cp in range(N_CODEPOINTS):
                major = unicodedata.category(chr(cp))[0]
                if major == "L":
                    letters.append(cp)
                elif major == "M":
                    marks.append(cp)
                elif major == "N":
                    numbers.append(cp)
            table[letters] |= LETTER | LETTER_MARK | UNI_ANP
            table[marks] |= LETTER_MARK | UNI_ANP
            table[numbers] |= UNI_ANP
            _set(table, ZWNJ_ZWJ + ASCII_ALNUM_EXTRA, UNI_ANP)
            _set(table, PY_WHITESPACE, PY_WS)
            _set(table, CURATOR_WHITESPACE, CUR_WS)
            ascii_letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
            _set(table, ascii_letters + "0123456789" + ASCII_ALNUM_EXTRA, ASCII_ANP)
            _set(table, "0123456789", DIGIT)
            _set(table, PARENTHESES, PAREN)
            _set(table, BULLETS, BULLET)
            _set(table, ascii_letters, ASCII_ALPHA)
            _BASE = table
        return _BASE


def _densify(bits: np.ndarray) -> ClassTable:
    values, inverse = np.unique(bits, return_inverse=True)
    if len(values) > 255:  # pragma: no cover - a handful of properties
        raise RuntimeError("too many character classes")
    return ClassTable(cls=inverse.astype(np.uint8), bits=values.astype(np.int64))


def class_table(pack: LangPack | None) -> ClassTable:
    """The class table for ``pack`` (or the pack-independent one), cached."""
    key: tuple[object, ...] = ()
    if pack is not None:
        key = (pack.charset, tuple(sorted(pack.fold_map.items())))
    with _LOCK:
        cached = _PACK_CACHE.get(key)
    if cached is not None:
        return cached
    bits = base_bits().copy()
    if pack is not None:
        charset = [ord(c) for c in pack.charset if len(c) == 1]
        bits[charset] |= IN_CHARSET
        folds = [
            cp for cp in np.flatnonzero(bits & LETTER).tolist()
            if pack.fold(chr(cp)) != chr(cp)
        ]
        bits[folds] |= FOLDS
    table = _densify(bits)
    with _LOCK:
        if len(_PACK_CACHE) > 16:
            _PACK_CACHE.clear()
        _PACK_CACHE[key] = table
    return table
