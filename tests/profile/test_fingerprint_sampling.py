"""The corpus fingerprint and the sample, against their recipes computed here."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.corpus.fingerprint import RowDigest, fingerprint_key, text_digest
from curator.corpus.sampling import allocate, stable_uint64
from tests.profile._support import corpus_records, recipe_fingerprint, recipe_rank


def _digest(records: list[dict], with_id: bool = True) -> str:
    d = RowDigest()
    for r in records:
        d.add(fingerprint_key(r["id"] if with_id else None, text_digest(r["text"])))
    return d.digest


def test_fingerprint_is_the_recipe_and_ignores_order_and_sharding() -> None:
    records = corpus_records(300)
    assert _digest(records) == recipe_fingerprint(records)
    assert _digest(records, with_id=False) == recipe_fingerprint(records, with_id=False)
    # partial digests of any split merge to the whole, in any order
    parts = [records[:17], records[17:200], records[200:]]
    merged = RowDigest()
    for part in reversed(parts):
        d = RowDigest()
        for r in reversed(part):
            d.add(fingerprint_key(r["id"], text_digest(r["text"])))
        merged = merged.merge(RowDigest.from_json(d.to_json()))
    assert merged.digest == recipe_fingerprint(records)


def test_fingerprint_changes_with_one_document() -> None:
    records = corpus_records(50)
    changed = [dict(r) for r in records]
    changed[10]["text"] += "."
    assert _digest(changed) != _digest(records)
    assert _digest(records[:-1]) != _digest(records)
    assert _digest([*records, records[0]]) != _digest(records)  # a duplicate counts


def test_rank_is_the_first_eight_bytes_of_sha256() -> None:
    for key in ("a", "doc-1", "\u00e9t\u00e9", "x" * 1000):
        assert stable_uint64(3, key) == recipe_rank(3, key)
    assert stable_uint64(0, "a") != stable_uint64(1, "a")


@pytest.mark.parametrize(
    ("populations", "max_total", "expected"),
    [
        ({"a": 10, "b": 30}, 0, {"a": 10, "b": 30}),  # 0 = everything
        ({"a": 10, "b": 30}, 100, {"a": 10, "b": 30}),  # fits: everything
        ({"a": 100, "b": 300}, 40, {"a": 10, "b": 30}),  # proportional
        ({"a": 1, "b": 999}, 10, {"a": 1, "b": 9}),  # floor of one, largest trimmed
        ({"a": 5, "b": 5, "c": 5}, 4, {"a": 1, "b": 1, "c": 1}),  # no upward redistribution
        ({"a": 5, "b": 5, "c": 10}, 3, {"a": 1, "b": 1, "c": 1}),  # 1+1+2 > 3: largest trimmed
        ({"a": 3, "b": 3, "c": 3}, 2, {"a": 1, "b": 1, "c": 1}),  # floors win over the cap
    ],
)
def test_allocation(populations: dict, max_total: int, expected: dict) -> None:
    got = allocate(populations, max_total)
    assert got == expected
    assert all(1 <= got[s] <= populations[s] for s in populations)


def test_allocation_trims_to_the_total(tmp_path: Path) -> None:
    pops = {f"s{i}": 7 * i + 3 for i in range(1, 40)}
    got = allocate(pops, 101)
    assert sum(got.values()) == 101
