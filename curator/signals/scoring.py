"""Score a batch of documents on the 24 quality signals, vectorised over the batch.

``score_batch(texts, names, pack, tokenizer)`` returns one Float64 column per
requested signal. Every signal is defined once, in :data:`SCORERS`, as a function
of a :class:`_Batch`: the batch's NFC texts plus features computed lazily and
shared by the signals that need them (character-class counts per document, the
whitespace-split words, per-line regex counts). Definitions, edge cases and the
reference (NeMo Curator) each one follows are in ``docs/signals.md``.

Where time goes (``bench/signal_throughput.py``): character classes are one
compiled pass over the code points for a big batch (``curator.signals._kernel``),
a table lookup per code point and one ``bincount`` for a small one; words are one
polars ``replace_all``/``split``; line signals are polars ``count_matches``.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from functools import cached_property, lru_cache

import numpy as np
import polars as pl

from curator.langpack.model import LangPack
from curator.signals import _prefilter
from curator.signals import _tables as T
from curator.signals.registry import REGISTRY

Tokenizer = Callable[[list[str]], np.ndarray]
Scorer = Callable[["_Batch"], np.ndarray]


def _cls(chars: str) -> str:
    """A Rust-regex character class body spelling ``chars`` as ``\\x{..}`` escapes."""
    return "".join(f"\\x{{{ord(c):x}}}" for c in chars)


_WS = _cls(T.PY_WHITESPACE)  # Python's str.isspace set
_WS_NO_NL = _cls(T.PY_WHITESPACE.replace("\n", ""))
#: whitespace that ``split(" ")`` would not handle alone: runs of 2+, or any non-space
#: (single spaces, most of the whitespace, are left alone: far fewer replacements)
WS_TO_SPACE = f"[{_WS}]{{2,}}|[{_cls(T.PY_WHITESPACE.replace(' ', ''))}]"
#: a line (``text.split("\n")``) with a non-whitespace character
NONBLANK_LINE = f"(?m)^[{_WS_NO_NL}]*[^{_WS}]"
#: Curator's bullet_list, after the line's leading whitespace
BULLETS = T.BULLETS
BULLET_LINE = f"(?m)^[{_WS_NO_NL}]*[{_cls(BULLETS)}]"
#: Curator's end_marks, before the line's trailing whitespace
END_MARKS = ".?!\"'"
END_MARK_LINE = f"(?m)[{_cls(END_MARKS)}][{_WS_NO_NL}]*$"
#: Curator's ellipsis_marks (``line.strip().lower().endswith(mark)``)
ELLIPSIS_MARKS = ("...", "[...]", "…", "(...)", "[…]", "-»", "read more..", "read more")


def _literal(mark: str) -> str:
    out = []
    for ch in mark:
        if ch.isascii() and ch.isalpha():
            out.append(f"[{ch.lower()}{ch.upper()}]")  # .lower() folds only ASCII here
        else:
            out.append(_cls(ch))
    return "".join(out)


ELLIPSIS_LINE = (
    "(?m)(?:" + "|".join(_literal(m) for m in ELLIPSIS_MARKS) + f")[{_WS_NO_NL}]*$"
)
#: Curator's ellipsis words for symbol_to_word (the multi-word marks never are one word)
ELLIPSIS_WORDS = [m for m in ELLIPSIS_MARKS if " " not in m]
#: Curator's regex_url
URL = r"https?://(?:[A-Za-z0-9$\-_@.&+/:=?#~]|[!*\(\),]|(?:%[0-9A-Fa-f]{2}))+"
ALPHABETIC = r"\p{Alphabetic}"  # the `regex` module's [[:alpha:]]
ASCII_PUNCTUATION = string.punctuation


# --------------------------------------------------------------------------------------
# Shared, lazily computed features of one batch
# --------------------------------------------------------------------------------------


def _nfc(text: str | None) -> str | None:
    if text is None or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def _segment_reduce(op: np.ufunc, values: np.ndarray, counts: np.ndarray,
                    empty: float) -> np.ndarray:
    """``op`` over consecutive segments of ``values`` of sizes ``counts``; ``empty`` if none."""
    out = np.full(len(counts), empty, dtype=np.float64)
    nonempty = counts > 0
    if values.size:
        starts = (np.cumsum(counts) - counts)[nonempty]
        out[nonempty] = op.reduceat(values, starts)
    return out


class _Batch:
    """A batch's NFC texts and the features the scorers share (each computed once)."""

    def __init__(self, texts: pl.Series | Sequence[str | None], pack: LangPack | None,
                 tokenizer: Tokenizer | None, uses_chars: bool = False) -> None:
        raw = texts.to_list() if isinstance(texts, pl.Series) else list(texts)
        self.texts: list[str | None] = [_nfc(t) for t in raw]
        self.n = len(self.texts)
        self.null = np.array([t is None for t in self.texts], dtype=bool)
        if (isinstance(texts, pl.Series) and texts.dtype == pl.String
                and all(a is b for a, b in zip(raw, self.texts, strict=True))):
            self.series = texts.rename("text").fill_null("")  # already NFC: no copy
        else:
            self.series = pl.Series("text", self.texts, dtype=pl.String).fill_null("")
        self.pack = pack
        self.tokenizer = tokenizer
        #: the character-class counts will be computed anyway (a requested signal needs
        #: them): signals may use them as a free pre-filter
        self.uses_chars = uses_chars

    # -- characters -------------------------------------------------------------------
    @cached_property
    def n_chars(self) -> np.ndarray:
        return self.series.str.len_chars().to_numpy().astype(np.int64)

    @cached_property
    def table(self) -> T.ClassTable:
        return T.class_table(self.pack)

    @cached_property
    def class_counts(self) -> np.ndarray:
        """(documents x classes) counts of code points of each class."""
        joined = "".join(t for t in self.texts if t)
        cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        if len(cps) >= KERNEL_MIN_CODEPOINTS:
            return _kernel_class_counts(cps, self.n_chars, self.table)
        return _numpy_class_counts(cps, self.n_chars, self.table)

    def count(self, mask: int, exclude: int = 0) -> np.ndarray:
        """Per document: code points with every property in ``mask`` and none in ``exclude``."""
        cols = self.table.columns(mask, exclude)
        return self.class_counts[:, cols].sum(axis=1).astype(np.float64)

    # -- lines and regexes -------------------------------------------------------------
    def matches(self, pattern: str) -> np.ndarray:
        return self.series.str.count_matches(pattern).to_numpy().astype(np.float64)

    @cached_property
    def n_lines(self) -> np.ndarray:
        """Non-blank lines: Curator's ``get_sentences``."""
        return self.matches(NONBLANK_LINE)

    # -- words -------------------------------------------------------------------------
    @cached_property
    def _split(self) -> tuple[pl.Series, np.ndarray]:
        collapsed = self.series.str.replace_all(WS_TO_SPACE, " ").str.strip_chars(" ")
        lists = collapsed.str.split(" ")
        counts = lists.list.len().to_numpy().astype(np.int64)
        counts[collapsed.str.len_bytes().to_numpy() == 0] = 0
        words = lists.explode()
        if words.len() != counts.sum():  # only the [""] of empty documents to drop
            words = words.filter(words.str.len_bytes() > 0)
        return words, counts

    @property
    def words(self) -> pl.Series:
        """Every document's ``text.split()``, concatenated in order."""
        return self._split[0]

    @property
    def word_counts(self) -> np.ndarray:
        return self._split[1]

    @cached_property
    def word_doc(self) -> np.ndarray:
        return np.repeat(np.arange(self.n, dtype=np.int64), self.word_counts)

    @cached_property
    def word_len(self) -> np.ndarray:
        return self.words.str.len_chars().to_numpy().astype(np.int64)

    @cached_property
    def _vocab(self) -> tuple[np.ndarray, pl.Series]:
        return _vocabulary(self.words)

    @property
    def word_code(self) -> np.ndarray:
        """Per word: its index in :attr:`vocab` (equal words, equal codes)."""
        return self._vocab[0]

    @property
    def vocab(self) -> pl.Series:
        """The batch's distinct words: per-word properties are computed once per
        distinct word and spread to the words with ``values[word_code]``."""
        return self._vocab[1]

    @cached_property
    def vocab_len(self) -> np.ndarray:
        return self.vocab.str.len_chars().to_numpy().astype(np.int64)

    @cached_property
    def _word_ends(self) -> np.ndarray:
        """Per document: the position after its last word (its words are
        ``[ends - counts, ends)``)."""
        return np.cumsum(self.word_counts)

    def per_doc(self, word_values: np.ndarray) -> np.ndarray:
        """Per document: the sum of a per-word flag (how many words have it) or an
        integer count, by one cumulative sum over the words."""
        if word_values.dtype.kind not in "biu":
            return np.bincount(self.word_doc, weights=word_values.astype(np.float64),
                               minlength=self.n)
        csum = np.zeros(len(word_values) + 1, dtype=np.int64)
        np.cumsum(word_values, dtype=np.int64, out=csum[1:])
        ends = self._word_ends
        return (csum[ends] - csum[ends - self.word_counts]).astype(np.float64)

    def per_doc_vocab(self, vocab_flags: np.ndarray) -> np.ndarray:
        """Per document: how many words have a flag given per distinct word."""
        return self.per_doc(vocab_flags[self.word_code])

    @cached_property
    def _stop_flags(self) -> np.ndarray:
        """Per distinct word: stopword (bit 1), stopword after folding (bit 2)."""
        flags = _stopword_cache(_need_pack(self.pack, "stopword_ratio"))
        return flags.for_vocab(self.vocab)


#: batches with at least this many code points count classes with the compiled loop
#: (one pass; the first use in a process imports numba and loads the cached code, about
#: a second, so small batches, e.g. a tiny run's, keep the numpy passes). Both give the
#: same counts (tests/filter/test_class_count_kernel.py).
KERNEL_MIN_CODEPOINTS = 1_000_000


def _numpy_class_counts(cps: np.ndarray, n_chars: np.ndarray, table: T.ClassTable
                        ) -> np.ndarray:
    """Four passes: repeat the document's row offset per code point, look up each
    code point's class, add, bincount."""
    n, k = len(n_chars), table.n_classes
    keys = np.repeat(np.arange(0, n * k, k, dtype=np.int64), n_chars)
    keys += table.cls[cps]
    return np.bincount(keys, minlength=n * k).reshape(n, k)


def _kernel_class_counts(cps: np.ndarray, n_chars: np.ndarray, table: T.ClassTable
                         ) -> np.ndarray:
    """One compiled pass over the code points (:mod:`curator.signals._kernel`)."""
    from curator.signals._kernel import class_counts

    return class_counts(cps, n_chars, table.cls, table.n_classes)


def _vocabulary(words: pl.Series) -> tuple[np.ndarray, pl.Series]:
    """(code of each word, distinct words in code order), by a categorical cast into
    categories private to this call (one hash pass over the words)."""
    try:
        categories = pl.Categories.random()
    except AttributeError:  # pragma: no cover - polars without Categories
        vocab = words.unique(maintain_order=True)
        index = vocab.to_frame("w").with_row_index("i")
        codes = words.to_frame("w").join(index, on="w", how="left", maintain_order="left")
        return codes["i"].to_numpy().astype(np.int64), vocab
    categorical = words.cast(pl.Categorical(categories))
    # read the categories while the column holding them is alive (they are freed with it)
    vocab = categories.to_series().cast(pl.String)
    codes = categorical.to_physical().to_numpy().astype(np.int64)
    if codes.size and (len(vocab) <= codes.max() or vocab.null_count()):  # pragma: no cover
        raise RuntimeError("categorical vocabulary does not cover the words")
    return codes, vocab


class _StopwordFlags(dict[str, int]):
    """A pack's memo of word -> stopword flags (1: plain, 2: folded), bounded in size."""

    LIMIT = 1_000_000

    def __init__(self, pack: LangPack) -> None:
        super().__init__()
        self.pack = pack
        self.plain = {w.casefold() for w in pack.stopwords}
        self.folded = {pack.fold(w.casefold()) for w in pack.stopwords}
        # folding an ASCII word changes nothing unless the fold map has ASCII keys
        self.ascii_folds = any(k.isascii() for k in pack.fold_map)
        self._plain = pl.Series(sorted(self.plain), dtype=pl.String).implode()
        self._folded = pl.Series(sorted(self.folded), dtype=pl.String).implode()

    def for_vocab(self, vocab: pl.Series) -> np.ndarray:
        """Flags of each distinct word. ASCII words (unless the fold map has ASCII keys)
        are decided by polars: for them ``casefold`` is ``to_lowercase`` and ``fold``
        changes nothing; the others one by one in Python, memoised."""
        out = np.zeros(len(vocab), dtype=np.uint8)
        rest = np.arange(len(vocab))
        if not self.ascii_folds and len(vocab):
            ascii_ = (vocab.str.len_bytes() == vocab.str.len_chars()).to_numpy()
            idx = np.flatnonzero(ascii_)
            stripped = vocab.gather(idx).str.to_lowercase().str.strip_chars(ASCII_PUNCTUATION)
            out[idx] = (stripped.is_in(self._plain).to_numpy().astype(np.uint8)
                        | stripped.is_in(self._folded).to_numpy().astype(np.uint8) << 1)
            rest = np.flatnonzero(~ascii_)
        if rest.size:
            words = vocab.gather(rest).to_list() if rest.size < len(vocab) else vocab.to_list()
            decided = []
            for word in words:
                flag = self.get(word)
                if flag is None:
                    flag = self.decide(word)
                    self[word] = flag
                decided.append(flag)
            out[rest] = decided
        return out

    def decide(self, word: str) -> int:
        if len(self) >= self.LIMIT:
            self.clear()
        lowered = word.casefold()
        folded = lowered if word.isascii() and not self.ascii_folds else self.pack.fold(lowered)
        return ((lowered.strip(ASCII_PUNCTUATION) in self.plain)
                | (folded.strip(ASCII_PUNCTUATION) in self.folded) << 1)


_STOPWORD_CACHE: dict[tuple[object, ...], _StopwordFlags] = {}


def _stopword_cache(pack: LangPack) -> _StopwordFlags:
    key = (pack.stopwords, tuple(sorted(pack.fold_map.items())))
    flags = _STOPWORD_CACHE.get(key)
    if flags is None:
        if len(_STOPWORD_CACHE) > 8:
            _STOPWORD_CACHE.clear()
        flags = _STOPWORD_CACHE[key] = _StopwordFlags(pack)
    return flags


def _need_pack(pack: LangPack | None, name: str) -> LangPack:
    if pack is None:
        raise ValueError(f"signal {name!r} needs a language pack")
    return pack


def _ratio(num: np.ndarray, den: np.ndarray, empty: float = np.nan) -> np.ndarray:
    """``num/den``, and ``empty`` where ``den`` is 0."""
    out = np.full(len(den), empty, dtype=np.float64)
    ok = den > 0
    np.divide(num, den, out=out, where=ok)
    return out


# --------------------------------------------------------------------------------------
# The 24 signals: one definition each
# --------------------------------------------------------------------------------------


def _bullet_ratio(b: _Batch) -> np.ndarray:
    if not b.uses_chars:
        return _ratio(b.matches(BULLET_LINE), b.n_lines)
    bullets = np.zeros(b.n, dtype=np.float64)
    rows = np.flatnonzero(b.count(T.BULLET) > 0)  # only these can have a bullet line
    if rows.size:
        lines = b.series.gather(rows).str.count_matches(BULLET_LINE).to_numpy()
        bullets[rows] = lines
    return _ratio(bullets, b.n_lines)


def _ellipsis(b: _Batch) -> np.ndarray:
    return _ratio(b.matches(ELLIPSIS_LINE), b.n_lines)


def _punctuation(b: _Batch) -> np.ndarray:
    return _ratio(b.n_lines - b.matches(END_MARK_LINE), b.n_lines)


def _parentheses_ratio(b: _Batch) -> np.ndarray:
    return _ratio(b.count(T.PAREN), b.n_chars, 1.0)


def _urls_ratio(b: _Batch) -> np.ndarray:
    # URLs are ASCII, so the characters they cover are the bytes replace_all removes
    stripped = b.series.str.replace_all(URL, "").str.len_bytes().to_numpy()
    removed = b.series.str.len_bytes().to_numpy() - stripped
    return _ratio(removed.astype(np.float64), b.n_chars, 1.0)


def _white_space(b: _Batch) -> np.ndarray:
    return _ratio(b.count(T.CUR_WS), b.n_chars, 1.0)


def _unicode_alpha_numeric(b: _Batch) -> np.ndarray:
    return _ratio(b.n_chars - b.count(T.UNI_ANP), b.n_chars, 1.0)


def _non_alpha_numeric(b: _Batch) -> np.ndarray:
    return _ratio(b.n_chars - b.count(T.ASCII_ANP), b.n_chars, 1.0)


def _numbers_ratio(b: _Batch) -> np.ndarray:
    return _ratio(b.count(T.DIGIT), b.n_chars, 1.0)


def _symbol_to_word(b: _Batch) -> np.ndarray:
    vocab = b.vocab
    symbol = vocab.is_in(ELLIPSIS_WORDS).to_numpy()
    has_hash = vocab.str.contains("#", literal=True).to_numpy()
    if has_hash.any():
        idx = np.flatnonzero(has_hash)
        runs = vocab.gather(idx).str.count_matches("#+").to_numpy().astype(np.int64)
        symbol[idx] |= 2 * runs > b.vocab_len[idx]  # runs / len > 0.5
    return _ratio(b.per_doc_vocab(symbol), b.word_counts.astype(np.float64))


def _max_word_length(b: _Batch) -> np.ndarray:
    return _segment_reduce(np.maximum, b.word_len, b.word_counts, np.nan)


def _words_with_alphabets(b: _Batch) -> np.ndarray:
    alpha = b.vocab.str.contains(ALPHABETIC).to_numpy()
    return _ratio(b.per_doc_vocab(alpha), b.word_counts.astype(np.float64))


def _repeating_duplicate_ngrams(b: _Batch) -> np.ndarray:
    """Curator's n=2 count: characters of words in a repeated bigram, plus one space each."""
    counts = b.word_counts
    out = np.ones(b.n, dtype=np.float64)  # fewer than 2 words: 1.0
    codes = b.word_code
    if len(codes) >= 2:
        # bigram i = words (i, i+1), unless i is the last word of its document
        last = b._word_ends[counts > 0] - 1
        dup = _seen_before(b.word_doc[:-1], codes[:-1], codes[1:], len(b.vocab),
                           last[last < len(codes) - 1])
        covered = np.zeros(len(codes), dtype=bool)
        covered[:-1] |= dup
        covered[1:] |= dup
        # characters of the covered words + one per duplicate bigram, in one sum
        chars = b.per_doc(np.where(covered, b.word_len, 0) + np.append(dup, False))
        scored = counts >= 2
        out[scored] = chars[scored] / b.n_chars[scored]
    return out


def _seen_before(doc: np.ndarray, first: np.ndarray, second: np.ndarray, n_codes: int,
                 not_bigrams: np.ndarray) -> np.ndarray:
    """Per bigram (document, first word code, second word code), in order: whether the
    same triple occurred at an earlier position; positions ``not_bigrams`` (a document's
    last word and the next document's first) are never. Exact: the triple is packed into
    one int64 (or compared as three columns if it does not fit)."""
    if (int(doc[-1]) + 1) * n_codes * n_codes >= 2**62:  # pragma: no cover - huge batches
        frame = pl.DataFrame({"d": doc, "a": first, "b": second})
        seen = ~frame.is_first_distinct().to_numpy()
        seen[not_bigrams] = False
        return seen
    key = (doc * n_codes + first) * n_codes + second
    key[not_bigrams] = -1 - not_bigrams  # negative and distinct: never seen before
    # stable, so each group's first entry is its earliest position; and faster than the
    # default introsort here (2.3x on 600k keys): the keys are sorted by document already
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    seen = np.ones(len(key), dtype=bool)
    seen[order[starts]] = False
    return seen


def _word_count(b: _Batch) -> np.ndarray:
    return b.word_counts.astype(np.float64)


def _mean_word_length(b: _Batch) -> np.ndarray:
    return _ratio(b.n_chars - b.count(T.PY_WS), b.word_counts.astype(np.float64))


def _token_count(b: _Batch) -> np.ndarray:
    out = np.full(b.n, np.nan)
    if b.tokenizer is not None:
        present = [t for t in b.texts if t is not None]
        out[~b.null] = np.asarray(b.tokenizer(present), dtype=np.float64)
    return out


def _script_ratio(b: _Batch) -> np.ndarray:
    _need_pack(b.pack, "script_ratio")
    return _ratio(b.count(T.LETTER_MARK | T.IN_CHARSET), b.count(T.LETTER_MARK))


def _latin_ratio(b: _Batch) -> np.ndarray:
    _need_pack(b.pack, "latin_ratio")
    return _ratio(b.count(T.LETTER | T.ASCII_ALPHA), b.count(T.LETTER))


def _foreign_script_ratio(b: _Batch) -> np.ndarray:
    _need_pack(b.pack, "foreign_script_ratio")
    foreign = b.count(T.LETTER, exclude=T.IN_CHARSET | T.ASCII_ALPHA)
    return _ratio(foreign, b.count(T.LETTER))


def _diacritic_ratio(b: _Batch) -> np.ndarray:
    _need_pack(b.pack, "diacritic_ratio")
    return _ratio(b.count(T.LETTER | T.FOLDS), b.count(T.LETTER))


def _stopword_ratio(b: _Batch) -> np.ndarray:
    return _ratio(b.per_doc_vocab((b._stop_flags & 1) > 0), b.word_counts.astype(np.float64))


def _stopword_ratio_folded(b: _Batch) -> np.ndarray:
    return _ratio(b.per_doc_vocab((b._stop_flags & 2) > 0), b.word_counts.astype(np.float64))


def _boilerplate_hits(b: _Batch) -> np.ndarray:
    """Patterns are pre-filtered by required literals (``_prefilter``): first one
    search for any pattern's literal selects the candidate documents, then each
    pattern's own literal, then the pattern itself, each on fewer documents."""
    pack = _need_pack(b.pack, "boilerplate_hits")
    hits = np.zeros(b.n, dtype=np.float64)
    union, filtered = _boilerplate_plan(pack.boilerplate)
    rows = np.arange(b.n)
    candidates = b.series
    if union is not None and b.n:
        rows = np.flatnonzero(b.series.str.contains(union).to_numpy())
        candidates = b.series.gather(rows)
    for pattern in pack.boilerplate:
        if pattern in filtered:
            if rows.size:
                hits[rows] += _contains(candidates, pattern)
        elif _rust_compiles(pattern):
            hits += b.series.str.contains(pattern).to_numpy()
        else:  # not Rust-regex syntax (look-around, ...): Python's re, per document
            rx = re.compile(pattern)
            hits += np.array([rx.search(t or "") is not None for t in b.texts], dtype=bool)
    return hits


@lru_cache(maxsize=4096)
def _rust_compiles(pattern: str) -> bool:
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.ComputeError:
        return False
    return True


@lru_cache(maxsize=64)
def _boilerplate_plan(patterns: tuple[str, ...]) -> tuple[str | None, frozenset[str]]:
    """The patterns run on polars that have a literal pre-filter, and (for two or more)
    the union of their pre-filters."""
    filtered = {p: f for p in patterns if _rust_compiles(p)
                and (f := _prefilter.prefilter(p)) is not None}
    union = "|".join(sorted(set(filtered.values()))) if len(filtered) >= 2 else None
    return union, frozenset(filtered)


def _contains(series: pl.Series, pattern: str) -> np.ndarray:
    """``series.str.contains(pattern)``, running the pattern only where its pre-filter
    (a required literal, :mod:`curator.signals._prefilter`) matches."""
    literal = _prefilter.prefilter(pattern)
    if literal is None or not _prefilter.leads_with_optional(pattern):
        return series.str.contains(pattern).to_numpy()
    rows = np.flatnonzero(series.str.contains(literal).to_numpy())
    if rows.size == len(series):
        return series.str.contains(pattern).to_numpy()
    found = np.zeros(len(series), dtype=bool)
    if rows.size:
        found[rows] = series.gather(rows).str.contains(pattern).to_numpy()
    return found


def _sentence_end_ratio(b: _Batch) -> np.ndarray:
    pack = _need_pack(b.pack, "sentence_end_ratio")
    terminators = [t for t in pack.sentence_terminators if t]
    if not terminators:
        return _ratio(np.zeros(b.n), b.n_lines)
    alternatives = "|".join(_cls(t) for t in sorted(terminators, key=len, reverse=True))
    ending = b.matches(f"(?m)(?:{alternatives})[{_WS_NO_NL}]*$")
    return _ratio(ending, b.n_lines)


SCORERS: dict[str, Scorer] = {
    "bullet_ratio": _bullet_ratio,
    "ellipsis": _ellipsis,
    "parentheses_ratio": _parentheses_ratio,
    "urls_ratio": _urls_ratio,
    "white_space": _white_space,
    "unicode_alpha_numeric": _unicode_alpha_numeric,
    "non_alpha_numeric": _non_alpha_numeric,
    "numbers_ratio": _numbers_ratio,
    "punctuation": _punctuation,
    "symbol_to_word": _symbol_to_word,
    "max_word_length": _max_word_length,
    "words_with_alphabets": _words_with_alphabets,
    "repeating_duplicate_ngrams": _repeating_duplicate_ngrams,
    "word_count": _word_count,
    "mean_word_length": _mean_word_length,
    "token_count": _token_count,
    "script_ratio": _script_ratio,
    "latin_ratio": _latin_ratio,
    "foreign_script_ratio": _foreign_script_ratio,
    "diacritic_ratio": _diacritic_ratio,
    "stopword_ratio": _stopword_ratio,
    "stopword_ratio_folded": _stopword_ratio_folded,
    "boilerplate_hits": _boilerplate_hits,
    "sentence_end_ratio": _sentence_end_ratio,
}
assert set(SCORERS) == set(REGISTRY), sorted(set(SCORERS) ^ set(REGISTRY))
#: the signals that read the character-class counts (``_Batch.class_counts``)
CHAR_SIGNALS = frozenset({
    "parentheses_ratio", "white_space", "unicode_alpha_numeric", "non_alpha_numeric",
    "numbers_ratio", "mean_word_length", "script_ratio", "latin_ratio",
    "foreign_script_ratio", "diacritic_ratio",
})


def score_batch(
    texts: pl.Series | Sequence[str | None],
    names: Sequence[str],
    pack: LangPack | None,
    tokenizer: Tokenizer | None = None,
) -> pl.DataFrame:
    """One Float64 column per signal in ``names``, one row per text, in order.

    Texts are scored in NFC form. A None text scores NaN on every signal, and so
    does any non-finite result. ``token_count`` is NaN without a ``tokenizer`` (a
    callable returning one token count per text). Pack-backed signals raise
    ``ValueError`` when ``pack`` is None; unknown names raise ``KeyError``.
    """
    unknown = [name for name in names if name not in SCORERS]
    if unknown:
        raise KeyError(f"unknown signal(s): {', '.join(unknown)}")
    batch = _Batch(texts, pack, tokenizer, uses_chars=any(n in CHAR_SIGNALS for n in names))
    columns: dict[str, np.ndarray] = {}
    for name in names:
        values = np.asarray(SCORERS[name](batch), dtype=np.float64)
        values = np.where(np.isfinite(values) & ~batch.null, values, np.nan)
        columns[name] = values
    return pl.DataFrame(
        [pl.Series(name, columns[name], dtype=pl.Float64) for name in names],
        schema={name: pl.Float64 for name in names},
    )
