"""The filter's gates, evaluated over whole batches of texts.

Gates combine with AND. In the default order (``order="reference"``, the reference's
stage order, which its per-gate counts follow: spec section 8) they are:

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

``order="cheapest_first"`` evaluates the word bounds and the policy gates (one pass of
signals over the batch) first and the language gate last, and runs the language model
only on the documents the cheaper gates kept: a document already removed is never
language-scored. Attribution follows that evaluation order (the first failing gate of
``word_count_bounds`` -> policy gates -> ``language``), so a document failing both a
policy gate and the language gate counts under the policy gate; the kept documents are
the same in either order (AND does not depend on it). Its rejection record lists the
gates it fails among those evaluated, and ``not_evaluated: ["language"]`` when the
model was skipped. ``diagnose_all_gates`` (``diagnose_all=True``) scores every
document with every gate again, for the full diagnosis, keeping the evaluation-order
attribution (the same counts as without it).
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
Order = Literal["reference", "cheapest_first"]
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
    #: the evaluation and attribution order (module docstring)
    order: Order = "reference"
    #: with ``cheapest_first``: language-score every document anyway (full diagnosis)
    diagnose_all: bool = False

    @property
    def gate_names(self) -> list[str]:
        """The gates in evaluation order, which is the attribution order."""
        cheap = [WORD_GATE] if self.words else []
        cheap += [name for name, _, _ in self.policy]
        lang = [LANGUAGE_GATE] if self.language else []
        return cheap + lang if self.order == "cheapest_first" else lang + cheap

    @property
    def skips_language(self) -> bool:
        """Documents removed by a cheaper gate are not language-scored."""
        return self.order == "cheapest_first" and not self.diagnose_all

    @property
    def policy_removes(self) -> bool:
        return self.mode in ("filter", "both")


@dataclass
class BatchDecision:
    """Per document: kept or not, the first failing gate, all failing gates, scores.

    ``labels[i]`` is None and ``scores["language"][i]`` NaN for a document the language
    model did not score (``unscored[i]``: removed by a cheaper gate first).
    """

    kept: np.ndarray
    first_gate: list[str | None]
    failed: list[list[str]]
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    labels: list[str | None] | None = None
    annotations: dict[str, np.ndarray] = field(default_factory=dict)
    unscored: np.ndarray | None = None


def decide(
    plan: GatePlan,
    texts: list[str],
    model: LanguageModel | None,
    score: Callable[[list[str], list[str]], dict[str, np.ndarray]],
) -> BatchDecision:
    """Evaluate the gates on ``texts``; ``score(texts, names)`` computes signals.

    The signals of the word and policy gates come from one ``score`` call over the
    batch; the language model runs on every text, or (``plan.skips_language``) only on
    the texts those gates keep.
    """
    n = len(texts)
    passes: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
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
    labels: list[str | None] | None = None
    unscored = None
    if plan.language is not None:
        assert model is not None, "a language gate needs a model"
        if plan.skips_language:
            alive = np.ones(n, dtype=bool)
            for gate in passes.values():
                alive &= gate
            todo = np.flatnonzero(alive)
            unscored = ~alive
        else:
            todo = np.arange(n)
        got, got_conf = model.predict([texts[i] for i in todo]) if len(todo) else ([], [])
        conf = np.full(n, np.nan, dtype=np.float64)
        conf[todo] = np.asarray(got_conf, dtype=np.float64)
        labels = [None] * n
        match = np.zeros(n, dtype=bool)
        for i, label in zip(todo.tolist(), got, strict=True):
            labels[i] = label
            match[i] = label_matches(label, plan.language.codes)
        # NaN (not scored) compares False: those documents are removed by another gate
        with np.errstate(invalid="ignore"):
            lang_pass = match & (conf >= max(plan.language.min_score, 0.0))
        if unscored is not None:
            lang_pass |= unscored  # not evaluated: never listed as failing it
        passes[LANGUAGE_GATE] = lang_pass
        scores[LANGUAGE_GATE] = conf
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
                         annotations=annotations if plan.mode != "filter" else {},
                         unscored=unscored)
