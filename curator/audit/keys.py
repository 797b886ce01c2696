"""The audit's multiset keys: a document's id as a key (:func:`id_key`), a record's
containment key (:func:`row_keys`), a batch at a time (:class:`Keys`)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson
import polars as pl

from curator.corpus.records import RecordSpec

#: how containment keys are made by polars hashes (recorded in each scan: keys of two
#: schemes never meet; :attr:`Keys.scheme`)
KEY_SCHEME = f"polars {pl.__version__} hash(0) per value | sha256 canonical json"
#: the characters orjson escapes in a string, as a polars (Rust) regex (checked against
#: orjson in the tests): an id without them is ``'"' + id + '"'`` in canonical JSON
JSON_ESCAPED = r'["\\\x00-\x1f]'
_ABSENT = object()


def id_key(value: Any) -> str:
    """An id as a multiset key: its canonical JSON (``"a"`` and ``1`` stay apart)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def id_keys(values: list[Any]) -> pl.Series:
    """Ids as :func:`id_key` strings. A string id that orjson writes without escapes is
    ``'"' + id + '"'`` (one polars expression for a batch of them)."""
    if only(values, str):
        ids = pl.DataFrame({"v": values}, schema={"v": pl.String})
        if not ids["v"].str.contains(JSON_ESCAPED).any():
            return ids.select(pl.concat_str(pl.lit('"'), "v", pl.lit('"'))).to_series()
    return pl.Series(list(map(id_key, values)), dtype=pl.String)


def row_key(record: dict[str, Any], fields: tuple[str, ...],
            spec: RecordSpec | None = None) -> str | None:
    """The containment key of one record, by the exact (per-record) rule: see
    :func:`row_keys`, which gives the same key for a batch (``None`` when the record
    lacks one of ``fields``)."""
    acc = Keys(fields, spec)
    acc.add([record])
    return None if acc.missing else next(iter(acc.result()))


def row_keys(records: Sequence[dict[str, Any]], fields: tuple[str, ...],
             spec: RecordSpec | None = None) -> tuple[Counter[str], int]:
    """The multiset of the records' containment keys, and how many records lack a field.

    When the comparison fields are the id and the text field (``spec``'s, in either
    order), a record whose id and text are strings is keyed by its corpus-fingerprint
    row digest (:mod:`curator.corpus.fingerprint`:
    ``sha256(f"{id}\\0{sha256hex(text)}")``), its first 16 bytes as 32 hex digits: the
    scan computes that digest once per document for the fingerprint and the key. With
    other comparison fields, a record whose values are all strings is keyed by the
    64-bit polars hash (seed 0) of each value, as ``"<h_id>:<h_text>"``, computed a batch
    at a time. Any other record is keyed by the sha256 of the canonical JSON array of its
    values (compact, keys sorted, UTF-8 unescaped, written with orjson; 64 hex digits,
    so the kinds never meet). Keys are compared within one run only, never persisted
    beyond its work dir: polars' hash is stable within one polars version (each scan
    records its scheme, :attr:`Keys.scheme`, and :func:`curator.audit.scan.load_scans`
    refuses to mix two). Two different rows share a polars key only if every value that
    differs collides: about 2**-64 per pair of rows (a text changed under the same id); a
    digest key, about 2**-128 per pair; a collision could only hide a missing row.
    """
    acc = Keys(fields, spec)
    acc.add(records)
    return Counter(acc.result()), acc.missing


def only(values: list[Any], kind: type) -> bool:
    """Every value is exactly of type ``kind`` (C-speed; True when there are none)."""
    return set(map(type, values)) <= {kind}


def row_digests(ids: list[str], texts: list[str]) -> list[bytes]:
    """Each (string) id and text's corpus-fingerprint row digest:
    ``sha256(f"{id}\\0{sha256hex(text)}")`` (:mod:`curator.corpus.fingerprint`)."""
    sha = hashlib.sha256
    return [sha(f"{i}\0{sha(t.encode('utf-8', 'surrogatepass')).hexdigest()}"
                .encode("utf-8", "surrogatepass")).digest()
            for i, t in zip(ids, texts, strict=True)]


class Keys:
    """A multiset of containment keys (:func:`row_keys`), added a batch at a time; each
    batch's keys are kept per row (null: the row lacks a field), in the rows' order."""

    def __init__(self, fields: tuple[str, ...], spec: RecordSpec | None = None) -> None:
        self.fields = fields
        self.parts: list[pl.Series] = []  # each batch's keys, per row
        self.missing = 0  # rows lacking a field
        #: the id's and the text's places in ``fields`` when they are the two fields:
        #: string rows are keyed by their row digest
        self.digest_at: tuple[int, int] | None = None
        if spec is not None and spec.id_field and len(fields) == 2 \
                and spec.id_field != spec.text_field \
                and set(fields) == {spec.id_field, spec.text_field}:
            self.digest_at = (fields.index(spec.id_field), fields.index(spec.text_field))
        #: how the keys are made (recorded in each scan: keys of two schemes never meet)
        self.scheme = KEY_SCHEME if self.digest_at is None else \
            f"sha256 row digest of {list(fields)}[:16] | sha256 canonical json"
        #: the last batch's row digests, when every row was keyed by one
        self.digests: list[bytes] | None = None

    def add(self, records: Sequence[dict[str, Any]],
            known: dict[str | None, list[str]] | None = None) -> pl.Series:
        """The records' keys, per record (null where one lacks a field). ``known``: the
        fields whose values were taken already and are all strings."""
        known = known or {}
        cols, plain = [], True
        for f in self.fields:
            col = known.get(f)
            if col is None:
                col = [r.get(f, _ABSENT) for r in records]
                plain = plain and only(col, str)
            cols.append(col)
        self.digests = None
        if plain:
            keys = self._hash(cols, keep=True)
        else:
            out: list[str | None] = [None] * len(records)
            plain_cols: list[list[str]] = [[] for _ in self.fields]
            at = []  # the plain rows' places
            for i, row in enumerate(zip(*cols, strict=True)):
                if any(v is _ABSENT for v in row):
                    self.missing += 1
                elif all(type(v) is str for v in row):
                    at.append(i)
                    for col, v in zip(plain_cols, row, strict=True):
                        col.append(v)
                else:
                    out[i] = hashlib.sha256(orjson.dumps(
                        list(row), option=orjson.OPT_SORT_KEYS)).hexdigest()
            for i, key in zip(at, self._hash(plain_cols).to_list(), strict=True):
                out[i] = key
            keys = pl.Series(out, dtype=pl.String)
        self.parts.append(keys)
        return keys

    def _hash(self, cols: list[list[str]], keep: bool = False) -> pl.Series:
        if not cols or not cols[0]:
            return pl.Series([], dtype=pl.String)
        if self.digest_at is not None:
            digests = row_digests(cols[self.digest_at[0]], cols[self.digest_at[1]])
            if keep:
                self.digests = digests
            return pl.Series([d[:16] for d in digests], dtype=pl.Binary).bin.encode("hex")
        names = [f"c{i}" for i in range(len(cols))]
        frame = pl.DataFrame(dict(zip(names, cols, strict=True)),
                             schema=dict.fromkeys(names, pl.String))
        return frame.select(pl.concat_str([pl.col(n).hash(0) for n in names],
                                          separator=":")).to_series()

    def result(self) -> dict[str, int]:
        return value_counts(pl.concat(self.parts) if self.parts
                            else pl.Series([], dtype=pl.String))


def value_counts(values: pl.Series) -> dict[str, int]:
    """The multiset of a string column's non-null values."""
    counts = pl.DataFrame({"k": values.drop_nulls()}).group_by("k").len()
    return dict(zip(counts["k"].to_list(), counts["len"].to_list(), strict=True))
