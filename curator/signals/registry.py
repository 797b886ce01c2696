"""The closed registry of the 24 quality signals: names, directions, units, grids.

A signal is named, never imported by path. Its score is computed by
:mod:`curator.signals.scoring`; this module says what the score means: which
way is better (``direction``), what a threshold sweep looks like (``grid``),
what the language pack must support (``requires``) and the reference filter's
default threshold (``curator_default``), if any.

Keep rules (one place, used by profile, approve and filter): ``max`` keeps
``s <= t``; ``min`` keeps ``s >= t``; ``interval`` keeps ``lo <= s <= hi``.
A NaN score is never kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

#: recorded in every report and policy as ``signals_impl_version``; bump it when
#: any score's definition changes, so old approvals are refused.
IMPL_VERSION = "corpus-curator-signals-1.0"

Direction = Literal["max", "min", "interval"]
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Grid:
    """A linear threshold sweep; integral grids are rounded and de-duplicated."""

    lo: float
    hi: float
    points: int = 64
    integral: bool = False

    def values(self) -> np.ndarray:
        grid = np.linspace(self.lo, self.hi, self.points)
        if self.integral:
            grid = np.unique(np.round(grid))
        return grid

    def to_dict(self) -> dict[str, object]:
        return {"lo": self.lo, "hi": self.hi, "points": self.points, "integral": self.integral}


@dataclass(frozen=True)
class SignalSpec:
    """What a signal's score means; ``grid`` is the min axis of an interval signal."""

    name: str
    direction: Direction
    units: str
    grid: Grid
    requires: tuple[str, ...] = ()
    curator_default: tuple[float | None, float | None] | None = None
    max_grid: Grid | None = None  # interval signals: the max axis
    description: str = ""

    @property
    def is_interval(self) -> bool:
        return self.direction == "interval"

    def keep(
        self, scores: np.ndarray, lo: float | None = None, hi: float | None = None
    ) -> np.ndarray:
        """Boolean keep mask for ``scores`` under bounds ``lo`` (min) / ``hi`` (max)."""
        scores = np.asarray(scores, dtype=np.float64)
        kept = ~np.isnan(scores)
        if lo is not None:
            kept &= scores >= lo
        if hi is not None:
            kept &= scores <= hi
        return kept

    def keep_one(self, threshold: float, scores: np.ndarray) -> np.ndarray:
        """Keep mask for a one-sided threshold in this signal's direction."""
        if self.direction == "max":
            return self.keep(scores, hi=threshold)
        if self.direction == "min":
            return self.keep(scores, lo=threshold)
        raise ValueError(f"{self.name} is an interval signal: give both bounds")


REGISTRY: dict[str, SignalSpec] = {}


def register(spec: SignalSpec) -> SignalSpec:
    """Add a signal; duplicates and non-identifier names are refused."""
    if not _NAME.match(spec.name):
        raise ValueError(f"signal name {spec.name!r} is not an identifier")
    if spec.name in REGISTRY:
        raise ValueError(f"signal {spec.name!r} is already registered")
    if spec.is_interval != (spec.max_grid is not None):
        raise ValueError(f"signal {spec.name!r}: interval signals (only) need a max_grid")
    REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> SignalSpec:
    return REGISTRY[name]


RATIO = Grid(0.0, 1.0)


def _ratio(name: str, direction: Direction, default: float | None, requires=(), desc=""):
    bounds = None
    if default is not None:
        bounds = (None, default) if direction == "max" else (default, None)
    register(SignalSpec(name, direction, "ratio", RATIO, tuple(requires), bounds, description=desc))


# -- agnostic: no requirement ------------------------------------------------------------
_ratio("bullet_ratio", "max", 0.9, desc="share of lines that start with a bullet")
_ratio("ellipsis", "max", 0.3, desc="share of lines that end in an ellipsis")
_ratio("parentheses_ratio", "max", 0.1, desc="share of characters that are brackets")
_ratio("urls_ratio", "max", 0.2, desc="share of characters inside URLs")
_ratio("white_space", "max", 0.25, desc="share of characters that are whitespace")
_ratio(
    "unicode_alpha_numeric", "max", 0.25,
    desc="share of characters that are not alphanumeric (L/N/M, ZWJ/ZWNJ) nor \\n?!,.",
)

# -- the reference's NeMo Curator filters, gated by a writing-system capability ----------
_ratio("non_alpha_numeric", "max", 0.25, ["ascii_alphabet"],
       "share of characters outside [a-zA-Z0-9\\n?!,.]")
_ratio("numbers_ratio", "max", 0.15, ["ascii_digits"], "share of characters that are digits")
_ratio("punctuation", "max", 0.85, ["ascii_punctuation"],
       "share of sentences (lines) with no end mark")
_ratio("symbol_to_word", "max", 0.1, ["word_segmentation"],
       "share of words that are ellipses or hash symbols")
register(SignalSpec(
    "max_word_length", "max", "characters", Grid(10, 5000, integral=True),
    ("word_segmentation",), (None, 1000), description="length of the longest word",
))
_ratio("words_with_alphabets", "min", 0.8, ["word_segmentation"],
       "share of words that contain a letter")
_ratio("repeating_duplicate_ngrams", "max", 0.2, ["word_segmentation"],
       "share of characters in duplicated word 2-grams")
register(SignalSpec(
    "word_count", "interval", "words", Grid(0, 200, 32, integral=True),
    ("word_segmentation",), (50, 100000), Grid(1000, 20000, 32, integral=True),
    description="number of words",
))
register(SignalSpec(
    "mean_word_length", "interval", "characters", Grid(1, 8, 8),
    ("word_segmentation",), (3, 10), Grid(8, 30, 23), description="mean word length",
))
register(SignalSpec(
    "token_count", "interval", "tokens", Grid(0, 512, 33, integral=True),
    ("tokenizer",), None, Grid(1024, 32768, 32, integral=True),
    description="number of tokenizer tokens",
))

# -- pack-backed: each needs the same-named capability (script ones: script_ratio) -------
_ratio("script_ratio", "min", None, ["script_ratio"],
       "share of letters and marks that are in the pack's charset")
_ratio("latin_ratio", "max", None, ["script_ratio"], "share of letters that are ASCII a-z/A-Z")
_ratio("foreign_script_ratio", "max", None, ["script_ratio"],
       "share of letters in neither the charset nor ASCII")
_ratio("diacritic_ratio", "min", None, ["diacritic_ratio"],
       "share of letters that change when folded")
_ratio("stopword_ratio", "min", None, ["stopword_ratio"],
       "share of words (casefolded, ASCII punctuation stripped) that are stopwords")
_ratio("stopword_ratio_folded", "min", None, ["stopword_ratio_folded"],
       "stopword_ratio after folding both the text and the list")
_ratio("sentence_end_ratio", "min", None, ["sentence_end_ratio"],
       "share of non-empty lines that end in a sentence terminator")
register(SignalSpec(
    "boilerplate_hits", "max", "patterns", Grid(0, 20, integral=True),
    ("boilerplate_hits",), None, description="number of boilerplate patterns that match",
))

assert len(REGISTRY) == 24, len(REGISTRY)


def missing_requirements(spec: SignalSpec, capabilities: frozenset[str] | set[str]) -> list[str]:
    """Requirements of ``spec`` not met by ``capabilities`` (``tokenizer`` included)."""
    return [req for req in spec.requires if req not in capabilities]
