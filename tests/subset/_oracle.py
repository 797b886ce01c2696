"""The subset's plan made in one process over every document: the reference the plan on
the exchange (:mod:`curator.subset.ranges`, :func:`curator.subset.planning.plan_table`)
is tested against. Test support only: the step never holds per-document arrays."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curator.errors import CuratorError
from curator.subset.planning import EXAMPLES, Tier, band_names, budget_quotas


def score_cut_points(scores: np.ndarray) -> list[float]:
    """The nine cut points by sorting every score (-0.0 as 0.0), as
    :mod:`curator.subset.deciles` finds them without doing so."""
    ordered = np.sort(np.asarray(scores, dtype=np.float64) + 0.0)
    n = len(ordered)
    if n == 0:
        return []
    return [float(ordered[min(n - 1, n * d // 10)]) for d in range(1, 10)]


@dataclass
class Plan:
    """The plan of one corpus: strata, order, quotas, and the first tier of each document
    (``first_tier[i] == len(tiers)``: in none)."""

    strata: list[str]
    stratum: np.ndarray  # int32 per document
    stratum_tokens: list[int]
    stratum_docs: list[int]
    stratum_shortest: list[int]
    order: np.ndarray  # document indices grouped by stratum, in the global order within
    tiers: list[Tier]
    first_tier: np.ndarray  # int8 per document
    total_tokens: int
    cut_points: list[float]
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def tier_members(self, t: int) -> np.ndarray:
        """Document indices of tier ``t`` (in stratum, then global order)."""
        return self.order[self.first_tier[self.order] <= t]


def check_unique(ids: Any) -> None:
    """``id_field_not_unique`` with three examples (``ids``: a polars Series)."""
    dup = ids.filter(ids.is_duplicated())
    if len(dup):
        examples = dup.unique(maintain_order=True).head(EXAMPLES).to_list()
        raise CuratorError("id_field_not_unique",
                           f"{dup.n_unique()} ids occur more than once, e.g. {examples}: "
                           "the subset needs one id per document", examples=examples)


def global_order(hashes: np.ndarray, ids: Sequence[str]) -> np.ndarray:
    """Indices sorted by ``(hash, id)``."""
    order = np.argsort(hashes, kind="stable")
    h = hashes[order]
    same = np.flatnonzero(h[1:] == h[:-1])
    if len(same):  # equal hashes (rare): sort each run by id
        starts = same[np.r_[True, np.diff(same) > 1]]
        for s in starts:
            e = s + 1
            while e < len(h) and h[e] == h[s]:
                e += 1
            run = order[s:e].tolist()
            order[s:e] = sorted(run, key=lambda i: ids[i])
    return order


def make_plan(ids: Any, hashes: np.ndarray, tokens: np.ndarray,
              sources: Sequence[str] | tuple[np.ndarray, Sequence[str]],
              scores: np.ndarray | None, budgets: Sequence[int], bands: Sequence[int],
              unit: str) -> Plan:
    """The whole plan (``budgets`` ascending; ``ids`` a polars Series; ``sources`` one
    per document, or ``(codes, names)``)."""
    check_unique(ids)
    n = len(tokens)
    band_idx = np.searchsorted(np.asarray(bands, dtype=np.int64), tokens, side="right")
    names = band_names(bands)
    cuts: list[float] = []
    if isinstance(sources, tuple):  # (codes, names): a dictionary-encoded column
        src_code, src_names = sources
        src_code = np.asarray(src_code, dtype=np.int64)
    elif n:
        src_names, src_code = np.unique(np.asarray(sources, dtype=object), return_inverse=True)
    else:
        src_names, src_code = np.array([], dtype=object), np.zeros(0, dtype=np.int64)
    combined = src_code.astype(np.int64) * len(names) + band_idx
    if scores is not None:
        cuts = score_cut_points(scores)
        dec = np.searchsorted(np.asarray(cuts), scores, side="right") if n else \
            np.zeros(0, dtype=np.int64)
        combined = combined * 10 + dec
    codes, inverse = np.unique(combined, return_inverse=True)

    def key(code: int) -> str:
        dec = None
        if scores is not None:
            code, dec = divmod(int(code), 10)
        s, b = divmod(int(code), len(names))
        return f"{src_names[s]}|{names[b]}" + (f"|d{dec}" if dec is not None else "")

    keys = [key(c) for c in codes]
    rank = np.argsort(np.asarray(keys, dtype=object), kind="stable")
    remap = np.empty(len(keys), dtype=np.int32)
    remap[rank] = np.arange(len(keys), dtype=np.int32)
    strata = [keys[i] for i in rank]
    stratum = remap[inverse] if n else np.zeros(0, dtype=np.int32)
    k = len(strata)
    st_tokens = np.zeros(k, dtype=np.int64)
    np.add.at(st_tokens, stratum, tokens)
    st_docs = np.bincount(stratum, minlength=k).astype(np.int64)
    shortest = np.full(k, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(shortest, stratum, tokens)
    total = int(tokens.sum())

    glob = global_order(hashes, ids.to_list() if len(np.unique(hashes)) < n else [])
    order = glob[np.argsort(stratum[glob], kind="stable")]
    cum = np.cumsum(tokens[order])
    start = np.r_[0, np.cumsum(st_docs)[:-1]].astype(np.int64)
    base = np.where(start > 0, cum[np.maximum(start - 1, 0)], 0) if n else start
    warnings: list[dict[str, Any]] = []
    tiers: list[Tier] = []
    weights = [int(x) for x in st_tokens]
    for b, quotas in budget_quotas(weights, strata, [int(x) for x in shortest], budgets,
                                   unit, warnings):
        taken_docs, taken_tokens = [], []
        for s in range(k):
            seg = cum[start[s]:start[s] + st_docs[s]] - base[s]
            m = int(np.searchsorted(seg, quotas[s], side="right"))
            taken_docs.append(m)
            taken_tokens.append(int(seg[m - 1]) if m else 0)
        tiers.append(Tier(b, quotas, taken_docs, taken_tokens))
    # the first tier of each document, from its rank in its stratum
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n, dtype=np.int64) - np.repeat(start, st_docs)
    first = np.zeros(n, dtype=np.int8)
    for tier in tiers:
        first += (pos >= np.asarray(tier.taken_docs, dtype=np.int64)[stratum]).astype(np.int8)
    for tier in tiers:
        short = tier.budget - tier.achieved
        if short > 0:
            warnings.append({"id": "token_shortfall", "budget": tier.budget,
                             "shortfall": short,
                             "message": f"budget {tier.budget}: {short} {unit} short "
                             "(strata stop at the first document that would exceed their "
                             "quota; nothing is refilled from another stratum)"})
    return Plan(strata, stratum, weights, [int(x) for x in st_docs],
                [int(x) if d else 0 for x, d in zip(shortest, st_docs, strict=True)],
                order, tiers, first, total, cuts, warnings)


def verify_nesting(tier_ids: Sequence[set[str]]) -> None:
    """Every tier inside the next larger one (``tiers_do_not_nest``)."""
    for small, large in itertools.pairwise(tier_ids):
        extra = small - large
        if extra:
            raise CuratorError("tiers_do_not_nest",
                               f"{len(extra)} documents of a smaller tier are missing from "
                               f"the next larger one, e.g. {sorted(extra)[:EXAMPLES]}")
