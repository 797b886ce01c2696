"""The character-class counts every character signal of the filter's gates reads: the
compiled one-pass loop (big batches) and the numpy passes (small ones) count the same,
and the signals come out the same whichever runs."""

from __future__ import annotations

import numpy as np
import pytest

import curator.signals.scoring as S
from curator.langpack.loader import load_langpack
from tests.filter._support import LANGPACKS, corpus_records

HOSTILE = ["", " ", "\n\t\r\x0b\x0c", "a\x00b", "é", "e\u0301", "日本語のテキスト、句読点。",
           "Привет, мир! 123", "\U0001f600\U0001f680 emoji", "\u2028\u2029\u00a0\u3000",
           "\uffff\U0010ffff", "x" * 5000, "((( [[ ]] )))", "#### ## #", "١٢٣ ٤٥٦"]


@pytest.mark.parametrize("tag", ["en", "ru"])
def test_the_kernel_counts_what_the_numpy_passes_count(tag: str) -> None:
    pack = load_langpack(LANGPACKS, tag)
    texts = [r["text"] for r in corpus_records(300, seed=7)] + HOSTILE + [None, "end"]
    batch = S._Batch(texts, pack, None, uses_chars=True)
    joined = "".join(t for t in batch.texts if t)
    cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    want = S._numpy_class_counts(cps, batch.n_chars, batch.table)
    got = S._kernel_class_counts(cps, batch.n_chars, batch.table)
    assert got.shape == want.shape == (len(texts), batch.table.n_classes)
    assert got.dtype == want.dtype
    assert (got == want).all()
    assert got.sum() == len(cps) and got[-2].sum() == 0  # every code point, None none


def test_the_signals_are_the_same_through_either_path(monkeypatch: pytest.MonkeyPatch) -> None:
    pack = load_langpack(LANGPACKS, "en")
    texts = [r["text"] for r in corpus_records(200, seed=8)] + HOSTILE
    names = [*sorted(S.CHAR_SIGNALS), "word_count"]
    monkeypatch.setattr(S, "KERNEL_MIN_CODEPOINTS", 10**12)  # numpy
    numpy_path = S.score_batch(texts, names, pack)
    monkeypatch.setattr(S, "KERNEL_MIN_CODEPOINTS", 0)  # the kernel
    kernel_path = S.score_batch(texts, names, pack)
    assert kernel_path.equals(numpy_path)
