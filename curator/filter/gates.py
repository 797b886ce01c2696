"""The filter's gates, evaluated over whole batches of texts.

Gates run in the reference's stage order and combine with AND:

1. ``language``: a language-ID model's top label must be one of ``language_codes``
   (case-insensitive; ``en`` also matches ``en_Latn``-style labels by the part before
   ``_``) with a confidence of at least ``min_langid_score`` (negative scores never
   pass);
2. ``word_count``: ``min_words <= word_count <= max_words`` (the ``word_count`` signal);
3. one gate per threshold of the approved policy, in the policy's order, each with
   the registry's keep rule.

A removed document is attributed to the first gate it fails, in that order, which is
what sequential filter stages would count; its rejection record lists every gate it
fails, with the scores, so "why is this document missing" has a complete answer.
``mode`` affects only the policy gates: ``annotate`` scores without removing,
``both`` scores and removes, ``filter`` removes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from curator.corpus.langid import LanguageModel
from curator.langpack import LangPack
from curator.signals.registry import REGISTRY

Mode = Literal["filter", "annotate", "both"]
LANGUAGE_GATE = "language"
WORD_GATE = "word_count_bounds"

def normalise_label(label: str) -> str:
    """``__label__en_Latn`` -> ``en_latn``."""
    return label.removeprefix("__label__").lower()


def label_matches(label: str, codes: Sequence[str]) -> bool:
    """Case-insensitive; ``en`` also matches a label ``en_Latn`` by its part before ``_``."""
    norm = normalise_label(label)
    wanted = {c.lower() for c in codes}
    return norm in wanted or norm.split("_", 1)[0] in wanted


@dataclass(frozen=True)
class LanguageGate:
    codes: tuple[str, ...]
    min_score: float


@dataclass(frozen=True)
class GatePlan:
    """Everything a worker needs to decide a batch (picklable)."""

    mode: Mode = "filter"
    language: LanguageGate | None = None
    words: tuple[int, int] | None = None
    policy: tuple[tuple[str, float | None, float | None], ...] = ()
    pack: LangPack | None = None

    @property
    def gate_names(self) -> list[str]:
        names = [LANGUAGE_GATE] if self.language else []
        names += [WORD_GATE] if self.words else []
        return names + [name for name, _, _ in self.policy]

    @property
    def policy_removes(self) -> bool:
        return self.mode in ("filter", "both")


@dataclass
class BatchDecision:
    """Per document: kept or not, the first failing gate, all failing gates, scores."""

    kept: np.ndarray
    first_gate: list[str | None]
    failed: list[list[str]]
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    labels: list[str] | None = None
    annotations: dict[str, np.ndarray] = field(default_factory=dict)


def decide(
    plan: GatePlan,
    texts: list[str],
    model: LanguageModel | None,
    score: Callable[[list[str], list[str]], dict[str, np.ndarray]],
) -> BatchDecision:
    """Evaluate every gate on ``texts``; ``score(texts, names)`` computes signals."""
    n = len(texts)
    passes: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    labels = None
    if plan.language is not None:
        assert model is not None, "a language gate needs a model"
        labels, conf = model.predict(texts)
        conf = np.asarray(conf, dtype=np.float64)
        match = np.array([label_matches(lb, plan.language.codes) for lb in labels], dtype=bool)
        passes[LANGUAGE_GATE] = match & (conf >= max(plan.language.min_score, 0.0))
        scores[LANGUAGE_GATE] = conf
    names = [name for name, _, _ in plan.policy]
    if plan.words is not None and "word_count" not in names:
        names = ["word_count", *names]
    computed = score(texts, names) if names and n else {k: np.zeros(0) for k in names}
    if plan.words is not None:
        wc = computed["word_count"]
        lo, hi = plan.words
        passes[WORD_GATE] = REGISTRY["word_count"].keep(wc, lo, hi)
        scores[WORD_GATE] = wc
    annotations: dict[str, np.ndarray] = {}
    for name, lo, hi in plan.policy:
        values = computed[name]
        annotations[name] = values
        if plan.policy_removes:
            passes[name] = REGISTRY[name].keep(values, lo, hi)
            scores[name] = values
    order = [g for g in plan.gate_names if g in passes]
    kept = np.ones(n, dtype=bool)
    first: list[str | None] = [None] * n
    failed: list[list[str]] = [[] for _ in range(n)]
    for gate in order:
        fail = ~passes[gate]
        for i in np.flatnonzero(fail):
            failed[i].append(gate)
            if first[i] is None:
                first[i] = gate
        kept &= ~fail
    return BatchDecision(kept=kept, first_gate=first, failed=failed, scores=scores,
                         labels=labels,
                         annotations=annotations if plan.mode != "filter" else {})
