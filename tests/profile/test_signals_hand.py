# ruff: noqa: RUF001, RUF003 - multilingual test text on purpose
"""Each of the 24 signals against values worked out by hand on small texts.

Every expected value is derived in the comment next to it (characters, words and
lines counted by hand), not taken from the implementation's output.
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np
import polars as pl
import pytest

from curator.langpack.model import LangPack
from curator.signals import _tables
from curator.signals.registry import REGISTRY
from curator.signals.scoring import SCORERS, score_batch

CYR = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
PACK = LangPack(
    pack_id="hand", language_tag="ru", version="1", root="/nowhere", content_hash="h",
    capabilities=frozenset(),
    stopwords=frozenset({"и", "елка", "the", "and"}),
    charset=frozenset(CYR + CYR.upper()),
    boilerplate=(r"(?i)click here", r"\d{4}", r"never matches", r"(?<=@)ex"),
    fold_map={"ё": "е", "Ё": "Е"},
    sentence_terminators=(".", "…"),
)


def words_tokenizer(texts: list[str]) -> np.ndarray:
    return np.array([len(t.split()) for t in texts])


def score(name: str, text: str | None, pack: LangPack | None = PACK) -> float:
    frame = score_batch([text], [name], pack, tokenizer=words_tokenizer)
    return frame[name][0]


def approx(value: float) -> object:
    return pytest.approx(value, abs=1e-12)


# -- shape, errors ---------------------------------------------------------------------


def test_frame_shape_order_and_dtype() -> None:
    names = ["word_count", "white_space", "script_ratio"]
    frame = score_batch(pl.Series(["a b", None, "ccc"]), names, PACK)
    assert frame.columns == names
    assert frame.height == 3
    assert all(dtype == pl.Float64 for dtype in frame.dtypes)
    assert frame["word_count"].to_list()[0] == 2.0
    assert math.isnan(frame["word_count"].to_list()[1])
    assert frame["word_count"].to_list()[2] == 1.0


def test_scorers_are_the_registry_and_unknown_names_fail() -> None:
    assert set(SCORERS) == set(REGISTRY) and len(SCORERS) == 24
    with pytest.raises(KeyError):
        score_batch(["x"], ["no_such_signal"], PACK)
    with pytest.raises(ValueError, match="language pack"):
        score_batch(["x"], ["script_ratio"], None)
    # agnostic signals need no pack
    assert score("white_space", "a b", None) == approx(1 / 3)


def test_empty_batch() -> None:
    frame = score_batch([], list(SCORERS), PACK, tokenizer=words_tokenizer)
    assert frame.height == 0 and frame.columns == list(SCORERS)


def test_python_whitespace_table_is_str_isspace() -> None:
    assert set(_tables.PY_WHITESPACE) == {chr(c) for c in range(0x110000) if chr(c).isspace()}


# -- None, empty, whitespace-only --------------------------------------------------------


@pytest.mark.parametrize("name", list(REGISTRY))
def test_none_scores_nan(name: str) -> None:
    assert math.isnan(score(name, None))


# empty text: Curator's char ratios give 1.0; word_count 0; < 2 words gives 1.0 for the
# n-gram ratio; whatever divides by zero words/lines/letters is NaN (Curator raises)
EMPTY = {
    "white_space": 1.0, "non_alpha_numeric": 1.0, "numbers_ratio": 1.0,
    "parentheses_ratio": 1.0, "urls_ratio": 1.0, "unicode_alpha_numeric": 1.0,
    "word_count": 0.0, "repeating_duplicate_ngrams": 1.0, "boilerplate_hits": 0.0,
    "token_count": 0.0,
}


@pytest.mark.parametrize("name", list(REGISTRY))
def test_empty_text(name: str) -> None:
    got = score(name, "")
    if name in EMPTY:
        assert got == EMPTY[name]
    else:
        assert math.isnan(got), name


def test_whitespace_only() -> None:
    text = " \t\n"  # 3 characters, all whitespace, no words, no non-blank line
    assert score("white_space", text) == 1.0
    assert score("non_alpha_numeric", text) == approx(2 / 3)  # "\n" is in Curator's set
    assert score("unicode_alpha_numeric", text) == approx(2 / 3)
    assert score("numbers_ratio", text) == 0.0
    assert score("word_count", text) == 0.0
    assert score("repeating_duplicate_ngrams", text) == 1.0
    for name in ("bullet_ratio", "ellipsis", "punctuation", "mean_word_length",
                 "max_word_length", "symbol_to_word", "words_with_alphabets",
                 "sentence_end_ratio", "stopword_ratio", "script_ratio", "latin_ratio"):
        assert math.isnan(score(name, text)), name


# -- characters ----------------------------------------------------------------------------


def test_plain_english() -> None:
    text = "Hello, world!"  # 13 chars; 1 space; 12 in [a-zA-Z0-9\n?!,.]
    assert score("white_space", text) == approx(1 / 13)
    assert score("non_alpha_numeric", text) == approx(1 / 13)
    assert score("unicode_alpha_numeric", text) == approx(1 / 13)
    assert score("numbers_ratio", text) == 0.0
    assert score("word_count", text) == 2.0  # "Hello," "world!"
    assert score("mean_word_length", text) == 6.0
    assert score("max_word_length", text) == 6.0
    assert score("words_with_alphabets", text) == 1.0
    assert score("symbol_to_word", text) == 0.0
    assert score("repeating_duplicate_ngrams", text) == 0.0
    assert score("punctuation", text) == 0.0  # the one line ends in "!"
    assert score("latin_ratio", text) == 1.0  # 10 letters, all ASCII
    assert score("token_count", text) == 2.0


def test_digits_are_ascii_only() -> None:
    assert score("numbers_ratio", "a1b22") == approx(3 / 5)
    assert score("numbers_ratio", "x١٢3") == approx(1 / 4)  # Arabic-Indic digits do not count


def test_parentheses_and_whitespace_sets() -> None:
    assert score("parentheses_ratio", "(a)[b]{c}⟨d⟩") == approx(8 / 12)
    assert score("white_space", "a\bb c") == approx(2 / 5)  # backspace is in Curator's list
    assert score("white_space", "a\xa0b") == 0.0  # NBSP is not


def test_urls() -> None:
    text = "see https://a.b/c now"  # 21 chars, the URL is 13
    assert score("urls_ratio", text) == approx(13 / 21)
    assert score("urls_ratio", "ftp://a.b no") == 0.0


def test_cyrillic() -> None:
    text = "Ёлка и ель."  # 11 chars; letters Ё л к а и е л ь (8)
    assert score("script_ratio", text) == 1.0
    assert score("latin_ratio", text) == 0.0
    assert score("foreign_script_ratio", text) == 0.0
    assert score("diacritic_ratio", text) == approx(1 / 8)  # only Ё folds
    assert score("non_alpha_numeric", text) == approx(10 / 11)  # only "." is ASCII-alnum-ish
    assert score("unicode_alpha_numeric", text) == approx(2 / 11)  # the two spaces
    assert score("stopword_ratio", text) == approx(1 / 3)  # "и"
    assert score("stopword_ratio_folded", text) == approx(2 / 3)  # "и", "ёлка" -> "елка"
    assert score("mean_word_length", text) == 3.0  # 4 + 1 + 4
    assert score("words_with_alphabets", text) == 1.0
    assert score("sentence_end_ratio", text) == 1.0


def test_devanagari_letters_and_marks() -> None:
    text = "नमस्ते दुनिया"  # न म स ् त े | द ु न ि य ा: 7 letters, 5 marks, 1 space
    assert len(text) == 13
    assert score("unicode_alpha_numeric", text) == approx(1 / 13)
    assert score("non_alpha_numeric", text) == 1.0
    assert score("script_ratio", text) == 0.0  # 12 letters+marks, none Cyrillic
    assert score("foreign_script_ratio", text) == 1.0
    assert score("latin_ratio", text) == 0.0
    assert score("diacritic_ratio", text) == 0.0
    assert score("words_with_alphabets", text) == 1.0  # vowel signs are Alphabetic too
    assert score("word_count", text) == 2.0
    assert score("max_word_length", text) == 6.0


def test_emoji_and_joiners() -> None:
    text = "😀👍 ok"  # 5 code points; only o, k are alnum
    assert score("unicode_alpha_numeric", text) == approx(3 / 5)
    assert score("words_with_alphabets", text) == approx(1 / 2)
    assert score("mean_word_length", text) == 2.0
    assert score("latin_ratio", text) == 1.0
    assert score("unicode_alpha_numeric", "👩\u200d💻") == approx(2 / 3)  # ZWJ is alnum
    assert math.isnan(score("latin_ratio", "😀"))  # no letters


def test_nfc_and_nfd_score_the_same() -> None:
    nfc, nfd = "été", unicodedata.normalize("NFD", "été")
    assert len(nfd) == 5
    for name in REGISTRY:
        a, b = score(name, nfc), score(name, nfd)
        assert (math.isnan(a) and math.isnan(b)) or a == b, name
    assert score("max_word_length", nfd) == 3.0  # the NFC word
    assert score("diacritic_ratio", nfd) == approx(2 / 3)  # é é fold, t does not
    assert score("latin_ratio", nfd) == approx(1 / 3)
    assert score("non_alpha_numeric", nfd) == approx(2 / 3)


# -- lines -------------------------------------------------------------------------------


def test_bullets_and_punctuation() -> None:
    text = "• one\n  ● two\n\nthree"  # 3 non-blank lines, 2 start with a bullet
    assert score("bullet_ratio", text) == approx(2 / 3)
    assert score("punctuation", text) == 1.0  # none ends in . ? ! " '
    assert score("ellipsis", text) == 0.0
    assert score("bullet_ratio", "- dash\n* star") == 0.0  # not Curator bullets


def test_ellipsis_lines() -> None:
    text = "wait...\nok\nRead More \nfine."  # "wait..." and "read more" end in a mark
    assert score("ellipsis", text) == approx(2 / 4)
    assert score("punctuation", text) == approx(2 / 4)  # "ok", "Read More"
    assert score("ellipsis", "a […]\r\nb -»\nc…") == 1.0


def test_sentence_end_ratio() -> None:
    text = "One.\nTwo…\nThree!\n\n  "  # 3 non-blank lines; "!" is not a pack terminator
    assert score("sentence_end_ratio", text) == approx(2 / 3)


# -- words -------------------------------------------------------------------------------


def test_symbol_words() -> None:
    # "#" (1 run/1 char), "#a#" (2/3), "...", "…", "[...]" are symbols; "##" (1/2) is not
    text = "# #a# ## ... … [...] word"
    assert score("symbol_to_word", text) == approx(5 / 7)


def test_word_lengths() -> None:
    assert score("max_word_length", "a bbb cc") == 3.0
    assert score("mean_word_length", "a bbb cc") == 2.0
    assert score("word_count", " a\tbbb\u3000cc\n") == 3.0  # any str.isspace splits


def test_words_with_alphabets() -> None:
    assert score("words_with_alphabets", "abc 123 ... x1") == approx(2 / 4)
    assert score("words_with_alphabets", "Ⅻ 12") == approx(1 / 2)  # Nl is Alphabetic


def test_repeating_duplicate_bigrams() -> None:
    # bigrams ab ba ab ba ab: the last three repeat; they cover words 3-6 (4 chars)
    # plus one space each (3), of 11 characters
    assert score("repeating_duplicate_ngrams", "a b a b a b") == approx(7 / 11)
    assert score("repeating_duplicate_ngrams", "word") == 1.0
    assert score("repeating_duplicate_ngrams", "x y") == 0.0
    # a repeat across documents is not a repeat
    frame = score_batch(["p q", "p q"], ["repeating_duplicate_ngrams"], PACK)
    assert frame["repeating_duplicate_ngrams"].to_list() == [0.0, 0.0]


def test_stopwords_strip_ascii_punctuation_and_casefold() -> None:
    assert score("stopword_ratio", "The, cat (and) dog.") == approx(2 / 4)


def test_boilerplate_hits() -> None:
    # "click here" (any case), a 4-digit run, and the look-behind pattern match
    assert score("boilerplate_hits", "Click HERE 2024 a@ex") == 3.0
    assert score("boilerplate_hits", "nothing to see") == 0.0


def test_token_count_uses_the_tokenizer() -> None:
    frame = score_batch(["a b c", None, ""], ["token_count"], PACK, tokenizer=words_tokenizer)
    got = frame["token_count"].to_list()
    assert got[0] == 3.0 and math.isnan(got[1]) and got[2] == 0.0
    assert math.isnan(score_batch(["a b"], ["token_count"], PACK)["token_count"][0])
