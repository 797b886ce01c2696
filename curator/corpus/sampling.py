"""Per-source proportional allocation and hash-bottom-k ranks (the reference's recipe).

- Allocation: ``max(1, round(max_total * n / total))`` per source, capped at its
  population; while the sum exceeds ``max_total`` the largest allocation is
  trimmed by one (never below 1). ``max_total == 0`` samples everything.
- Rank: the first 8 bytes (big-endian) of ``sha256(f"{seed}:{key}")``; each source's
  sample is its ``k`` documents of smallest rank, so it does not depend on the
  order of the corpus, on sharding, or on which worker saw which partition.
- Key: the document id when ``id_field`` is set, else ``sha256(text)``.
"""

from __future__ import annotations

import hashlib


def allocate(populations: dict[str, int], max_total: int) -> dict[str, int]:
    """How many documents to draw from each source (sorted by source name)."""
    total = sum(populations.values())
    if max_total <= 0 or total <= max_total:
        return {s: n for s, n in sorted(populations.items())}
    alloc = {s: min(n, max(1, round(max_total * n / total)))
             for s, n in sorted(populations.items())}
    while sum(alloc.values()) > max_total:
        largest = max(alloc, key=lambda s: (alloc[s], s))
        if alloc[largest] <= 1:
            break  # more sources than max_total: each keeps its floor of one
        alloc[largest] -= 1
    return alloc


def stable_uint64(seed: int, key: str) -> int:
    """The rank of ``key`` under ``seed``: first 8 bytes of ``sha256(f"{seed}:{key}")``;
    the profile's sampling rank and the subset's global order (the same on every machine
    and run)."""
    digest = hashlib.sha256(f"{seed}:{key}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big")
