"""``exact`` candidates find every pair brute force finds; ``minhash`` recall, measured."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest

from curator.decontamination.index import banding_recall
from tests.decontaminate.brute import pairs
from tests.decontaminate.conftest import removed_rows

VOCAB = [f"w{i}" for i in range(40)]


def corpus(seed: int) -> tuple[list[dict], list[dict]]:
    """Holdout documents of random words; training documents that are random, or edited
    copies of a holdout document (0-60% of words replaced), or a passage pasted in."""
    rng = random.Random(seed)

    def words(n: int) -> list[str]:
        return [rng.choice(VOCAB) for _ in range(n)]

    holdout = [{"id": f"h{i}", "text": " ".join(words(rng.randint(8, 60)))} for i in range(25)]
    train = []
    for i in range(120):
        kind = rng.random()
        if kind < 0.3:
            text = " ".join(words(rng.randint(5, 80)))
        elif kind < 0.8:
            src = rng.choice(holdout)["text"].split()
            share = rng.random() * 0.6
            text = " ".join(rng.choice(VOCAB) if rng.random() < share else w for w in src)
        else:
            src = rng.choice(holdout)["text"]
            text = " ".join(words(rng.randint(5, 50))) + " " + src + " " + \
                " ".join(words(rng.randint(0, 30)))
        train.append({"id": f"t{i}", "text": text})
    return train, holdout


def expected(train: list[dict], holdout: list[dict], t: float, c: float | None,
             min_shingles: int = 25) -> set[str]:
    from tests.decontaminate.brute import shingles

    sizes = {h["id"]: len(shingles(h["text"])) for h in holdout}
    found = pairs({r["id"]: r["text"] for r in train}, {h["id"]: h["text"] for h in holdout})
    return {tid for (tid, hid), (jac, cont) in found.items()
            if jac >= t or (c is not None and cont >= c and sizes[hid] >= min_shingles)}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("threshold", "containment"), [(0.8, 0.8), (0.5, None), (0.3, 0.9)])
def test_exact_finds_every_pair_brute_force_finds(decon, tmp_path: Path, seed: int,
                                                  threshold: float,
                                                  containment: float | None) -> None:
    train, holdout = corpus(seed)
    cont = {"enabled": containment is not None, "threshold": containment or 0.8}
    report = decon(train, holdout, threshold=threshold, containment=cont)
    want = expected(train, holdout, threshold, containment)
    got = set(removed_rows(tmp_path / "out"))
    assert got == want
    assert want, "the corpus plants pairs at these thresholds"
    assert report["result"]["train_documents_removed"] == len(want)
    for row in removed_rows(tmp_path / "out").values():  # the values are brute force's
        jac, cont_ = pairs({"t": next(r["text"] for r in train if r["id"] == row["id"])},
                           {"h": next(h["text"] for h in holdout
                                      if h["id"] == row["holdout_id"])})[("t", "h")]
        assert row["similarity"] == pytest.approx(jac, abs=1e-6)
        assert row["containment"] == pytest.approx(cont_, abs=1e-6)


def test_minhash_recall_against_brute_force(decon, tmp_path: Path) -> None:
    """Banding finds pairs well above the threshold and misses some near it; its recall
    is measured here, and the report states the expected recall at the threshold."""
    found_all, want_all = set(), set()
    for seed in (1, 2, 3, 4):
        train, holdout = corpus(seed)
        report = decon(train, holdout, out=f"mh{seed}", candidates="minhash",
                       containment={"enabled": False})
        assert report["parameters"]["expected_recall"] == pytest.approx(
            banding_recall(0.8, 20, 13), abs=1e-6)
        want = {f"{seed}:{i}" for i in expected(train, holdout, 0.8, None)}
        got = {f"{seed}:{i}" for i in removed_rows(tmp_path / f"mh{seed}")}
        assert got <= want, "every minhash removal is verified: no false positive"
        found_all |= got
        want_all |= want
    recall = len(found_all) / len(want_all)
    print(f"minhash recall vs brute force at J>=0.8: {recall:.3f} "
          f"({len(found_all)}/{len(want_all)})")
    assert recall >= 0.6


def test_word_shingles(decon, tmp_path: Path) -> None:
    train, holdout = corpus(4)
    report = decon(train, holdout, shingle_kind="word", word_ngrams=3, threshold=0.6,
                   containment={"enabled": False})
    assert report["parameters"]["shingle_kind"] == "word"
    assert report["parameters"]["shingle_size"] == 3

    def wsh(text: str) -> set[str]:
        w = text.split()
        return {" ".join(w[i:i + 3]) for i in range(len(w) - 2)}

    want = set()
    for r in train:
        a = wsh(r["text"])
        for h in holdout:
            b = wsh(h["text"])
            if a and b and len(a & b) / len(a | b) >= 0.6:
                want.add(r["id"])
    assert set(removed_rows(tmp_path / "out")) == want and want


@pytest.mark.parametrize(("threshold", "dropped"), [(0.7, 3), (0.8, 2)])
def test_exact_finds_every_pair_exactly_at_the_threshold(decon, tmp_path: Path,
                                                         threshold: float,
                                                         dropped: int) -> None:
    """Prefix filtering loses no pair sitting exactly at ``min_fraction``: every training
    document that is a ten-word holdout document less ``dropped`` of its words (Jaccard
    exactly the threshold; ``0.7 * 10`` is ``7.000000000000001`` in floats) is removed,
    whichever words are missing, the indexed (rarest) ones included."""
    words = [f"a{i}" for i in range(10)]
    holdout = [{"id": "h", "text": " ".join(words)}]
    train = [{"id": "-".join(gone), "text": " ".join(w for w in words if w not in gone)}
             for gone in itertools.combinations(words, dropped)]
    decon(train, holdout, shingle_kind="word", word_ngrams=1, threshold=threshold,
          containment={"enabled": False})
    removed = removed_rows(tmp_path / "out")
    assert set(removed) == {r["id"] for r in train}
    assert {row["similarity"] for row in removed.values()} == {threshold}


@pytest.mark.parametrize("kind", ["exact", "minhash"])
def test_an_index_without_keys_or_a_batch_without_shingles_matches_nothing(kind: str) -> None:
    """``lookup`` gives two empty integer arrays (positions index the batch's arrays)
    for a holdout whose documents are all shorter than one shingle, and for a batch
    without shingles."""
    from curator.decontamination.index import MinHashParams, build_index
    from curator.decontamination.text import Shingling, shingle_hashes

    s = Shingling("char", 5)
    empty = build_index(kind, s, ["abc", "de"], MinHashParams())
    full = build_index(kind, s, ["a holdout document long enough"], MinHashParams())
    hashes, _ = shingle_hashes(["a training document"], s)
    for index, batch in ((empty, hashes), (full, hashes[:0])):
        which, key_index = index.lookup(batch)
        assert which.shape == key_index.shape == (0,)
        assert which.dtype == key_index.dtype == np.int64
    assert len(full.bitmap) == len(empty.bitmap) == 1 << 14  # the smallest filter
    which, key_index = full.search(hashes[:0])  # no needle left after the filter
    assert which.shape == key_index.shape == (0,)
