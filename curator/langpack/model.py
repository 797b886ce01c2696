"""The loaded, validated form of a language pack (what signals and reports use)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

#: capabilities backed by pack data, each checked against that data at load
DATA_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "script_ratio": ("charset",),
    "diacritic_ratio": ("charset", "fold_map"),
    "stopword_ratio": ("stopwords",),
    "stopword_ratio_folded": ("stopwords", "fold_map"),
    "boilerplate_hits": ("boilerplate",),
    "sentence_end_ratio": ("terminators",),
}
#: writing-system assertions: declared by the pack, not checkable against data
WRITING_SYSTEM: frozenset[str] = frozenset(
    {"word_segmentation", "ascii_digits", "ascii_punctuation", "ascii_alphabet"}
)
KNOWN_CAPABILITIES: frozenset[str] = frozenset(DATA_CAPABILITIES) | WRITING_SYSTEM


@dataclass(frozen=True)
class LangPack:
    """A language pack after loading and validation (immutable, picklable).

    Build one with :func:`curator.langpack.load_langpack`; ``boilerplate`` holds the
    pattern strings and :attr:`boilerplate_regexes` their compiled forms.
    ``sources`` maps ``stopwords``/``charset``/``boilerplate`` to the manifest's
    ``{file, origin, license}`` (provenance; not part of :meth:`describe`).
    """

    pack_id: str
    language_tag: str
    version: str
    root: str
    content_hash: str
    capabilities: frozenset[str]
    stopwords: frozenset[str] = frozenset()
    charset: frozenset[str] = frozenset()
    boilerplate: tuple[str, ...] = ()
    fold_map: dict[str, str] = field(default_factory=dict)
    sentence_terminators: tuple[str, ...] = (".", "!", "?")
    notes: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, dict[str, str]] = field(default_factory=dict, compare=False)
    _compiled: tuple[re.Pattern[str], ...] = field(
        init=False, repr=False, compare=False, default=()
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(re.compile(p) for p in self.boilerplate))

    @property
    def boilerplate_regexes(self) -> tuple[re.Pattern[str], ...]:
        """The ``boilerplate`` patterns, compiled once (same order)."""
        return self._compiled

    def supports(self, capability: str) -> bool:
        """Whether the pack declares ``capability`` in ``[capabilities] supports``."""
        return capability in self.capabilities

    def fold(self, text: str) -> str:
        """``fold_map`` per character, then NFD with combining marks dropped."""
        mapped = "".join(self.fold_map.get(ch, ch) for ch in text)
        return "".join(
            ch for ch in unicodedata.normalize("NFD", mapped) if not unicodedata.combining(ch)
        )

    def describe(self) -> dict[str, Any]:
        """What reports embed about the pack (the reference's ``describe()``)."""
        return {
            "pack_id": self.pack_id,
            "language_tag": self.language_tag,
            "version": self.version,
            "content_hash": self.content_hash,
            "capabilities": sorted(self.capabilities),
            "stopwords": len(self.stopwords),
            "charset": len(self.charset),
            "boilerplate_patterns": len(self.boilerplate),
            "fold_map_entries": len(self.fold_map),
            "sentence_terminators": list(self.sentence_terminators),
            "notes": dict(self.notes),
        }
