"""The subset's plan: pure functions over compact tables (no I/O, no per-document state).

The plan is made on the exchange (:mod:`curator.subset.ranges`): units give the driver a
table of strata x ranges of the order, and these functions turn it into quotas and cuts.

1. **Strata**: ``source|band[|dN]``. Length bands from the token count
   (``0-128``, ``128-512``, ..., ``8192+``; a count equal to a bound is in the upper
   band); score deciles ``d0..d9`` from the cut points ``ordered[min(n-1, n*d//10)]``,
   d = 1..9 (a score equal to a cut point is in the upper decile), found without sorting
   every score in one process (:mod:`curator.subset.deciles`).
2. **Order**: every document by ``(stable_uint64(seed, id), id)``, the kernel's rank
   (``curator.corpus.sampling``: the first 8 bytes of ``sha256(f"{seed}:{id}")``).
3. **Quotas**: per budget, the Jefferson/D'Hondt apportionment of ``min(b, total)``
   tokens over the strata's token totals (ties to the smaller stratum key), which is
   house-monotone: a larger budget never gives a stratum less. Asserted.
4. **Prefixes**: each stratum contributes the documents of its order up to the first
   that would exceed its quota; nothing is refilled from another stratum. Because the
   quotas grow with the budget and the order is the same, the tiers nest.

The same plan made in one process over every document, the reference the tests hold
this one to, is ``tests/subset/_oracle.py``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curator.errors import CuratorError

#: how many ids an ``id_field_not_unique`` refusal shows
EXAMPLES = 3


def band_names(bands: Sequence[int]) -> list[str]:
    """``0-128``, ``128-512``, ..., ``8192+``."""
    lows = [0, *bands]
    return [f"{lo}-{hi}" for lo, hi in zip(lows, bands, strict=False)] + [f"{bands[-1]}+"]


def dhondt(weights: Sequence[int], seats: int) -> list[int]:
    """Jefferson/D'Hondt: ``seats`` apportioned over ``weights`` (ties to the lower
    index). Exact integers: starts from ``floor(w * seats / W)`` (a D'Hondt allocation
    of a smaller house) and gives each remaining seat to the largest ``w / (q + 1)``."""
    total = sum(weights)
    if seats <= 0 or total <= 0:
        return [0] * len(weights)
    quota = [w * seats // total for w in weights]
    left = seats - sum(quota)
    # max-heap on w/(q+1): compare fractions exactly with a key of Fraction-like ints
    from fractions import Fraction

    heap = [(-Fraction(w, q + 1), i) for i, (w, q) in enumerate(zip(weights, quota,
                                                                    strict=True)) if w > 0]
    heapq.heapify(heap)
    while left > 0 and heap:
        _, i = heapq.heappop(heap)
        quota[i] += 1
        left -= 1
        heapq.heappush(heap, (-Fraction(weights[i], quota[i] + 1), i))
    return quota


@dataclass
class Tier:
    budget: int
    quotas: list[int]  # per stratum
    taken_docs: list[int]  # per stratum: the prefix length
    taken_tokens: list[int]

    @property
    def document_count(self) -> int:
        return sum(self.taken_docs)

    @property
    def achieved(self) -> int:
        return sum(self.taken_tokens)


@dataclass
class PlanTotals:
    """What the driver holds of a plan made on the exchange (no per-document array):
    the strata's totals and each tier's quotas and prefixes (``taken_docs``,
    ``taken_tokens`` per stratum)."""

    strata: list[str]
    stratum_tokens: list[int]
    stratum_docs: list[int]
    stratum_shortest: list[int]
    tiers: list[Tier]
    total_tokens: int
    cut_points: list[float]
    warnings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Cuts:
    """Where each tier's prefix of each stratum ends, from the table strata x ranges:
    ``at[t][s]`` the range it ends in (``ranges``: it takes the whole stratum),
    ``left[t][s]`` the tokens of its quota left for that range, ``before_docs`` and
    ``before_tokens`` what the ranges before it give (all of it)."""

    ranges: int
    at: list[list[int]]
    left: list[list[int]]
    before_docs: list[list[int]]
    before_tokens: list[list[int]]


def stratum_keys(sources: np.ndarray, tokens: np.ndarray, scores: np.ndarray | None,
                 bands: Sequence[int], cut_points: Sequence[float] | None) -> np.ndarray:
    """Each document's stratum key (``source|band[|dN]``), as the plan names
    them; ``cut_points``: the corpus's score deciles (``None``: no score field)."""
    names = np.asarray(band_names(bands), dtype=object)
    band = np.searchsorted(np.asarray(bands, dtype=np.int64), tokens, side="right")
    keys = np.asarray(sources, dtype=object) + "|" + names[band]
    if cut_points is not None and scores is not None:
        dec = np.searchsorted(np.asarray(cut_points), scores, side="right") \
            if len(tokens) else np.zeros(0, dtype=np.int64)
        keys = keys + "|d" + dec.astype(str).astype(object)
    return keys


def budget_quotas(weights: Sequence[int], strata: Sequence[str], shortest: Sequence[int],
                  budgets: Sequence[int], unit: str, warnings: list[dict[str, Any]]
                  ) -> Iterator[tuple[int, list[int]]]:
    """``(budget, quotas per stratum)`` for each budget (ascending): D'Hondt over the
    strata's token totals, house-monotone (``quotas_not_house_monotone`` otherwise);
    ``budget_exceeds_corpus`` and ``starved_strata`` appended to ``warnings``."""
    total = sum(weights)
    previous = [0] * len(weights)
    for b in budgets:
        if b > total:
            warnings.append({"id": "budget_exceeds_corpus",
                             "message": f"budget {b} {unit} exceeds the corpus ({total} {unit}): "
                             "the tier is the whole corpus"})
        quotas = dhondt(weights, min(b, total))
        if any(q < p for q, p in zip(quotas, previous, strict=True)):
            raise CuratorError("quotas_not_house_monotone",
                               f"budget {b}: a stratum's quota shrank from the smaller budget")
        previous = quotas
        starved = [strata[s] for s in range(len(quotas)) if quotas[s] < shortest[s]]
        if starved:
            warnings.append({"id": "starved_strata", "budget": b,
                             "strata": starved,
                             "message": f"budget {b}: {len(starved)} strata have a quota "
                             "smaller than their shortest document and contribute nothing"})
        yield b, quotas


def plan_table(strata: list[str], docs: np.ndarray, tokens: np.ndarray,
               shortest: Sequence[int], budgets: Sequence[int], unit: str,
               cut_points: list[float]) -> tuple[PlanTotals, Cuts]:
    """Quotas and where each prefix ends, from the table of ``strata`` (sorted) x ranges:
    ``docs[s, r]`` and ``tokens[s, r]`` of stratum ``s`` in range ``r``. The tiers'
    ``taken_*`` hold what the ranges before each cut give; :func:`finish_plan` adds
    what the cut ranges' units found."""
    k, ranges = docs.shape if docs.ndim == 2 else (len(strata), 0)
    st_tokens = [int(x) for x in tokens.sum(axis=1)] if k else []
    st_docs = [int(x) for x in docs.sum(axis=1)] if k else []
    total = sum(st_tokens)
    warnings: list[dict[str, Any]] = []
    tiers: list[Tier] = []
    cuts = Cuts(ranges, [], [], [], [])
    for b, quotas in budget_quotas(st_tokens, strata, shortest, budgets, unit, warnings):
        at, left, before_d, before_t = [], [], [], []
        for s in range(k):
            cum_t = cum_d = 0
            r = 0
            while r < ranges and cum_t + int(tokens[s, r]) <= quotas[s]:
                cum_t += int(tokens[s, r])
                cum_d += int(docs[s, r])
                r += 1
            at.append(r)
            left.append(quotas[s] - cum_t)
            before_d.append(cum_d)
            before_t.append(cum_t)
        cuts.at.append(at)
        cuts.left.append(left)
        cuts.before_docs.append(before_d)
        cuts.before_tokens.append(before_t)
        tiers.append(Tier(b, quotas, list(before_d), list(before_t)))
    return (PlanTotals(strata, st_tokens, st_docs, [int(x) for x in shortest], tiers, total,
                       cut_points, warnings), cuts)


def finish_plan(plan: PlanTotals, cuts: Cuts, found: Sequence[Sequence[int]],
                unit: str) -> PlanTotals:
    """Add what each cut range's unit found (``[tier, stratum, documents, tokens]``, the
    part of the range's documents of that stratum inside the tier) to the tiers'
    prefixes, then the shortfall warnings."""
    for t, s, n_docs, n_tokens in found:
        if cuts.at[t][s] < cuts.ranges:
            plan.tiers[t].taken_docs[s] += int(n_docs)
            plan.tiers[t].taken_tokens[s] += int(n_tokens)
    for tier in plan.tiers:
        short = tier.budget - tier.achieved
        if short > 0:
            plan.warnings.append({"id": "token_shortfall", "budget": tier.budget,
                                  "shortfall": short,
                                  "message": f"budget {tier.budget}: {short} {unit} short "
                                  "(strata stop at the first document that would exceed "
                                  "their quota; nothing is refilled from another stratum)"})
    return plan
