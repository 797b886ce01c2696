"""curate dedup against brute force on 20,000+ documents with planted near-duplicates:
every pair at Jaccard >= threshold + 0.05 found (recall >= 0.99; pairs put in one
component), and with ``verify`` no removal on an edge below the threshold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from curator.dedup import jaccard, shingle_sets
from curator.exchange import key_hash
from tests.dedup._support import WORDS, dedup, kept, removed, write

THRESHOLD = 0.8


def _corpus(seed: int, bases: int) -> list[dict[str, str]]:
    """``bases`` documents of 150 random words, a third with 1-3 copies of 0-4 words
    changed (Jaccard about 1.0, 0.93, 0.87, 0.81, 0.76: around the threshold)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(WORDS)
    words = vocab[rng.integers(0, len(WORDS), (bases, 150))]
    docs = [{"id": f"d{b}", "text": " ".join(words[b])} for b in range(bases)]
    for b in range(0, bases, 3):
        for c in range(int(rng.integers(1, 4))):
            copy = words[b].copy()
            for p in rng.choice(np.arange(5, 145), int(rng.integers(0, 5)), replace=False):
                copy[p] = f"n{b}x{c}x{p}"
            docs.append({"id": f"d{b}c{c}", "text": " ".join(copy)})
    order = rng.permutation(len(docs))
    return [docs[i] for i in order]


def _brute_force(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair sharing a shingle (every pair of Jaccard > 0), with its Jaccard."""
    sets = shingle_sets(texts)
    doc = np.repeat(np.arange(len(texts)), np.diff(sets.offsets))
    frame = pl.DataFrame({"h": sets.hashes, "d": doc})
    pairs = frame.join(frame, on="h").filter(pl.col("d") < pl.col("d_right")) \
        .select("d", "d_right").unique()
    left, right = pairs["d"].to_numpy(), pairs["d_right"].to_numpy()
    return left, right, jaccard(sets, left, right)


def test_recall_against_brute_force(tmp_path: Path) -> None:
    docs = _corpus(seed=2, bases=16000)
    assert len(docs) >= 20000
    inp = write(tmp_path / "in", {f"f{i}.jsonl": docs[i::4] for i in range(4)})
    report = dedup(inp, tmp_path / "out", partition_size="2MB", source_field=None)
    out = tmp_path / "out"
    gone = removed(out)
    left_ids = [r["id"] for r in kept(out)]
    comp = {i: f"{int(h):016x}" for i, h in zip(
        left_ids, key_hash(pl.Series(left_ids)), strict=True)}
    comp.update({i: r["dedup_component"] for i, r in gone.items()})
    assert len(comp) == len(docs) == report["documents_in"]

    ids = [d["id"] for d in docs]
    left, right, sims = _brute_force([d["text"] for d in docs])
    wanted = sims >= THRESHOLD + 0.05
    assert wanted.sum() > 3000
    found = sum(comp[ids[a]] == comp[ids[b]] for a, b in zip(left[wanted], right[wanted],
                                                              strict=True))
    assert found / wanted.sum() >= 0.99, (found, wanted.sum())
    # verify: every removal is on an edge at or above the threshold, recomputed here
    by_pair = {(ids[a], ids[b]): s for a, b, s in zip(left, right, sims, strict=True)}
    by_pair.update({(ids[b], ids[a]): s for a, b, s in zip(left, right, sims, strict=True)})
    for i, r in gone.items():
        assert by_pair[(i, r["dedup_neighbor"])] == r["dedup_neighbor_similarity"] >= THRESHOLD
        if r["dedup_survivor"] != r["dedup_neighbor"]:
            assert by_pair.get((i, r["dedup_survivor"]), 0.0) == r["dedup_similarity"]
    assert report["removed"] == len(gone) > 4000
