"""The compiled scan kernel gives exactly the windows of the numpy path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from curator.decontamination.index import build_index
from curator.decontamination.kernel import CandidateWindows, _code_points, shared_counts
from curator.decontamination.text import (
    Normalization,
    Shingling,
    _tables,
    char_units,
    normalize,
    unit_hashes,
)
from tests.decontaminate.test_text import TEXTS, random_texts

HOSTILE = TEXTS + random_texts(400, seed=5) + [
    "\ud800 lone surrogate \udfff", "😀 astral 😀", "İstanbul ǅ ẞ", "\x00nul\x00", "x" * 30,
]
ALL_BITS = np.full(1 << 10, np.iinfo(np.uint64).max, np.uint64)  # every window passes the filter


@pytest.mark.parametrize("flags", list(itertools.product([True, False], repeat=4)))
@pytest.mark.parametrize("k", [1, 5, 24])
def test_every_window_as_the_numpy_path(flags: tuple[bool, ...], k: int) -> None:
    n = Normalization(*flags)
    doc, hashes = CandidateWindows(n, k, ALL_BITS)(HOSTILE)
    units, lengths = char_units([normalize(t, n) for t in HOSTILE])
    want, want_doc = unit_hashes(units, lengths, k)
    assert np.array_equal(doc, want_doc)
    assert np.array_equal(hashes, want)


def test_the_filter_keeps_every_key_and_drops_most_others() -> None:
    s = Shingling()
    holdout = [normalize(t, s.normalization) for t in random_texts(50, seed=9) if len(t) > 30]
    index = build_index("exact", s, holdout, None, 0.8)  # type: ignore[arg-type]
    train = random_texts(300, seed=10) + [h.upper() + "!" for h in holdout]
    doc, hashes = CandidateWindows(s.normalization, s.size, index.bitmap)(train)
    units, lengths = char_units([normalize(t, s.normalization) for t in train])
    every, every_doc = unit_hashes(units, lengths, s.size)
    keys = set(index.keys.tolist())
    hit = np.array([h in keys for h in every.tolist()], dtype=bool)
    passed = index.maybe(every)
    assert np.array_equal(hashes, every[passed]) and np.array_equal(doc, every_doc[passed])
    assert hit.any() and set(every[hit].tolist()) <= set(hashes.tolist())
    assert len(hashes) < len(every)


def test_buffers_grow_and_are_reused() -> None:
    kernel = CandidateWindows(Normalization(), 3, ALL_BITS)
    small = kernel(["abcdef"])
    big = kernel(["abcdefgh" * 500, "xyz"])
    again = kernel(["abcdef"])
    assert np.array_equal(small[1], again[1]) and len(big[1]) == 8 * 500 - 2 + 1
    assert kernel(["", "ab"])[0].size == 0


def test_a_code_point_never_met_is_learned_and_the_batch_run_again() -> None:
    """The kernel stops at a code point its tables do not know yet (they are filled
    lazily); the batch is then learned and run again, with the numpy path's windows."""
    _tables.cache_clear()
    n = Normalization()
    texts = ["plain ascii text first", "then Ꙭ and ꧁ and 𓀀 letters, rare ones", "ascii"]
    doc, hashes = CandidateWindows(n, 5, ALL_BITS)(texts)
    units, lengths = char_units([normalize(t, n) for t in texts])
    want, want_doc = unit_hashes(units, lengths, 5)
    assert np.array_equal(doc, want_doc) and np.array_equal(hashes, want)
    assert _tables().known[ord("ꙭ")] and _tables().known[ord("𓀀")]  # (casefolded Ꙭ)


def test_shared_counts_counts_each_holdout_documents_hashes_in_mine() -> None:
    rng = np.random.default_rng(3)
    docs = [np.unique(rng.integers(0, 200, size=m).astype(np.uint64)) for m in (0, 5, 40, 90)]
    offsets = np.r_[0, np.cumsum([len(d) for d in docs])].astype(np.int64)
    flat = np.concatenate(docs)
    mine = np.sort(rng.integers(0, 200, size=120).astype(np.uint64))  # repeats allowed
    which = np.array([3, 0, 2, 1, 3], np.int64)
    want = [len(set(docs[h].tolist()) & set(mine.tolist())) for h in which]
    assert shared_counts(mine, flat, offsets, which).tolist() == want
    assert shared_counts(mine[:0], flat, offsets, which).tolist() == [0] * len(which)


@pytest.mark.parametrize("flags", [(True, True, True, True), (False, False, False, False)])
def test_a_batch_without_astral_code_points_runs_on_16_bit_units(flags: tuple[bool, ...]
                                                                 ) -> None:
    bmp = [t for t in HOSTILE if all(ord(c) < 0x10000 for c in t)]
    assert len(bmp) < len(HOSTILE) and any(0xD800 <= ord(c) < 0xE000 for c in "".join(bmp))
    assert _code_points("".join(bmp)).dtype == np.uint16
    assert _code_points("a😀").dtype == np.uint32
    assert _code_points("\ud83d\ude00").tolist() == [0xD83D, 0xDE00]  # two lone halves
    n = Normalization(*flags)
    doc, hashes = CandidateWindows(n, 7, ALL_BITS)(bmp)
    units, lengths = char_units([normalize(t, n) for t in bmp])
    want, want_doc = unit_hashes(units, lengths, 7)
    assert np.array_equal(doc, want_doc) and np.array_equal(hashes, want)
