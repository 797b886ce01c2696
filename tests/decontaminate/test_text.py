"""Normalisation and shingles: the fast paths equal the spec's definition."""

from __future__ import annotations

import random

import numpy as np
import pytest

from curator.decontamination.text import (
    Normalization,
    Shingling,
    canonical_url,
    normalize,
    normalize_batch,
    normalize_many,
    shingle_hashes,
    unit_hashes,
    window_hashes,
)
from tests.decontaminate.brute import norm

TEXTS = ["  Hello,  World!  ", "", "   ", "a", "Ça  va? naïve cafe\u0301 STRASSE Straße",
         "x_y__z", "日本語の テキスト。", "\n\nfoo\tbar\n", "ﬁ ligature", "a\x1cb", "क्षत्रिय",
         "e\u0301\u200dz", "tab\there,comma;semi", "UPPER lower 123 4½"]


def random_texts(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abc XYZ,.;_-\t\n\u00e9e\u0301\u4e2d\u0915\u094d\u200c\x1c 0123"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(n)]


@pytest.mark.parametrize("text", TEXTS + random_texts(200))
def test_normalize_is_the_spec(text: str) -> None:
    assert normalize(text, Normalization()) == norm(text)


def test_every_path_agrees() -> None:
    texts = TEXTS + random_texts(300, seed=2)
    for flags in [(True, True, True, True), (True, True, True, False),
                  (False, False, True, True), (True, True, False, True),
                  (True, True, False, False)]:
        n = Normalization(*flags)
        one = [normalize(t, n) for t in texts]
        assert normalize_many(texts, n) == one
        units, lengths = normalize_batch(texts, n)
        ends = np.cumsum(lengths)
        batch = [units[e - m:e].tobytes().decode("utf-32-le")
                 for e, m in zip(ends, lengths, strict=True)]
        assert batch == one, flags


def test_hashes_are_of_the_shingles() -> None:
    s = Shingling("char", 5)
    norms = ["abcdefgh", "abc", "", "xxabcdefyy", "defgh"]
    hashes, doc = shingle_hashes(norms, s)
    by_doc = {d: [] for d in range(len(norms))}
    for h, d in zip(hashes.tolist(), doc.tolist(), strict=True):
        by_doc[d].append(h)
    strings = {d: [t[i:i + 5] for i in range(len(t) - 4)] for d, t in enumerate(norms)}
    table: dict[str, int] = {}
    for d in by_doc:
        assert len(by_doc[d]) == len(strings[d])
        for sh, h in zip(strings[d], by_doc[d], strict=True):
            assert table.setdefault(sh, h) == h  # equal shingles, equal hashes
    assert len(set(table.values())) == len(table)
    units = np.frombuffer("".join(norms).encode("utf-32-le"), dtype=np.uint32)
    all_windows = window_hashes(units, 5)
    h2, d2 = unit_hashes(units, np.array([len(t) for t in norms]), 5)
    assert np.array_equal(h2, hashes) and np.array_equal(d2, doc)
    assert set(hashes.tolist()) <= set(all_windows.tolist())


def test_canonical_urls() -> None:
    assert canonical_url("https://www.www.Example.com/a/b/?utm_source=x&b=2&a=1#frag") == \
        "example.com/a/b?a=1&b=2"
    assert canonical_url("http://example.com/a?gclid=1") == canonical_url("example.com/a/")
    assert canonical_url("  ") is None


@pytest.mark.parametrize("url", [
    "https://www.www.Example.com/a/b/?utm_source=x&b=2&a=1#frag", "http://example.com",
    "example.com/a/", "HTTP://WWW.EXAMPLE.COM/Path/?q=1&utm_medium=x", "https://a.b/c?x",
    "https://user@host.example:8080/p?z=1&a=2", "https://host.example:443/p/", "//x.org/p",
    "https://www./a", "https://example.com/a%20b/?b=%20&a=", "ftp://files.example/x#y",
    "https://[::1]:8080/a", "https://example.com?gclid=1&fbclid=2", "a.example/b?c=d#e"])
def test_canonical_url_fast_path_equals_urllib(url: str) -> None:
    from curator.decontamination.text import _canonical_url

    assert canonical_url(url) == _canonical_url(url)


@pytest.mark.parametrize("url", [
    "https://www.www.Example.com/a/b/?utm_source=x", "http://example.com", "  https://A.B/c ",
    "https://user@host.example:8080/p", "example.com/a/", "https://www./a", "https://x.org#f",
    "https://x.org?q=1", "ftp://Files.Example/x"])
def test_the_host_shortcut_never_hides_a_match(url: str) -> None:
    """A URL whose quick host is not among the holdout's hosts has a key outside them."""
    from curator.decontamination.text import NO_MATCH, identity_key, url_hosts

    full = identity_key({"url": url}, "i", "t", "train", False, True)
    hosts = url_hosts([full[1]])
    assert identity_key({"url": url}, "i", "t", "train", False, True, hosts) == full
    other = identity_key({"url": url}, "i", "t", "train", False, True, frozenset({"z.example"}))
    assert other[0] == full[0] and other[1] in (full[1], NO_MATCH)
