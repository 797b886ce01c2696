# ruff: noqa: RUF001, RUF002, RUF003 - multilingual test text on purpose
"""``score_batch`` against a per-document Python reference on generated documents.

The reference below scores one document at a time, written from the definitions
(NeMo Curator's ``score_document`` for the wrapped and agnostic signals; the spec's
table for the local ones), not from the vectorised implementation. A reference
that raises (Curator divides by zero on text with no words or lines) scores NaN,
as the profile step records a scorer exception.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import re
import string
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from curator.langpack.loader import load_langpack
from curator.langpack.model import LangPack
from curator.signals import _prefilter
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


# -- the fast paths against their plain versions ----------------------------------------

REPO = Path(__file__).resolve().parents[2]


def _examples(lang: str) -> list[tuple[str, str]]:
    """(pattern, the "# e.g.:" line its pack gives as a text it must match)."""
    lines = (REPO / "curator" / "langpacks" / lang / "boilerplate.txt").read_text(encoding="utf-8")
    out, example = [], None
    for line in lines.splitlines():
        if line.startswith("# e.g.:"):
            example = line[len("# e.g.:"):].strip()
        elif line.strip() and not line.startswith("#"):
            assert example is not None, line
            out.append((line, example))
            example = None
    return out


def _variants(example: str, rng: random.Random) -> list[str]:
    """The example in other cases, with Unicode case-fold twins (ſ for s, K for k),
    embedded in other text, cut short, or with its first optional-looking word dropped."""
    words = example.split()
    out = [example, example.upper(), example.lower(), example.swapcase(),
           example.replace("s", "\u017f").replace("k", "\u212a"),
           example.replace("S", "\u017f").replace("K", "\u212a"),
           "Intro — привет 😀 " + example + " ¶ end", "x" + example + "x",
           example[: len(example) // 2], example[1:], example.replace(" ", "  "),
           " ".join(words[1:]), " ".join(words[:-1]), "\n".join(words)]
    noisy = [w if rng.random() < 0.7 else w.upper() for w in words]
    out.append(" ".join(noisy))
    return out


def _plain_hits(texts: list[str], patterns: tuple[str, ...]) -> np.ndarray:
    """Boilerplate hits by running every pattern on every text (no pre-filters)."""
    series = pl.Series(texts, dtype=pl.String)
    hits = np.zeros(len(texts))
    for pattern in patterns:
        try:
            hits += series.str.contains(pattern).to_numpy()
        except pl.exceptions.ComputeError:
            hits += [re.search(pattern, t) is not None for t in texts]
    return hits


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_boilerplate_prefilter_matches_plain_regexes(lang: str) -> None:
    pack = load_langpack(REPO / "curator" / "langpacks", lang)
    examples = _examples(lang)
    assert [p for p, _ in examples] == list(pack.boilerplate)
    rng = random.Random(7)
    texts = [v for _, ex in examples for v in _variants(ex, rng)]
    texts += [" … ".join(ex for _, ex in examples), "", "no boilerplate here", *DOCS[:50]]
    texts = [unicodedata.normalize("NFC", t) for t in texts if t is not None]
    got = score_batch(texts, ["boilerplate_hits"], pack)["boilerplate_hits"].to_numpy()
    want = _plain_hits(texts, pack.boilerplate)
    np.testing.assert_array_equal(got, want)
    # every pattern is hit by its own example, alone
    for pattern, example in examples:
        single = dataclasses.replace(pack, boilerplate=(pattern,))
        assert score_batch([example], ["boilerplate_hits"], single)[0, 0] == 1.0, pattern
    # each shipped pattern has a pre-filter, and the slow ones (optional lead) use it
    assert all(_prefilter.prefilter(p) is not None for p in pack.boilerplate)


def test_boilerplate_prefilter_mixed_patterns() -> None:
    """Pre-filtered, literal-free, Python-only (look-behind) and repeated patterns."""
    patterns = (r"(?i)\b(?:please )?(?:enable|turn on) javascript\b", r"\d{4}-\d\d-\d\d",
                r"(?<=@)example\.com", r"(?i)\bclick here\b", r"(?i)\bclick here\b",
                r"Case(?i:Less)Word", r"(?i)(?:©|\(c\)|\bcopyright)\s*(?:19|20)\d\d\b",
                r"(?i)ꙋ", "(?i)[a-c]+x+")
    pack = dataclasses.replace(PACK, boilerplate=patterns)
    texts = ["Please ENABLE JavaScript", "turn on javascripts", "TURN ON JAVA\u017fCRIPT",
             "2024-01-02 at a@example.com", "CLICK here", "CaseLESSWord", "caseLessWord",
             "CaseLessword", "© 2019", "(C)1999", "copyright2020", "ꙊꙋabcX", "", "xx",
             *[d for d in DOCS if d is not None]]
    texts = [unicodedata.normalize("NFC", t) for t in texts]
    got = score_batch(texts, ["boilerplate_hits"], pack)["boilerplate_hits"].to_numpy()
    np.testing.assert_array_equal(got, _plain_hits(texts, patterns))
    assert got[0] == 1.0 and got[4] == 2.0 and got[5] == 1.0 and got[6] == 0.0


@pytest.mark.parametrize(("pattern", "literals"), [
    (r"(?i)\b(?:please )?(?:enable|turn on) javascript\b", {" javascript"}),
    (r"(?i)(?:©|\(c\)|\bcopyright)\s*(?:19|20)\d\d\b", {"©", "(c)", "copyright"}),
    (r"ab+c", {"a"}), (r"x(?:abc)+y", {"abc"}), (r"(?:ab|cd)?ef", {"ef"}),
    (r"\d{4}\s\d\d", None), (r"(?:ab|c*)", None), (r"(?x) a b c", None), (r"[", None),
])
def test_required_literals(pattern: str, literals: set[str] | None) -> None:
    got = _prefilter.required_literals(pattern)
    if literals is None:
        assert got is None
    else:
        assert got is not None
        assert {"".join(chr(cp) for cp, _ in f) for f in got} == literals


def test_required_literals_keep_case_flags() -> None:
    (factor,) = _prefilter.required_literals(r"ab(?i:cd)ef")
    assert [icase for _, icase in factor] == [False, False]  # "ab" (groups end runs)
    got = _prefilter.required_literals(r"(?i)ab(?-i:cdef)")
    assert got == {tuple((ord(c), False) for c in "cdef")}


def test_bullet_prefilter_by_character_class_counts() -> None:
    """bullet_ratio alone (line regex on every text) = with character signals (regex only
    on texts whose class counts show a bullet)."""
    alone = score_batch(DOCS, ["bullet_ratio"], PACK)["bullet_ratio"].to_numpy()
    both = score_batch(DOCS, ["bullet_ratio", "white_space"], PACK)["bullet_ratio"].to_numpy()
    np.testing.assert_array_equal(np.isnan(alone), np.isnan(both))
    np.testing.assert_array_equal(alone[~np.isnan(alone)], both[~np.isnan(both)])


@pytest.mark.parametrize("name", ["stopword_ratio", "stopword_ratio_folded"])
def test_stopwords_with_an_ascii_fold_map(name: str) -> None:
    """A fold map with ASCII keys sends every word through the Python decision."""
    pack = dataclasses.replace(
        PACK, pack_id="ascii-fold", fold_map={**PACK.fold_map, "x": "the", "Q": "и"},
        stopwords=frozenset({*PACK.stopwords, "thé", "naïve", "’s"}))
    docs = [*DOCS, "x Q q X thé THE naive Naïve ’s", "ＴＨＥ ﬁ ß STRASSE"]
    got = score_batch(docs, [name], pack)[name].to_numpy()
    want = np.array([reference(name, d, pack) for d in docs])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True)


def test_word_vocabulary_codes() -> None:
    from curator.signals.scoring import _vocabulary

    words = pl.Series(["b", "a", "b", "", "ä", "a"], dtype=pl.String)
    codes, vocab = _vocabulary(words)
    assert vocab.gather(codes).to_list() == words.to_list()
    assert len(vocab) == 4 and vocab.null_count() == 0
    codes, vocab = _vocabulary(pl.Series([], dtype=pl.String))
    assert len(codes) == 0


def test_duplicate_bigrams_do_not_cross_documents() -> None:
    """Bigrams are compared as (document, word, word) exactly: the pair formed by one
    document's last word and the next one's first is not a bigram."""
    docs = ["a b", "b a b", "c", "", None, "a b a b", "b a"]
    got = score_batch(docs, ["repeating_duplicate_ngrams"], PACK)
    want = [reference("repeating_duplicate_ngrams", d, PACK) for d in docs]
    np.testing.assert_allclose(got["repeating_duplicate_ngrams"].to_numpy(), want,
                               rtol=0, atol=1e-12, equal_nan=True)


# -- boilerplate pre-filter: near misses, and patterns that get none -------------------
# Texts that contain a pattern's required literal without (necessarily) matching it, the
# examples inside long documents, next to non-ASCII text (Unicode \b), split over lines,
# with NBSP, in NFD: pre-filtered counts = plain polars counts = Python ``re`` counts.

FILLER = ("Ordinary prose about gardens, “quoted” words — and the odd café; "
          "обычный текст тоже. ")


def _pack_examples(lang: str) -> list[tuple[str, str]]:
    """(pattern, its ``# e.g.:`` example) for every pattern of ``curator/langpacks/<lang>``."""
    path = REPO / "curator" / "langpacks" / lang / "boilerplate.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(line.strip(), prev.removeprefix("# e.g.: "))
            for prev, line in itertools.pairwise(lines)
            if line.strip() and not line.startswith("#")]


def _near_misses(pattern: str) -> list[str]:
    texts = []
    for factor in _prefilter.required_literals(pattern) or ():
        lit = "".join(chr(cp) for cp, _ in factor)
        texts += [lit, f"x{lit}y", f"{FILLER}{lit.upper()}{FILLER}", f"«{lit}»\n{lit}s"]
    return texts


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_boilerplate_prefilter_near_misses(lang: str) -> None:
    pack = load_langpack(REPO / "curator" / "langpacks", lang)
    docs: list[str | None] = [None, "", FILLER]
    for pattern, example in _pack_examples(lang):
        docs += [example, f"“{example}” {FILLER * 3}",
                 f"{FILLER * 20}\n{example}\n{FILLER * 20}", "x" + example,
                 example.replace(" ", "\n", 1), example.replace(" ", "\u00a0", 1),
                 unicodedata.normalize("NFD", example + " é"), *_near_misses(pattern)]
    got = score_batch(docs, ["boilerplate_hits"], pack)["boilerplate_hits"].to_numpy()
    present = np.array([d is not None for d in docs])
    nfc = [unicodedata.normalize("NFC", d) for d in docs if d is not None]
    python = np.array([reference("boilerplate_hits", d, pack) for d in nfc])
    np.testing.assert_array_equal(got[present], python)
    series = pl.Series(nfc, dtype=pl.String)
    plain = sum(series.str.contains(p).to_numpy().astype(float) for p in pack.boilerplate)
    np.testing.assert_array_equal(got[present], plain)
    assert np.isnan(got[~present]).all() and (got[present] > 0).sum() > len(pack.boilerplate)


@pytest.mark.parametrize("pattern", [
    r"a\<bcd", r"abc\>d", r"\b{start}abcd", r"\B{end}abcd",  # Rust assertions, Python literals
    r"[[:alpha:]]xyz", r"[a--b]cde", r"[a&&b]cde",  # Rust classes, Python literals ("]xyz")
    r"(?x) a b c d", r"ab(c", r"\p{L}abcd",  # verbose, invalid in Python
])
def test_no_prefilter_where_rust_may_read_the_pattern_otherwise(pattern: str) -> None:
    assert _prefilter.prefilter(pattern) is None
    assert not _prefilter.leads_with_optional(pattern)
    assert _prefilter.prefilter(r"\\<abcd") is not None  # an escaped backslash, then "<"
