# ruff: noqa: RUF001, RUF003 - multilingual test text on purpose
"""``score_batch`` against a per-document Python reference on generated documents.

The reference below scores one document at a time, written from the definitions
(NeMo Curator's ``score_document`` for the wrapped and agnostic signals; the spec's
table for the local ones), not from the vectorised implementation. A reference
that raises (Curator divides by zero on text with no words or lines) scores NaN,
as the profile step records a scorer exception.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import string
import unicodedata

import numpy as np
import polars as pl
import pytest

from curator.langpack.model import LangPack
from curator.signals.registry import REGISTRY
from curator.signals.scoring import SCORERS, score_batch

regex = pytest.importorskip("regex")  # [[:alpha:]] as Curator spells it

# -- Curator's constants, restated -----------------------------------------------------
END_MARKS = (".", "?", "!", '"', "'")
ELLIPSIS_MARKS = {"...", "[...]", "…", "(...)", "[…]", "-»", "read more..", "read more"}
WHITE_SPACE = ["\t", "\n", "\r", "\b", " "]
BULLETS = {"•", "‣", "⁃", "⁌", "⁍", "∙", "○", "●", "◘", "◦", "⦾", "⦿"}
RX_ALPHA = regex.compile("[[:alpha:]]")
RX_DIGIT = regex.compile("[[:digit:]]")
RX_ALNUM = re.compile("[a-zA-Z0-9\n?!,.]")
RX_URL = re.compile(r"https?://(?:[A-Za-z0-9$\-_@.&+/:=?#~]|[!*\(\),]|(?:%[0-9A-Fa-f]{2}))+")
RX_PAREN = re.compile(r"{|}|⟨|⟩|\[|\]|\(|\)")
RX_HASH = re.compile("#+")

CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
PACK = LangPack(
    pack_id="test-ru", language_tag="ru", version="1", root="/nowhere", content_hash="x",
    capabilities=frozenset({"script_ratio", "diacritic_ratio", "stopword_ratio",
                            "stopword_ratio_folded", "boilerplate_hits", "sentence_end_ratio"}),
    stopwords=frozenset({"и", "в", "не", "всё", "the", "of", "and"}),
    charset=frozenset(CYRILLIC + CYRILLIC.upper()),
    boilerplate=(r"(?i)\bвсе права защищены\b", r"(?i)\bclick here\b", r"(?i)lorem ipsum",
                 r"\d{4}-\d\d-\d\d", r"(?<=@)example\.com"),
    fold_map={"ё": "е", "Ё": "Е", "й": "и", "Й": "И", "«": '"', "»": '"'},
    sentence_terminators=(".", "!", "?", "…"),
)


def tokenizer(texts: list[str]) -> np.ndarray:
    return np.array([len(t.encode("utf-8")) // 3 for t in texts])


# -- the reference, one document at a time ---------------------------------------------


def _sentences(text: str) -> list[str]:
    return [x for x in text.split("\n") if len(x.strip()) > 0]


def _alnum(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNM" or ch in "\u200c\u200d"


def ref_signal(name: str, raw: str, pack: LangPack) -> float:
    text = unicodedata.normalize("NFC", raw)
    n = len(text)
    words = text.strip().split()
    letters = [c for c in text if unicodedata.category(c).startswith("L")]
    if name == "bullet_ratio":
        sents = _sentences(text)
        return sum(any(s.strip().startswith(b) for b in BULLETS) for s in sents) / len(sents)
    if name == "ellipsis":
        sents = _sentences(text)
        hits = sum(any(s.strip().lower().endswith(m) for m in ELLIPSIS_MARKS) for s in sents)
        return hits / len(sents)
    if name == "punctuation":
        sents = _sentences(text)
        return len([s for s in sents if not s.strip().endswith(END_MARKS)]) / len(sents)
    if name == "parentheses_ratio":
        return len(RX_PAREN.findall(text)) / n if n else 1.0
    if name == "urls_ratio":
        return sum(len(u) for u in RX_URL.findall(text)) / n if n else 1.0
    if name == "white_space":
        return len([x for x in text if x in WHITE_SPACE]) / n if n else 1.0
    if name == "non_alpha_numeric":
        return (n - len(RX_ALNUM.findall(text))) / n if n else 1.0
    if name == "numbers_ratio":
        return len(RX_DIGIT.findall(text)) / n if n else 1.0
    if name == "unicode_alpha_numeric":
        good = sum(1 for c in text if _alnum(c) or c in "\n?!,.")
        return (n - good) / n if n else 1.0
    if name == "symbol_to_word":
        count = 0
        for w in words:
            word = w.strip()
            if word in ELLIPSIS_MARKS or len(RX_HASH.findall(word)) / len(word) > 0.5:
                count += 1
        return count / len(words)
    if name == "max_word_length":
        return max(len(w) for w in words)
    if name == "words_with_alphabets":
        return sum(1 for w in words if RX_ALPHA.search(w)) / len(words)
    if name == "repeating_duplicate_ngrams":
        if len(words) < 2:
            return 1.0
        seen: dict[tuple[str, str], int] = {}
        dup_chars, overlap = 0, 0
        for gram in itertools.pairwise(words):
            seen[gram] = seen.get(gram, 0) + 1
            if seen[gram] > 1:
                dup_chars += sum(len(g) for g in gram[overlap:]) + min(2 - overlap, 1)
                overlap = 2
            overlap = max(overlap - 1, 0)
        return dup_chars / n if n else 1.0
    if name == "word_count":
        return len(words)
    if name == "mean_word_length":
        lengths = [len(w) for w in words if len(w) > 0]
        return sum(lengths) / len(lengths)
    if name == "token_count":
        return float(tokenizer([text])[0])
    if name == "script_ratio":
        lm = [c for c in text if unicodedata.category(c)[0] in "LM"]
        return sum(c in pack.charset for c in lm) / len(lm)
    if name == "latin_ratio":
        return sum(c.isascii() and c.isalpha() for c in letters) / len(letters)
    if name == "foreign_script_ratio":
        return sum(c not in pack.charset and not c.isascii() for c in letters) / len(letters)
    if name == "diacritic_ratio":
        return sum(pack.fold(c) != c for c in letters) / len(letters)
    if name in ("stopword_ratio", "stopword_ratio_folded"):
        tokens = text.split()
        punct = string.punctuation
        if name == "stopword_ratio":
            stop = {s.casefold() for s in pack.stopwords}
            hits = [t.casefold().strip(punct) in stop for t in tokens]
        else:
            stop = {pack.fold(s.casefold()) for s in pack.stopwords}
            hits = [pack.fold(t.casefold()).strip(punct) in stop for t in tokens]
        return sum(hits) / len(tokens)
    if name == "boilerplate_hits":
        return float(sum(re.search(p, text) is not None for p in pack.boilerplate))
    if name == "sentence_end_ratio":
        sents = _sentences(text)
        ends = tuple(pack.sentence_terminators)
        return sum(s.rstrip().endswith(ends) for s in sents) / len(sents)
    raise AssertionError(name)


def reference(name: str, text: str | None, pack: LangPack) -> float:
    if text is None:
        return math.nan
    try:
        value = float(ref_signal(name, text, pack))
    except (ZeroDivisionError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


# -- generated documents ---------------------------------------------------------------

EN = ("the of and to in is that it was for on are with as his they be at one have this "  # noqa: SIM905
      "from or had by word but what some we can out other were all there when up use "
      "your how said an each she which do their time if will way about many then them "
      "read more click here Lorem ipsum").split()
RU = ("и в не на я что тот быть с он а весь это как она по но они к у ты из мы за вы "  # noqa: SIM905
      "так же от сказать всё ещё ёлка йод мир Все права защищены").split()
HI = ["नमस्ते", "दुनिया", "यह", "एक", "परीक्षण", "है", "हिन्दी", "भाषा", "में", "कुछ", "शब्द"]
SYMBOLS = ["#", "##", "#a#", "#.#.#", "###", "...", "[...]", "…", "(...)", "[…]", "-»",
           "(x)", "[1]", "{a}", "⟨b⟩", "$", "%", "&", "—", "–", "@example.com", "2024-01-02",
           "e\u0301", "E\u0301cole", "о\u0308", "ǅ", "Ⅻ", "١٢٣", "３", "😀", "👩\u200d💻",
           "🇫🇷", "a\u200cb", "\u00a0", "\u2028", "\x1c", "\x0b", "\b", "ß", "ΣΑΣ"]
BULLETS_L = [*sorted(BULLETS), "-", "*", "1."]
URLS = ["https://example.com/a?b=1&c=%20", "http://x.y/z_(w)", "https://a.b/c<d>",
        "see http://foo.bar/baz.", "https://üñí.com/x"]
ENDS = [".", "!", "?", '"', "'", "...", "…", " [...]", " read more", " Read More..", "",
        "", " -»", ":", ";", ". \t", "!\r"]


def _sentence(rng: random.Random) -> str:
    vocab = rng.choice([EN, EN, RU, HI, EN + RU, SYMBOLS + EN])
    words = [rng.choice(vocab) for _ in range(rng.randint(1, 14))]
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words) + 1), rng.choice(URLS))
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words) + 1), str(rng.randint(0, 10**rng.randint(1, 9))))
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words) + 1), rng.choice(SYMBOLS))
    sep = rng.choice([" ", " ", " ", "  ", "\t", " \u00a0"])
    return sep.join(words) + rng.choice(ENDS)


def _document(rng: random.Random) -> str | None:
    kind = rng.random()
    if kind < 0.03:
        return None
    if kind < 0.06:
        return rng.choice(["", " ", "\n\n", " \t\r\n ", "\u3000", "#", "...", "a", "😀"])
    lines = []
    for _ in range(rng.randint(1, 12)):
        r = rng.random()
        if r < 0.15:
            lines.append(rng.choice(BULLETS_L) + rng.choice(["", " ", "  "]) + _sentence(rng))
        elif r < 0.25:
            lines.append(rng.choice(["", " ", "\t", "  \r"]))
        elif r < 0.35:  # repeated n-grams
            phrase = " ".join(rng.choice(EN + RU) for _ in range(rng.randint(1, 4)))
            lines.append(" ".join([phrase] * rng.randint(2, 5)))
        else:
            lines.append(" ".join(_sentence(rng) for _ in range(rng.randint(1, 4))))
    doc = rng.choice(["\n", "\n", "\n\n", "\r\n"]).join(lines)
    if rng.random() < 0.2:
        doc = unicodedata.normalize("NFD", doc)
    if rng.random() < 0.1:
        doc = rng.choice([" ", "\n", "\t "]) + doc + rng.choice([" ", "\n", "…"])
    return doc


DOCS = [_document(random.Random(seed)) for seed in range(400)]
NAMES = list(REGISTRY)


def test_scorers_cover_exactly_the_registry() -> None:
    assert set(SCORERS) == set(REGISTRY)


@pytest.fixture(scope="module")
def scores() -> pl.DataFrame:
    return score_batch(DOCS, NAMES, PACK, tokenizer=tokenizer)


@pytest.mark.parametrize("name", NAMES)
def test_matches_per_document_reference(scores: pl.DataFrame, name: str) -> None:
    got = scores[name].to_numpy()
    want = np.array([reference(name, d, PACK) for d in DOCS])
    assert scores[name].dtype == pl.Float64
    bad = [
        (i, DOCS[i], got[i], want[i]) for i in range(len(DOCS))
        if not (np.isnan(got[i]) and np.isnan(want[i])) and not abs(got[i] - want[i]) <= 1e-9
    ]
    assert not bad, bad[:3]


def test_generated_documents_exercise_the_edges(scores: pl.DataFrame) -> None:
    """The sample has NaN, 1.0-for-empty, non-zero and NFD cases for the signals."""
    assert any(d is None for d in DOCS)
    assert any(d is not None and not unicodedata.is_normalized("NFC", d) for d in DOCS)
    for name in ("bullet_ratio", "ellipsis", "symbol_to_word", "urls_ratio",
                 "repeating_duplicate_ngrams", "boilerplate_hits", "diacritic_ratio",
                 "foreign_script_ratio", "stopword_ratio_folded", "parentheses_ratio"):
        col = scores[name].to_numpy()
        assert np.nanmax(col) > 0, name
        assert np.isnan(col).any(), name
    # folding makes a difference somewhere (ё spelled е, «» quotes)
    assert (scores["stopword_ratio_folded"] > scores["stopword_ratio"]).any()


def test_batch_split_does_not_change_scores(scores: pl.DataFrame) -> None:
    halves = [score_batch(DOCS[:137], NAMES, PACK, tokenizer=tokenizer),
              score_batch(pl.Series(DOCS[137:]), NAMES, PACK, tokenizer=tokenizer)]
    joined = pl.concat(halves)
    for name in NAMES:
        np.testing.assert_allclose(joined[name].to_numpy(), scores[name].to_numpy(),
                                   rtol=0, atol=1e-12, equal_nan=True)
