"""The corpus fingerprint: an order- and sharding-independent digest of a corpus.

Each document contributes one key, ``f"{id}\\0{sha256hex(text)}"`` (or
``sha256hex(text)`` when there is no id). The digest is the sum of
``int(sha256(key))`` over all documents, modulo 2**256, reported with the count as
``"sha256:" + sha256(f"{count}:{total:064x}")``. A sum commutes, so the order of
documents and how they are split into shards or partitions do not matter, and
partial sums of partitions merge by addition. The filter step recomputes it with
the same code to refuse a policy approved on another corpus.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

MOD = 1 << 256


def text_digest(text: str) -> str:
    """sha256 hex of a document's text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint_key(doc_id: str | None, text_hex: str) -> str:
    return text_hex if doc_id is None else f"{doc_id}\0{text_hex}"


@dataclass
class RowDigest:
    """A running fingerprint: ``add`` keys, ``merge`` partial digests, read ``digest``."""

    count: int = 0
    total: int = 0

    def add(self, key: str) -> None:
        self.count += 1
        self.total = (self.total + int.from_bytes(
            hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest(), "big")) % MOD

    def merge(self, other: RowDigest) -> RowDigest:
        return RowDigest(self.count + other.count, (self.total + other.total) % MOD)

    def to_json(self) -> dict[str, object]:
        return {"count": self.count, "total": f"{self.total:064x}"}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RowDigest:
        return cls(int(data["count"]), int(str(data["total"]), 16))  # type: ignore[arg-type]

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(
            f"{self.count}:{self.total:064x}".encode()).hexdigest()
