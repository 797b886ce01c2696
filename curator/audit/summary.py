"""What a scan finds in one file (:class:`FileScan`), and how a batch of its lines is
parsed (:func:`parse_batch`) and summarised (:class:`Summary`).

Faults (only the first per file, with the byte offset of the line):
``truncated final record`` (the file does not end in a newline), ``unparsable record``
(not JSON, or not UTF-8), ``non-object record``, ``not readable`` (an I/O or
decompression error; offset 0), ``not a file``. Records are classified with the corpus
kernel's rules (:func:`curator.corpus.records.classify_record`).

**How it is fast** (docs/benchmarks.md section 5). Lines are parsed with orjson, the
same parser as always, so what is a record, a fault or a rejection cannot change; but
in batches (:data:`curator.audit.unit.BATCH_LINES` lines): a batch whose lines all
parse to objects is parsed by one ``map`` (the per-line path with offsets runs only for
a batch holding a bad line), and what the checks need is taken from the batch's records
column by column (sources, ids, texts), with the exact per-record rules only for the
records that are not plain (a non-string id or source, a record that is not a
document). The corpus fingerprint is the profile's definition
(:mod:`curator.corpus.fingerprint`) summed per batch. Containment keys
(:func:`curator.audit.keys.row_keys`): with the id and the text as comparison fields,
the fingerprint's row digest (computed once for both); otherwise a batch's comparison
values hashed with polars.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from curator.audit.keys import Keys, id_key, id_keys, only, value_counts
from curator.corpus.fingerprint import MOD, RowDigest
from curator.corpus.records import (
    MISSING_SOURCE,
    RecordSpec,
    Rejection,
    classify_record,
    source_of,
)

TRUNCATED = "truncated final record"
UNPARSABLE = "unparsable record"
NON_OBJECT = "non-object record"
NOT_READABLE = "not readable"
NOT_A_FILE = "not a file"


@dataclass
class FileScan:
    """What one file holds, as the checks need it."""

    path: str
    bytes: int = 0
    sha256: str | None = None
    rows: int = 0
    bad_records: int = 0
    fault: dict[str, Any] | None = None  # {kind, offset}: the first fault
    per_source: dict[str, int] = field(default_factory=dict)
    documents: int = 0
    rejections: dict[str, int] = field(default_factory=dict)  # kernel reasons
    ids: dict[str, int] = field(default_factory=dict)  # documents' ids (id_key form)
    keys: dict[str, int] = field(default_factory=dict)  # containment keys
    missing_keys: int = 0
    removed_by: dict[str, int] = field(default_factory=dict)  # a rejected file's gates
    removed_ids: dict[str, int] = field(default_factory=dict)  # with their gate: id|gate
    failed: dict[str, int] = field(default_factory=dict)  # a rejected file's reasons
    #: the corpus fingerprint's partial sum of its documents (the profile's definition)
    fingerprint: dict[str, Any] | None = None
    key_scheme: str | None = None  # how `keys` were made (keys.Keys.scheme), when there are any

    def to_json(self) -> dict[str, Any]:
        """The fields, the small maps' keys sorted (the large multisets are not: their
        order is never read)."""
        out = dict(self.__dict__)
        for name in ("fault", "per_source", "rejections", "removed_by", "failed"):
            if out[name] is not None:
                out[name] = dict(sorted(out[name].items()))
        return out


def bad(scan: FileScan, kind: str, offset: int, reason: str) -> None:
    """A bad line at ``offset``: counted with its reason; the file's fault if it is the
    first (a truncation after it gives way)."""
    scan.bad_records += 1
    scan.rejections[reason] = scan.rejections.get(reason, 0) + 1
    if scan.fault is None or (scan.fault["kind"] == TRUNCATED and scan.fault["offset"] > offset):
        scan.fault = {"kind": kind, "offset": offset}


def rejected_line(scan: FileScan, obj: dict[str, Any]) -> None:
    """A line of the filter's ``rejected/``: a removed record (``removed_by``) or a line
    that was not a record (``failed``)."""
    gate, reason = obj.get("removed_by"), obj.get("failed")
    if isinstance(gate, str):
        scan.removed_by[gate] = scan.removed_by.get(gate, 0) + 1
        key = f"{id_key(obj.get('id'))}|{gate}"
        scan.removed_ids[key] = scan.removed_ids.get(key, 0) + 1
    elif isinstance(reason, str):
        scan.failed[reason] = scan.failed.get(reason, 0) + 1
    else:
        scan.failed["__unknown__"] = scan.failed.get("__unknown__", 0) + 1


def parse_batch(scan: FileScan, lines: Sequence[bytes | memoryview],
                offsets: Callable[[], list[int]], exact: bool) -> list[dict[str, Any]]:
    """The objects of a batch of rows (non-blank lines; ``offsets()``: their byte
    offsets, asked for only when a row is bad); the rows counted and the bad ones
    recorded (:func:`bad`)."""
    scan.rows += len(lines)
    if not exact:
        try:
            objs = list(map(orjson.loads, lines))
        except orjson.JSONDecodeError:
            pass
        else:
            if only(objs, dict):
                return objs
    objs = []
    for line, offset in zip(lines, offsets(), strict=True):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad(scan, UNPARSABLE, offset, "unparsable_line")
            continue
        if not isinstance(obj, dict):
            bad(scan, NON_OBJECT, offset, "not_an_object")
            continue
        objs.append(obj)
    return objs


def _values(objs: list[dict[str, Any]], name: str) -> list[Any]:
    """Each object's ``name`` (None where it has none), as ``obj.get(name)``."""
    try:
        return list(map(itemgetter(name), objs))
    except KeyError:
        return [obj.get(name) for obj in objs]


def _big_sum(digests: list[bytes]) -> int:
    """The sum of 32-byte digests read as big-endian integers (``int.from_bytes``): the
    sums of their eight 32-bit limbs (numpy; no overflow below 2**32 digests) shifted
    into place."""
    if not digests:
        return 0
    limbs = np.frombuffer(b"".join(digests), dtype=">u4").reshape(-1, 8).sum(
        axis=0, dtype=np.uint64)
    return sum(int(limb) << (32 * (7 - i)) for i, limb in enumerate(limbs))


def _count(values: list[Any]) -> Counter[Any] | None:
    """``Counter(values)``, or None when a value cannot be hashed (a list, an object)."""
    try:
        return Counter(values)
    except TypeError:
        return None


class Summary:
    """What the checks need of a file's records, added a batch at a time."""

    def __init__(self, scan: FileScan, spec: RecordSpec, want_ids: bool,
                 fields: tuple[str, ...], fingerprint: bool) -> None:
        self.scan, self.spec, self.want_ids = scan, spec, want_ids
        self.sources: Counter[str] = Counter()
        self.rejections: Counter[str] = Counter()
        self.id_values: list[Any] = []  # the documents' ids, as parsed
        self.keys = Keys(fields, spec) if fields else None
        self.digest = RowDigest() if fingerprint else None

    def add(self, objs: list[dict[str, Any]]) -> None:
        """A batch's records."""
        if not objs:
            return
        spec = self.spec
        idf = spec.id_field
        self._sources(objs)
        texts = _values(objs, spec.text_field)
        ids = _values(objs, idf) if idf else None
        plain = only(texts, str)  # every text a string
        if self.keys is not None:  # the columns taken, when all are strings
            known: dict[str | None, list[str]] = {spec.text_field: texts} if plain else {}
            if ids is not None and only(ids, str):
                known[idf] = ids
            self.keys.add(objs, known)
        mask = None  # which records are documents, when not all are
        if not spec.require_id and plain and all(texts) and not any(map(str.isspace, texts)):
            docs = objs  # every record a document (classify_record's checks, by column)
        else:  # the kernel's rule, record by record
            docs, kept, mask = [], [], []
            for obj, text in zip(objs, texts, strict=True):
                record = classify_record(obj, spec)
                if type(record) is Rejection:
                    self.rejections[record.reason] += 1
                    mask.append(False)
                else:
                    docs.append(obj)
                    kept.append(text)
                    mask.append(True)
            texts = kept
        self.scan.documents += len(docs)
        if not docs:
            return
        if mask is not None and ids is not None:
            ids = list(compress(ids, mask))
        if self.digest is not None:
            digests = None if self.keys is None else self.keys.digests
            if digests is None:
                self._fingerprint(ids, texts)
            else:  # the keys' row digests are the fingerprint's (every id a string)
                self._sum(digests if mask is None else list(compress(digests, mask)))
        if self.want_ids:
            self.id_values += ids if ids is not None else [None] * len(docs)

    def _sources(self, objs: list[dict[str, Any]]) -> None:
        """Counts the records' sources."""
        sf = self.spec.source_field
        if sf is None:
            self.sources[MISSING_SOURCE] += len(objs)
            return
        values = _values(objs, sf)
        counts = _count(values)
        if counts is not None and all(v is None or type(v) is str for v in counts):
            for v, n in counts.items():  # (1, 1.0 and True would merge: str(v) differs)
                self.sources[MISSING_SOURCE if v is None else v] += n
            return
        self.sources.update(source_of(obj, sf) for obj in objs)

    def _fingerprint(self, ids: list[Any] | None, texts: list[str]) -> None:
        """:class:`curator.corpus.fingerprint.RowDigest`'s sum over the documents:
        ``sha256(f"{id}\\0{sha256hex(text)}")`` (``sha256hex(text)`` without an id). (A
        loop: ``map`` chains over the batch measured slower, the encoded texts leaving
        the cache.)"""
        sha, from_bytes = hashlib.sha256, int.from_bytes
        total = 0
        if ids is None:
            for text in texts:
                key = sha(text.encode("utf-8", "surrogatepass")).hexdigest()
                total += from_bytes(sha(key.encode()).digest(), "big")
        else:
            for doc_id, text in zip(ids, texts, strict=True):
                key = sha(text.encode("utf-8", "surrogatepass")).hexdigest()
                if doc_id is not None:
                    key = f"{doc_id!s}\0{key}"
                total += from_bytes(sha(key.encode("utf-8", "surrogatepass")).digest(), "big")
        assert self.digest is not None
        self.digest.count += len(texts)
        self.digest.total = (self.digest.total + total) % MOD

    def _sum(self, digests: list[bytes]) -> None:
        """The fingerprint's sum over documents whose row digests are known."""
        assert self.digest is not None
        self.digest.count += len(digests)
        self.digest.total = (self.digest.total + _big_sum(digests)) % MOD

    def finish(self) -> None:
        """Fills the scan."""
        scan = self.scan
        scan.per_source = dict(sorted(self.sources.items()))
        for reason, n in self.rejections.items():
            scan.rejections[reason] = scan.rejections.get(reason, 0) + n
        if self.want_ids:
            scan.ids = value_counts(id_keys(self.id_values))
        if self.keys is not None:
            scan.key_scheme, scan.missing_keys = self.keys.scheme, self.keys.missing
            scan.keys = self.keys.result()
        if self.digest is not None:
            scan.fingerprint = self.digest.to_json()


def scan_path(work_dir: str | Path, path: str) -> Path:
    """Where a unit writes the scan of ``path``."""
    name = hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]
    return Path(work_dir) / "scan" / f"{name}.json"
