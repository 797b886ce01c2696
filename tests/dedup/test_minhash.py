"""The dedup kernel: shingle hashes pinned to literal values and to a pure-Python reference,
exact Jaccard against brute-force string sets, the MinHash estimate, determinism in a fresh
process, empty and one-word documents, and the LSH S-curve at the default banding."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import unicodedata

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from curator.dedup import (
    EMPTY,
    MinHashParams,
    Shingling,
    band_keys,
    coefficients,
    collision_probability,
    estimate,
    jaccard,
    normalize,
    shingle_sets,
    signatures,
)
from curator.dedup.shingles import WHITE_SPACE
from tests.dedup import reference as R

_SENTENCE = ("time people year way day thing man world life hand part child eye woman place work "
         "week case point number group problem fact water room mother area money story month "
         "lot right study book job word business issue side kind head house service friend "
         "father power hour game line end member law car city name team minute idea kid body "
         "back parent face others level office door health person art war history party "
         "result change morning reason research girl guy moment air teacher force education"
         )
WORDS = _SENTENCE.split()
TEXTS = [
    "Hello  World, this is\ta test of the shingles, ok?",
    "", "   \n\t ", "one", "ONE", "one two", "a b c d e", "a b c d e f g h",
    "Ünïcode\u00a0spaces\u3000and\u2028line\u2029seps \x1c\x1f here 😀 x",
    "Cafe\u0301 vs café: NFC makes them one", "Straße ΣΊΣΥΦΟΣ İstanbul ǅemal",
]


def random_doc(rng: np.random.Generator, n: int) -> list[str]:
    return [WORDS[i] for i in rng.integers(len(WORDS), size=n)]


def changed(words: list[str], k: int, rng: np.random.Generator) -> list[str]:
    out = list(words)
    for j in rng.choice(len(out), size=k, replace=False):
        out[j] = f"new{rng.integers(1 << 30)}"
    return out


def test_hashes_are_pinned_to_literal_values() -> None:
    """The hash is a format: these literals were computed once by tests/dedup/reference.py
    (FNV-1a 64 of "hello" and splitmix64(0)'s first output are the published values)."""
    assert R.fnv1a64(b"hello") == 0xA430D84680AABD0B
    assert R.splitmix64(0, 1) == [0xE220A8397B1DCDAF]
    pinned = {
        ("the quick brown fox jumps", "words", 5): 0x16EC4DD6808E2455,
        ("Straße café 😀", "words", 3): 0x2D83942987CCE9C0,
        ("hello", "words", 5): 0xE9C562C0FDB23244,
        ("abcde", "chars", 5): 0x83A09BB7567D458F,
        ("ab  c", "chars", 5): 0xF9A20F497EA007AA,
    }
    for (text, kind, n), value in pinned.items():
        assert R.shingle_hashes(text, kind, n) == {value}
        assert shingle_sets([text], Shingling(kind, n)).of(0).tolist() == [value]
    a, b = coefficients(0, 2)
    assert a.tolist() == [0xE220A8397B1DCDAF, 0x06C45D188009454F | 1]
    assert b.tolist() == [0x6E789E6AA1B965F4, 0xF88BB8A8724C81EC]
    sig, _ = signatures(["the quick brown fox jumps over the lazy dog"], Shingling(),
                        MinHashParams(bands=2, rows=4, seed=1))
    assert sig[0].tolist() == [458703950, 818778843, 138543949, 1608641229, 869072946,
                               44405138, 426447645, 1359814475]
    assert band_keys(sig, 2, 4)[0, 1] == 0x834D462310D8C96A


@pytest.mark.parametrize("kind,n", [("words", 1), ("words", 3), ("words", 5), ("chars", 1),
                                    ("chars", 4), ("chars", 9)])
def test_shingles_signatures_and_band_keys_as_the_reference(kind: str, n: int) -> None:
    rng = np.random.default_rng(n)
    texts = TEXTS + [" ".join(random_doc(rng, int(rng.integers(1, 80)))) for _ in range(30)]
    sets = shingle_sets(texts, Shingling(kind, n))  # type: ignore[arg-type]
    params = MinHashParams(bands=4, rows=3, seed=7)
    sig, present = signatures(texts, Shingling(kind, n), params)  # type: ignore[arg-type]
    keys = band_keys(sig, 4, 3)
    for i, t in enumerate(texts):
        assert sets.of(i).tolist() == sorted(R.shingle_hashes(t, kind, n)), t
        assert sig[i].tolist() == R.signature(t, 12, 7, kind, n), t
        assert present[i] == bool(R.shingle_hashes(t, kind, n))
        assert keys[i].tolist() == [R.band_key(sig[i].tolist(), j, 3) for j in range(4)]


def test_white_space_is_pythons_isspace() -> None:
    assert {c for c in range(sys.maxunicode + 1) if chr(c).isspace()} == WHITE_SPACE


def test_lower_case_is_the_simple_mapping_not_pythons_str_lower() -> None:
    """Where Arrow's per-code-point mapping and ``str.lower`` differ (as documented)."""
    assert normalize(["İstanbul ΌΣΟΣ"]).to_pylist() == ["istanbul όσοσ"]
    assert "İstanbul ΌΣΟΣ".lower() == "i\u0307stanbul όσος"
    sample = "".join(chr(c) for c in range(0x20, 0x3000) if chr(c).isprintable())
    assert normalize([sample]).to_pylist() == [R.lower(unicodedata.normalize("NFC", sample))]


def test_every_input_column_type_gives_the_same_signatures() -> None:
    want, _ = signatures(TEXTS)
    chunked = pa.chunked_array([TEXTS[:3], TEXTS[3:]], pa.string())
    for column in (pa.array(TEXTS), chunked, pl.Series(TEXTS), pa.array(TEXTS).slice(0)):
        assert np.array_equal(signatures(column)[0], want)
    sliced = pa.array(["x y z", *TEXTS], pa.large_string()).slice(1)  # a non-zero offset
    assert np.array_equal(signatures(sliced)[0], want)


def test_exact_jaccard_at_known_levels_equals_brute_force() -> None:
    """Copies with k words changed: the batched Jaccard of the hashed sets equals the
    Jaccard of the shingle strings (Python sets), for both shingle kinds."""
    rng = np.random.default_rng(1)
    texts: list[str] = []
    for _ in range(60):
        base = random_doc(rng, int(rng.integers(40, 400)))
        texts.append(" ".join(base))
        for k in (0, 1, 3, 10, 30):
            texts.append(" ".join(changed(base, min(k, len(base)), rng)))
    left = np.repeat(np.arange(0, len(texts), 6), 5)
    right = left + np.tile(np.arange(1, 6), len(texts) // 6)
    for shingling in (Shingling("words", 5), Shingling("chars", 7)):
        got = jaccard(shingle_sets(texts, shingling), left, right)
        want = [R.jaccard(R.shingle_strings(texts[i], shingling.kind, shingling.n),
                          R.shingle_strings(texts[j], shingling.kind, shingling.n))
                for i, j in zip(left, right, strict=True)]
        assert got.tolist() == want
        assert got[0] == 1.0 and got.min() < 0.6 and len(set(want)) > 100


def test_the_estimate_is_close_to_the_exact_jaccard() -> None:
    rng = np.random.default_rng(2)
    texts = []
    for _ in range(400):
        base = random_doc(rng, 300)
        texts += [" ".join(base), " ".join(changed(base, int(rng.integers(0, 40)), rng))]
    left, right = np.arange(0, 800, 2), np.arange(1, 800, 2)
    exact = jaccard(shingle_sets(texts), left, right)
    sig, present = signatures(texts)
    est = estimate(sig, present, left, right)
    sd = np.sqrt(exact * (1 - exact) / 160)  # the binomial estimate's spread, 160 rows
    assert exact.min() < 0.3 and exact.max() == 1.0
    assert np.abs(est - exact).mean() < 0.03
    assert abs(float((est - exact).mean())) < 0.01  # no bias
    assert (np.abs(est - exact) <= 4 * sd + 1e-9).mean() >= 0.99


_SUBPROCESS = """
import hashlib, json, sys
import numpy as np
from curator.dedup import MinHashParams, Shingling, band_keys, signatures
texts = json.loads(sys.stdin.read())
sig, present = signatures(texts, Shingling("words", 5), MinHashParams(seed=3))
keys = band_keys(sig, 20, 8)
print(hashlib.sha256(sig.tobytes() + present.tobytes() + keys.tobytes()).hexdigest())
"""


def test_the_same_signatures_in_a_fresh_process() -> None:
    rng = np.random.default_rng(3)
    texts = TEXTS + [" ".join(random_doc(rng, 200)) for _ in range(50)]
    sig, present = signatures(texts, Shingling("words", 5), MinHashParams(seed=3))
    again, _ = signatures(texts, Shingling("words", 5), MinHashParams(seed=3))
    keys = band_keys(sig, 20, 8)
    want = hashlib.sha256(sig.tobytes() + present.tobytes() + keys.tobytes()).hexdigest()
    done = subprocess.run([sys.executable, "-c", _SUBPROCESS], input=json.dumps(texts),
                          capture_output=True, text=True, check=True, timeout=300)
    assert np.array_equal(sig, again) and done.stdout.strip() == want
    other, _ = signatures(texts, Shingling("words", 5), MinHashParams(seed=4))
    assert (other != sig).mean() > 0.9  # the seed matters


def test_empty_and_one_word_documents() -> None:
    texts = ["", None, " \t\n\u3000 ", "hello", "HELLO ", "hello world", "world",
             "hello hello"]
    sig, present = signatures(texts)
    assert present.tolist() == [False, False, False, True, True, True, True, True]
    assert (sig[:3] == EMPTY).all()
    sets = shingle_sets(texts)
    assert [len(sets.of(i)) for i in range(len(texts))] == [0, 0, 0, 1, 1, 1, 1, 1]
    left, right = np.array([0, 0, 3, 3, 3, 6]), np.array([1, 3, 4, 5, 7, 5])
    # empties: Jaccard and estimate 0, never a duplicate; a one-word copy: 1; a one-word
    # document against a two-word one (shorter than n: one shingle each): 0
    assert jaccard(sets, left, right).tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert estimate(sig, present, left, right).tolist()[:3] == [0.0, 0.0, 1.0]
    assert np.array_equal(sig[3], sig[4])


def test_the_default_banding_finds_pairs_above_the_threshold() -> None:
    """threshold 0.8: of 2,000 sampled pairs at Jaccard >= 0.85, >= 99% share a band
    (expected 99.8%); pairs near 0.5 rarely do (expected 7.5%)."""
    params = MinHashParams()
    assert (params.bands, params.rows) == (20, 8)
    assert collision_probability(0.85, 20, 8) > 0.998
    assert collision_probability(0.5, 20, 8) < 0.08
    rng = np.random.default_rng(4)
    texts: list[str] = []
    for _ in range(2600):
        base = random_doc(rng, 200)
        texts += [" ".join(base), " ".join(changed(base, int(rng.integers(1, 4)), rng))]
    for _ in range(400):  # pairs near 0.5
        base = random_doc(rng, 200)
        texts += [" ".join(base), " ".join(changed(base, 20, rng))]
    left, right = np.arange(0, len(texts), 2), np.arange(1, len(texts), 2)
    exact = jaccard(shingle_sets(texts), left, right)
    sig, present = signatures(texts, Shingling(), params)
    keys = band_keys(sig, params.bands, params.rows)
    collide = (keys[left] == keys[right]).any(axis=1) & present[left] & present[right]
    high = np.flatnonzero(exact >= 0.85)[:2000]
    assert len(high) == 2000
    assert collide[high].mean() >= 0.99
    middle = (exact > 0.4) & (exact < 0.6)
    assert middle.sum() >= 150 and collide[middle].mean() < 0.2


def test_band_keys_depend_on_the_band_and_its_rows() -> None:
    sig = np.zeros((2, 6), np.uint32)
    sig[1, 3] = 1
    keys = band_keys(sig, 2, 3)
    assert keys[0, 0] == keys[1, 0] and keys[0, 1] != keys[1, 1]
    assert keys[0, 0] != keys[0, 1]  # equal rows, another band: another key
    with pytest.raises(ValueError):
        band_keys(sig, 4, 2)
