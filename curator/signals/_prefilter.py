"""Literal pre-filters for the boilerplate patterns (private).

A boilerplate pattern such as ``(?i)\\b(?:please )?(?:enable|turn on) javascript\\b`` is
slow on polars' Rust regex engine: the Unicode ``\\b`` and the optional prefix keep it
off its literal-search fast path. Every match of it, however, contains ``" javascript"``
(in any case). :func:`prefilter` derives such a *required literal* (or a set of
alternatives, one of which every match contains) from the pattern's syntax tree and
spells it as a Rust regex of literals only, which the engine runs at memchr/Teddy
speed. The full pattern then runs only on the documents the pre-filter passes.

Exactness: the pre-filter is run by the same engine, with the same case-insensitivity
flags as the literal had in the pattern, so "this document contains the literal" means
exactly what it means inside the full pattern; a document it rejects cannot match. The
pattern is parsed with Python's own parser (the packs document patterns as Python
regexes); patterns it cannot parse, verbose ``(?x)`` patterns and patterns with no
required literal get no pre-filter (``None``) and run on every document.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

try:  # Python 3.11+
    from re import _constants as _C
    from re import _parser as _P
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _C  # type: ignore[no-redef]
    import sre_parse as _P  # type: ignore[no-redef]

#: one required literal: (code point, case-insensitive) per character
Factor = tuple[tuple[int, bool], ...]

_REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT}
if hasattr(_C, "POSSESSIVE_REPEAT"):
    _REPEATS.add(_C.POSSESSIVE_REPEAT)
_ATOMIC = getattr(_C, "ATOMIC_GROUP", None)


def _weight(factor: Factor) -> float:
    """How selective a literal is likely to be: ASCII digits and spaces count half,
    other non-ASCII characters double (``©`` says more than ``19``)."""
    return sum(0.5 if chr(cp) in "0123456789 " else 1.0 if cp < 128 else 2.0
               for cp, _ in factor)


def _score(alternatives: frozenset[Factor]) -> tuple[float, int]:
    """The most selective shortest literal first (fewer documents pass), then fewer
    alternatives."""
    return (min(_weight(f) for f in alternatives), -len(alternatives))


def _best(candidates: list[frozenset[Factor]]) -> frozenset[Factor] | None:
    return max(candidates, key=_score) if candidates else None


def _required(items: list, icase: bool) -> list[frozenset[Factor]]:
    """Sets of literals such that every match of ``items`` contains one of each set."""
    out: list[frozenset[Factor]] = []
    run: list[tuple[int, bool]] = []

    def flush() -> None:
        if run:
            out.append(frozenset([tuple(run)]))
            run.clear()

    for op, av in items:
        if op is _C.LITERAL:
            run.append((av, icase))
            continue
        flush()  # anything else ends a run of literal characters
        if op is _C.SUBPATTERN:
            _group, add, remove, sub = av
            inner = (icase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
            out.extend(_required(list(sub), inner))
        elif op is _C.BRANCH:
            alternatives = [_best(_required(list(branch), icase)) for branch in av[1]]
            if alternatives and all(a is not None for a in alternatives):
                out.append(frozenset().union(*alternatives))  # type: ignore[arg-type]
        elif op in _REPEATS and av[0] >= 1:
            out.extend(_required(list(av[2]), icase))
        elif _ATOMIC is not None and op is _ATOMIC:
            out.extend(_required(list(av), icase))
        # classes, anchors, optional parts, back-references: no literal required
    flush()
    return out


#: escapes that Python reads as a literal character but Rust as an assertion: ``\<``,
#: ``\>`` (word start/end) and ``\b{...}``/``\B{...}`` (``\b{start}``, ...)
_RUST_ONLY_ESCAPE = re.compile(r"\\(?:[<>]|[bB]\{)")


def _parse(pattern: str):  # type: ignore[no-untyped-def]
    """Python's syntax tree of ``pattern``, or None where the pattern may mean something
    else to the Rust engine that runs it: Python parse errors, ``FutureWarning`` syntax
    (``[[:alpha:]]``, nested sets, ``--``/``&&``/``~~`` in a set: literals to Python,
    classes to Rust) and the Rust-only escapes above. None means "no pre-filter", which
    is always exact."""
    if _RUST_ONLY_ESCAPE.search(pattern.replace("\\\\", "")):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return _P.parse(pattern)
        except (re.error, RecursionError, OverflowError, Warning):
            return None


def required_literals(pattern: str) -> frozenset[Factor] | None:
    """The best set of literals one of which every match of ``pattern`` contains."""
    parsed = _parse(pattern)
    if parsed is None:
        return None
    flags = parsed.state.flags
    if flags & re.VERBOSE:
        return None
    return _best(_required(list(parsed), bool(flags & re.IGNORECASE)))


def _rust_literal(factor: Factor) -> str:
    """A literal spelled as Rust-regex ``\\x{..}`` escapes, grouped by case flag."""
    out: list[str] = []
    i = 0
    while i < len(factor):
        icase = factor[i][1]
        j = i
        while j < len(factor) and factor[j][1] == icase:
            j += 1
        body = "".join(f"\\x{{{cp:x}}}" for cp, _ in factor[i:j])
        out.append(f"(?{'' if icase else '-'}i:{body})")
        i = j
    return "".join(out)


@lru_cache(maxsize=1024)
def leads_with_optional(pattern: str) -> bool:
    """Whether a match of ``pattern`` may start with an optional part (``(?:please )?``):
    such patterns get no literal fast path from the Rust engine itself and are the slow
    ones; a pattern starting with a literal (or alternation) is about as fast as its
    pre-filter."""
    parsed = _parse(pattern)
    if parsed is None:
        return False
    for op, av in parsed:
        if op is _C.AT:
            continue
        return op in _REPEATS and av[0] == 0
    return False


@lru_cache(maxsize=1024)
def prefilter(pattern: str) -> str | None:
    """A Rust regex of literals that every document matching ``pattern`` matches, or None."""
    literals = required_literals(pattern)
    if not literals:
        return None
    return "(?:" + "|".join(sorted(_rust_literal(f) for f in literals)) + ")"
