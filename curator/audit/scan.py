"""The audit's one engine pass: every file (a target shard, a reference file, a rejected
file) is one unit, read once, and what the checks need is written to the work dir.

A unit's result (``<work>/scan/<digest of the path>.json``, atomically) holds the file's
size and sha256 (of the bytes on disk; only for the files whose digest a check reads,
the target shards), its rows (non-blank lines), the first fault with its byte offset,
per-source counts, and, when asked for, the multiset of its documents' ids and of its
containment keys; a rejected file adds the gate (``removed_by``) or reason (``failed``)
of each line. The driver merges the units' results from disk (:func:`load_scans`), so a
resumed run reads what finished units wrote.

Faults (only the first per file, with the byte offset of the line):
``truncated final record`` (the file does not end in a newline), ``unparsable record``
(not JSON, or not UTF-8), ``non-object record``, ``not readable`` (an I/O or
decompression error; offset 0). Lines are split as the corpus kernel splits them
(:mod:`curator.corpus.reading`: on ``\\n`` only, a leading UTF-8 BOM skipped, blank
lines not rows); records are classified with its rules
(:func:`curator.corpus.records.classify_record`).

**How it reads.** A local uncompressed file :data:`CHUNK_BYTES` at a time, never whole,
into one buffer reused for every chunk (a compressed file or an object is read whole):
each chunk's whole lines are indexed
(:func:`curator.audit._lines.line_blocks`) and parsed where they lie, a line split across
chunks joined first; the sha256 is of the chunks as they come. An I/O error midway makes
the file ``not readable`` with nothing of it counted.

**How it is fast** (docs/benchmarks.md section 5). Lines are parsed with orjson, the
same parser as always, so what is a record, a fault or a rejection cannot change; but
in batches of :data:`BATCH_LINES` lines: a batch whose lines all parse to objects is
parsed by one ``map`` (the per-line path with offsets runs only for a batch holding a
bad line), and what the checks need is taken from the batch's records column by column
(sources, ids, texts), with the exact per-record rules only for the records that are
not plain (a non-string id or source, a record that is not a document). The corpus
fingerprint is the profile's definition (:mod:`curator.corpus.fingerprint`) summed per
batch. Containment keys (:func:`row_keys`): with the id and the text as comparison
fields, the fingerprint's row digest (computed once for both); otherwise a batch's
comparison values hashed with polars.

**Target lines reused from the reference** (docs/audit.md). When the stage knows the
run's reference files (keyed or fingerprinted files that are neither target nor
rejected), a reference unit also writes its documents' lines table (each document
line's two hashes, :mod:`curator.audit._lines`, with its source, id and key), and a
target unit does not parse: it reads, digests and hashes its lines (``deferred``).
:func:`load_scans` completes the targets with one join of their lines with the tables;
a target with a line that is no reference document's is scanned in full there, with
:func:`scan_file`, so the result is always what the full scan gives. The completed
targets' and the references' ids and keys are rows of the joined tables
(:class:`curator.audit.multisets.Rows`), which the checks net row by row.
"""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, compress
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from curator.audit._lines import LINE_SCHEME, Block, line_blocks
from curator.audit.multisets import Multiset, Rows, counts
from curator.corpus.fingerprint import MOD, RowDigest
from curator.corpus.formats import is_compressed
from curator.corpus.reading import UTF8_BOM, decompress
from curator.corpus.records import (
    MISSING_SOURCE,
    RecordSpec,
    Rejection,
    classify_record,
    source_of,
)
from curator.errors import CuratorError
from curator.io import storage
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

TRUNCATED = "truncated final record"
UNPARSABLE = "unparsable record"
NON_OBJECT = "non-object record"
NOT_READABLE = "not readable"
NOT_A_FILE = "not a file"

#: lines parsed and summarised at a time (bounds the parsed records held in memory)
BATCH_LINES = 8192
#: bytes a unit reads of a local file at a time (its lines indexed and parsed as they come)
CHUNK_BYTES = 8 << 20
#: how containment keys are made by polars hashes (recorded in each scan: keys of two
#: schemes never meet; :attr:`_Keys.scheme`)
KEY_SCHEME = f"polars {pl.__version__} hash(0) per value | sha256 canonical json"
#: the characters orjson escapes in a string, as a polars (Rust) regex (checked against
#: orjson in the tests): an id without them is ``'"' + id + '"'`` in canonical JSON
_JSON_ESCAPED = r'["\\\x00-\x1f]'
_ABSENT = object()


def id_key(value: Any) -> str:
    """An id as a multiset key: its canonical JSON (``"a"`` and ``1`` stay apart)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def row_key(record: dict[str, Any], fields: tuple[str, ...],
            spec: RecordSpec | None = None) -> str | None:
    """The containment key of one record, by the exact (per-record) rule: see
    :func:`row_keys`, which gives the same key for a batch (``None`` when the record
    lacks one of ``fields``)."""
    acc = _Keys(fields, spec)
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
    records its scheme, :attr:`_Keys.scheme`, and :func:`load_scans` refuses to mix
    two). Two different rows share a polars key only if every value that differs
    collides: about 2**-64 per pair of rows (a text changed under the same id); a digest
    key, about 2**-128 per pair; a collision could only hide a missing row.
    """
    acc = _Keys(fields, spec)
    acc.add(records)
    return Counter(acc.result()), acc.missing


def _only(values: list[Any], kind: type) -> bool:
    """Every value is exactly of type ``kind`` (C-speed; True when there are none)."""
    return set(map(type, values)) <= {kind}


def row_digests(ids: list[str], texts: list[str]) -> list[bytes]:
    """Each (string) id and text's corpus-fingerprint row digest:
    ``sha256(f"{id}\\0{sha256hex(text)}")`` (:mod:`curator.corpus.fingerprint`)."""
    sha = hashlib.sha256
    return [sha(f"{i}\0{sha(t.encode('utf-8', 'surrogatepass')).hexdigest()}"
                .encode("utf-8", "surrogatepass")).digest()
            for i, t in zip(ids, texts, strict=True)]


class _Keys:
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
                plain = plain and _only(col, str)
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
        return _counts(pl.concat(self.parts) if self.parts else pl.Series([], dtype=pl.String))


def _counts(values: pl.Series) -> dict[str, int]:
    """The multiset of a string column's non-null values."""
    counts = pl.DataFrame({"k": values.drop_nulls()}).group_by("k").len()
    return dict(zip(counts["k"].to_list(), counts["len"].to_list(), strict=True))


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
    key_scheme: str | None = None  # how `keys` were made (_Keys.scheme), when there are any
    #: a reference file: its documents' lines table was written (:data:`LINE_SCHEME`)
    line_table: str | None = None
    #: a target file read without parsing (its lines' hashes written): what
    #: :func:`load_scans` needs to complete it from the reference's lines table
    deferred: dict[str, Any] | None = None
    #: the multisets (``ids``, ``keys``) a reference unit left in its lines table
    #: instead of writing them here (``ids`` and ``keys`` then empty): :func:`load_scans`
    #: takes them from the table, as its rows (``frames``)
    in_table: list[str] = field(default_factory=list)
    #: ``ids`` and ``keys`` as :mod:`curator.audit.multisets` (frames or rows of the
    #: lines tables), when :func:`load_scans` has them already (the same multisets: the
    #: checks take these where there are any); never written
    frames: dict[str, Multiset] = field(default_factory=dict, repr=False, compare=False)

    def counts(self, name: str) -> dict[str, int]:
        """The multiset ``ids`` or ``keys`` as a map, wherever it is held (rows of the
        lines tables from :func:`load_scans`, or the map the unit wrote)."""
        held = self.frames.get(name)
        return getattr(self, name) if held is None else counts(held)

    def to_json(self) -> dict[str, Any]:
        """The fields, the small maps' keys sorted (the large multisets are not: their
        order is never read)."""
        out = dict(self.__dict__)
        del out["frames"]
        for name in ("fault", "per_source", "rejections", "removed_by", "failed"):
            if out[name] is not None:
                out[name] = dict(sorted(out[name].items()))
        return out


def scan_file(path: str, spec: RecordSpec, *, want_ids: bool,
              comparison_fields: tuple[str, ...] = (), rejected: bool = False,
              fingerprint: bool = False, digest: bool = True, exact: bool = False
              ) -> FileScan:
    """Read one file once (see the module docstring). ``digest``: compute the sha256 of
    its bytes (a target shard's; no check reads another file's). ``exact``: parse line
    by line with offsets even where a whole batch parses (the tests compare the two)."""
    return _scan(path, spec, want_ids=want_ids, comparison_fields=comparison_fields,
                 rejected=rejected, fingerprint=fingerprint, digest=digest, exact=exact)[0]


def _scan(path: str, spec: RecordSpec, *, want_ids: bool,
          comparison_fields: tuple[str, ...] = (), rejected: bool = False,
          fingerprint: bool = False, digest: bool = True, exact: bool = False,
          table: bool = False, defer: bool = False) -> tuple[FileScan, pl.DataFrame | None]:
    """:func:`scan_file`, and: ``table``, the documents' lines table (a reference
    file's: each document line's hashes, :func:`curator.audit._lines.line_index`, and
    its source, id and key); ``defer``, no parse: the file's lines are hashed only (a
    target file's: :func:`load_scans` completes the scan from the reference's tables),
    the hashes of its rows returned."""
    scan = FileScan(path=path)
    if not _is_file(path, scan):
        return scan, None
    chunks = _chunks(path, scan, digest)
    try:
        first = next(chunks, b"")  # the whole file, or CHUNK_BYTES of it: a BOM is in it
        start = len(UTF8_BOM) if first.startswith(UTF8_BOM) else 0
        blocks = line_blocks(chain([first], chunks), start, hashed=defer or table)
        if defer:
            return _deferred(scan, blocks, spec, want_ids, comparison_fields)
        acc = None if rejected else _Summary(scan, spec, want_ids, comparison_fields,
                                             fingerprint, table)
        for block in _through(scan, blocks):
            index = block.index
            view = memoryview(block.data)
            numbers = np.flatnonzero(~index.blank)  # the rows (non-blank lines)
            for i in range(0, len(numbers), BATCH_LINES):
                at = numbers[i:i + BATCH_LINES]
                firsts = index.starts[at].tolist()
                batch = list(map(view.__getitem__, map(slice, firsts, index.ends[at].tolist())))
                records, good = _parse(scan, batch, partial(_shift, firsts, block.offset),
                                       exact)
                if acc is None:
                    for obj in records:
                        _rejected_line(scan, obj)
                    continue
                hashes = None
                if table:  # the records' lines' hashes
                    assert index.h0 is not None and index.h1 is not None
                    lines = at if good is None else at[np.array(good, np.int64)]
                    hashes = (index.h0[lines], index.h1[lines])
                acc.add(records, hashes)
        return scan, None if acc is None else acc.finish()
    except _Unreadable as exc:
        out = FileScan(path=path)  # nothing of a file that could not be read is counted
        out.fault = {"kind": NOT_READABLE, "offset": 0, "detail": str(exc)}
        return out, None


def _is_file(path: str, scan: FileScan) -> bool:
    """Whether ``path`` names a file (a local file or an object); if not, the fault."""
    try:
        if storage.is_file_at(path):
            return True
        scan.fault = {"kind": NOT_A_FILE, "offset": 0}
    except (OSError, ValueError) as exc:
        scan.fault = {"kind": NOT_READABLE, "offset": 0, "detail": f"{type(exc).__name__}: {exc}"}
    return False


class _Unreadable(Exception):
    """Reading (or decompressing) a file failed: raised from :func:`_chunks` only, so
    an error in what handles the bytes is never taken for an unreadable file."""


def _chunks(path: str, scan: FileScan, digest: bool) -> Iterator[bytes | bytearray]:
    """The file's bytes (decompressed), :data:`CHUNK_BYTES` at a time for a local
    uncompressed file (one ``bytearray``, overwritten by the next chunk: the caller is
    done with a chunk when it asks for the next), whole for a compressed file or an
    object (one GET); its size and (with ``digest``) sha256, of the bytes on disk, go
    to ``scan`` once all is read."""
    try:
        if is_compressed(path) or storage.is_remote(path):
            yield _read(path, scan, digest)
            return
        h = hashlib.sha256() if digest else None
        # one buffer for every chunk: a fresh 8 MB per read was faulted in page by page
        # (about 0.2 s of system time per 1,000 MB)
        buf = bytearray(max(CHUNK_BYTES, len(UTF8_BOM)))  # (a BOM is in the first, whole)
        with open(path, "rb") as f:
            while n := f.readinto(buf):
                chunk = buf if n == len(buf) else buf[:n]
                scan.bytes += n
                if h is not None:
                    h.update(chunk)
                yield chunk
        if h is not None:
            scan.sha256 = "sha256:" + h.hexdigest()
    except (OSError, EOFError, ValueError) as exc:
        raise _Unreadable(f"{type(exc).__name__}: {exc}") from exc


def _shift(offsets: list[int], by: int) -> list[int]:
    return [o + by for o in offsets]


def _through(scan: FileScan, blocks: Iterator[Block]) -> Iterator[Block]:
    """The blocks; once the last is handled, the file's truncation fault (the last
    block holds the final line; a block before it means a newline)."""
    block, count = None, 0
    for block in blocks:
        count += 1
        yield block
    assert block is not None
    _truncated(scan, block, count > 1)


def _truncated(scan: FileScan, final: Block, newline: bool) -> None:
    """The fault of a file that does not end in a newline (``final``: the block of its
    final line; ``newline``: the file has one): a truncated final record at that line
    (0 without a newline), unless a bad record came before it (a bad final line is
    reported as the truncation). A file of a BOM alone does not end in a newline."""
    if final.data or (final.offset and not newline):
        offset = final.offset if newline else 0
        if scan.fault is None or scan.fault["offset"] >= offset:
            scan.fault = {"kind": TRUNCATED, "offset": offset}


def _deferred(scan: FileScan, blocks: Iterator[Block], spec: RecordSpec, want_ids: bool,
              comparison_fields: tuple[str, ...]) -> tuple[FileScan, pl.DataFrame]:
    """A target's scan without parsing: its rows' hashes, for :func:`load_scans`."""
    h0s, h1s = [], []
    for block in _through(scan, blocks):
        rows = ~block.index.blank
        scan.rows += int(rows.sum())
        assert block.index.h0 is not None and block.index.h1 is not None
        h0s.append(block.index.h0[rows])
        h1s.append(block.index.h1[rows])
    scan.deferred = {"line_scheme": LINE_SCHEME, "want_ids": want_ids,
                     "comparison_fields": list(comparison_fields),
                     "key_scheme": _Keys(comparison_fields, spec).scheme
                     if comparison_fields else None,
                     "spec": _spec_json(spec)}
    return scan, pl.DataFrame({"h0": np.concatenate(h0s), "h1": np.concatenate(h1s)})


def _spec_json(spec: RecordSpec) -> dict[str, Any]:
    return {"text_field": spec.text_field, "id_field": spec.id_field,
            "source_field": spec.source_field, "metadata_fields": list(spec.metadata_fields),
            "require_id": spec.require_id}


def _read(path: str, scan: FileScan, digest: bool) -> bytes:
    """A compressed file's or an object's bytes, decompressed (read once, one GET for an
    object); its size and (with ``digest``) sha256, of the bytes on disk, go to ``scan``."""
    raw = storage.read_file(path)
    scan.bytes = len(raw)
    if digest:
        scan.sha256 = "sha256:" + hashlib.sha256(raw).hexdigest()
    return decompress(raw, path) if is_compressed(path) else raw


def _parse(scan: FileScan, lines: Sequence[bytes | memoryview],
           offsets: Callable[[], list[int]], exact: bool
           ) -> tuple[list[dict[str, Any]], list[int] | None]:
    """The objects of a batch of rows (non-blank lines; ``offsets()``: their byte
    offsets, asked for only when a row is bad), and their rows' places in the batch
    (None: every row is one); the rows counted and the bad ones recorded (:func:`_bad`)."""
    scan.rows += len(lines)
    if not exact:
        try:
            objs = list(map(orjson.loads, lines))
        except orjson.JSONDecodeError:
            pass
        else:
            if _only(objs, dict):
                return objs, None
    objs, good = [], []
    for j, (line, offset) in enumerate(zip(lines, offsets(), strict=True)):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            _bad(scan, UNPARSABLE, offset, "unparsable_line")
            continue
        if not isinstance(obj, dict):
            _bad(scan, NON_OBJECT, offset, "not_an_object")
            continue
        objs.append(obj)
        good.append(j)
    return objs, good


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


class _Summary:
    """What the checks need of a file's records, added a batch at a time; with ``table``,
    also each document's line, source, id and key (the lines table, :func:`_scan`)."""

    def __init__(self, scan: FileScan, spec: RecordSpec, want_ids: bool,
                 fields: tuple[str, ...], fingerprint: bool, table: bool = False) -> None:
        self.scan, self.spec, self.want_ids, self.table = scan, spec, want_ids, table
        self.sources: Counter[str] = Counter()
        self.rejections: Counter[str] = Counter()
        self.id_values: list[Any] = []  # the documents' ids, as parsed
        self.keys = _Keys(fields, spec) if fields else None
        self.digest = RowDigest() if fingerprint else None
        self.doc_hashes: list[np.ndarray] = []  # for a table: the documents' lines' h0, h1,
        self.doc_sources: list[str | None] = []  # sources (None: MISSING_SOURCE)
        self.doc_keys: list[pl.Series] = []  # and keys

    def add(self, objs: list[dict[str, Any]],
            hashes: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """A batch's records (``hashes``: their lines' h0 and h1, for a table)."""
        if not objs:
            return
        spec = self.spec
        idf = spec.id_field
        sources = self._sources(objs)
        texts = _values(objs, spec.text_field)
        ids = _values(objs, idf) if idf else None
        plain = _only(texts, str)  # every text a string
        if self.keys is None:
            keys = None
        else:  # the columns taken, when all are strings
            known: dict[str | None, list[str]] = {spec.text_field: texts} if plain else {}
            if ids is not None and _only(ids, str):
                known[idf] = ids
            keys = self.keys.add(objs, known)
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
        if hashes is not None:
            if mask is None:
                self.doc_hashes.append(np.stack(hashes))
                self.doc_sources += sources
            else:
                self.doc_hashes.append(np.stack(hashes)[:, np.array(mask, np.bool_)])
                self.doc_sources += compress(sources, mask)
                keys = None if keys is None else keys.filter(pl.Series(mask))
            if keys is not None:
                self.doc_keys.append(keys)

    def _sources(self, objs: list[dict[str, Any]]) -> list[str | None]:
        """Counts the records' sources; returns each one's (None: MISSING_SOURCE)."""
        sf = self.spec.source_field
        if sf is None:
            self.sources[MISSING_SOURCE] += len(objs)
            return [None] * len(objs)
        values = _values(objs, sf)
        counts = _count(values)
        if counts is not None and all(v is None or type(v) is str for v in counts):
            for v, n in counts.items():  # (1, 1.0 and True would merge: str(v) differs)
                self.sources[MISSING_SOURCE if v is None else v] += n
            return values
        values = [source_of(obj, sf) for obj in objs]
        self.sources.update(values)
        return values

    def _id_keys(self) -> pl.Series:
        """The documents' ids as :func:`id_key` strings. A string id that orjson writes
        without escapes is ``'"' + id + '"'``."""
        values = self.id_values
        if _only(values, str):
            ids = pl.DataFrame({"v": values}, schema={"v": pl.String})
            if not ids["v"].str.contains(_JSON_ESCAPED).any():
                return ids.select(pl.concat_str(pl.lit('"'), "v", pl.lit('"'))).to_series()
        return pl.Series(list(map(id_key, values)), dtype=pl.String)

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

    def finish(self) -> pl.DataFrame | None:
        """Fills the scan; returns the lines table (with ``table``)."""
        scan = self.scan
        scan.per_source = dict(sorted(self.sources.items()))
        for reason, n in self.rejections.items():
            scan.rejections[reason] = scan.rejections.get(reason, 0) + n
        ids = None
        # with a table, the multisets it holds are not written as maps (the driver
        # groups the table's columns): the ids always (they are the documents'), the
        # keys when every object is a document (the table's rows are the documents)
        table = self.table
        if self.want_ids:
            ids = self._id_keys()
            if table:
                scan.in_table.append("ids")
            else:
                scan.ids = _counts(ids)
        if self.keys is not None:
            scan.key_scheme, scan.missing_keys = self.keys.scheme, self.keys.missing
            if table and scan.documents + scan.bad_records == scan.rows:
                scan.in_table.append("keys")
            else:
                scan.keys = self.keys.result()
        if self.digest is not None:
            scan.fingerprint = self.digest.to_json()
        if not table:
            return None
        h0, h1 = np.concatenate(self.doc_hashes, axis=1) if self.doc_hashes else \
            np.zeros((2, 0), np.uint64)
        frame = pl.DataFrame({"h0": h0, "h1": h1}).with_columns(
            source=pl.Series(self.doc_sources, dtype=pl.String).fill_null(MISSING_SOURCE))
        if ids is not None:
            frame = frame.with_columns(id=ids)
        if self.keys is not None:
            frame = frame.with_columns(key=pl.concat(self.doc_keys) if self.doc_keys
                                       else pl.Series([], dtype=pl.String))
        scan.line_table = LINE_SCHEME
        return frame


def _bad(scan: FileScan, kind: str, offset: int, reason: str) -> None:
    scan.bad_records += 1
    scan.rejections[reason] = scan.rejections.get(reason, 0) + 1
    if scan.fault is None or (scan.fault["kind"] == TRUNCATED and scan.fault["offset"] > offset):
        scan.fault = {"kind": kind, "offset": offset}


def _rejected_line(scan: FileScan, obj: dict[str, Any]) -> None:
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


def scan_path(work_dir: str | Path, path: str) -> Path:
    name = hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]
    return Path(work_dir) / "scan" / f"{name}.json"


@dataclass
class ScanStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """One unit per file: :func:`scan_file`, its result written to the work dir."""

    work_dir: str
    spec: RecordSpec
    want_ids: bool
    comparison_fields: tuple[str, ...]
    keyed: frozenset[str]  # files whose containment keys are wanted (target, reference)
    rejected: frozenset[str]  # files in the filter's rejected dir
    fingerprinted: frozenset[str] = frozenset()  # files whose corpus fingerprint is wanted
    #: files whose sha256 a check reads (the target shards); None: every file
    digested: frozenset[str] | None = None
    name: str = "scan"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        rows = 0
        target = self.digested  # the target shards (their sha256 is checked)
        # the reference: keyed or fingerprinted, not a target or rejected file (none
        # known in integrity and digest modes without an approved policy)
        reference = (self.keyed | self.fingerprinted) - (target or frozenset()) - self.rejected
        for path in task.data:
            # a target shard is read without parsing when a reference will hold a lines
            # table to complete it from (load_scans); a reference file writes one
            defer = bool(reference) and target is not None and path in target \
                and path not in self.fingerprinted and path not in self.rejected
            scan, lines = _scan(path, self.spec, want_ids=self.want_ids,
                                comparison_fields=self.comparison_fields
                                if path in self.keyed else (),
                                rejected=path in self.rejected,
                                fingerprint=path in self.fingerprinted,
                                digest=target is None or path in target,
                                table=bool(target) and path in reference, defer=defer)
            out = scan_path(self.work_dir, path)
            if lines is not None:  # first: a scan on disk has its lines file
                write_atomic(lines_path(out), _ipc(lines))
            write_atomic(out, orjson.dumps(scan.to_json()))
            rows += scan.rows
        self.stat_update("rows", rows)
        self.stat_update("files", len(task.data))
        return FileGroupTask(data=list(task.data), _metadata={"rows": rows})


def lines_path(scan_json: Path) -> Path:
    """The lines file next to a scan's result: a reference's lines table, or a deferred
    target's line hashes (Arrow IPC)."""
    return scan_json.with_suffix(".lines.arrow")


def _ipc(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_ipc(buf)
    return buf.getvalue()


def load_scans(work_dir: str | Path, paths: list[str]) -> dict[str, FileScan]:
    """Every file's scan, from the units' results on disk; a deferred target's completed
    (:func:`complete`). Containment keys made two ways (a run resumed after a polars
    upgrade) are refused: their keys never meet."""
    out: dict[str, FileScan] = {}
    for path in paths:
        data = orjson.loads(scan_path(work_dir, path).read_bytes())
        out[path] = FileScan(**data)
    if any(s.deferred is not None or s.line_table is not None for s in out.values()):
        complete(work_dir, out)
    # a scan written before schemes were recorded has keys and no scheme
    schemes = {str(s.key_scheme) for s in out.values() if s.keys or s.key_scheme}
    if len(schemes) > 1:
        raise CuratorError("audit_scan_mixed",
                           f"the scans in {work_dir} made containment keys in {len(schemes)} "
                           f"ways ({sorted(schemes)}): rerun the audit without its checkpoint")
    return out


def complete(work_dir: str | Path, scans: dict[str, FileScan]) -> None:
    """Complete each deferred target scan (read, split and hashed only) from the
    reference's lines tables: a target line whose bytes are a reference document's line
    (same two 64-bit hashes) is that document, with its source, id and key, so what the
    full scan would find is counted from the table. A target with any other line (or no
    usable table) is scanned in full here, as :func:`scan_file` scans it.

    The tables become one frame; each reference file's ids and keys are its rows of it,
    and a completed target's the rows its lines matched (:class:`Rows`), so the checks
    net them row by row (:func:`curator.audit.multisets.differences`)."""
    owners, tables = [], []
    for p, s in scans.items():
        if s.line_table == LINE_SCHEME:
            owners.append((p, s))
            tables.append(pl.read_ipc(lines_path(scan_path(work_dir, p))))
    shared = pl.concat(tables) if tables and all(t.schema == tables[0].schema
                                                  for t in tables) else None
    columns = _columns(shared) if shared is not None else {}
    start = 0
    for (p, s), table in zip(owners, tables, strict=True):
        if shared is None:  # each table its own
            _own_rows(s, _columns(table), np.arange(table.height))
        else:
            _own_rows(s, columns, np.arange(start, start + table.height))
            start += table.height
        if not set(s.in_table) <= set(s.frames):
            raise CuratorError("audit_scan_incomplete",
                               f"the scan of {p} left {s.in_table} to its lines table, "
                               "which lacks them: rerun the audit without its checkpoint")
    # the keys in the tables, made as the target's would be
    key_schemes = {s.key_scheme for _, s in owners}
    usable, rescan = [], []
    for path, scan in scans.items():
        d = scan.deferred
        if d is None:
            continue
        if shared is not None and d["line_scheme"] == LINE_SCHEME \
                and (not d["want_ids"] or "id" in shared.columns) \
                and (not d["comparison_fields"] or ("key" in shared.columns
                                                    and key_schemes == {d.get("key_scheme")})):
            usable.append(path)
        else:
            rescan.append(path)
    if usable:  # one join of every target's lines with the tables, "t": which target
        assert shared is not None
        lines = pl.concat([pl.read_ipc(lines_path(scan_path(work_dir, path)))
                           .with_columns(t=pl.lit(i, pl.Int32)) for i, path in enumerate(usable)])
        rows = shared.select("h0", "h1").with_row_index("r")
        if rows["h0"].is_duplicated().any():  # a line repeated in the tables (or an h0
            # collision): one row per line; its attributes are a function of its bytes,
            # so which copy is moot
            rows = rows.unique(subset=["h0", "h1"], keep="any")
        joined = lines.join(rows, on=["h0", "h1"], how="left").select("t", "r")
        unmatched = set(joined.filter(pl.col("r").is_null())["t"].unique().to_list())
        rescan += [usable[i] for i in sorted(unmatched)]  # a line that is no document's
        _fill(scans, {i: path for i, path in enumerate(usable) if i not in unmatched},
              joined.filter(~pl.col("t").is_in(list(unmatched))), columns)
    for path in sorted(rescan):
        scan = scans[path]
        d = scan.deferred
        assert d is not None
        spec = d["spec"]
        scans[path] = scan_file(
            path, RecordSpec(**{**spec, "metadata_fields": tuple(spec["metadata_fields"])}),
            want_ids=d["want_ids"], comparison_fields=tuple(d["comparison_fields"]),
            digest=scan.sha256 is not None)


def _columns(table: pl.DataFrame) -> dict[str, Any]:
    """A lines table's columns, each one object (multisets over one column net row by
    row only when they hold the same object: :class:`Rows`), and ``keyed``: which rows
    have a key (numpy)."""
    out: dict[str, Any] = {name: table[name] for name in ("source", "id", "key")
                           if name in table.columns}
    if "key" in out:
        out["keyed"] = out["key"].is_not_null().to_numpy()
    return out


def _own_rows(scan: FileScan, columns: dict[str, Any], rows: np.ndarray) -> None:
    """A reference file's ids and keys: its ``rows`` of the tables' ``columns``: its
    documents' ids, and their keys when every object is a document (the keys are of
    every object)."""
    if "id" in columns:
        scan.frames["ids"] = Rows(columns["id"], rows)
    if "key" in columns and scan.documents + scan.bad_records == scan.rows:
        scan.frames["keys"] = Rows(columns["key"], rows[columns["keyed"][rows]])


def _fill(scans: dict[str, FileScan], matched: dict[int, str], joined: pl.DataFrame,
          columns: dict[str, Any]) -> None:
    """The deferred targets' counts (``matched``: by ``t``) from their lines' rows
    ``r`` of the tables (their ``columns``; each target's lines all matched)."""
    rows = {key[0]: part["r"].cast(pl.Int64).to_numpy() for key, part in
            joined.partition_by("t", as_dict=True, include_key=False).items()}
    sources = joined.with_columns(source=columns["source"].gather(joined["r"])) \
        .group_by("t", "source").len()
    per_source = {key[0]: dict(zip(part["source"].to_list(), part["len"].to_list(),
                                   strict=True))
                  for key, part in sources.partition_by("t", as_dict=True,
                                                        include_key=False).items()}
    keyed = columns.get("keyed")
    none = np.zeros(0, np.int64)
    for i, path in matched.items():
        scan = scans[path]
        d = scan.deferred
        assert d is not None
        mine = rows.get(i, none)
        scan.documents = len(mine)
        scan.per_source = dict(sorted(per_source.get(i, {}).items()))
        # the multisets as rows of the tables only (the checks take them;
        # :meth:`FileScan.counts` gives them as maps)
        if d["want_ids"]:
            scan.frames["ids"] = Rows(columns["id"], mine)
        if d["comparison_fields"]:
            assert keyed is not None
            has = keyed[mine]
            scan.frames["keys"] = Rows(columns["key"], mine[has])
            scan.missing_keys = len(mine) - int(has.sum())
            scan.key_scheme = d["key_scheme"]
        scan.deferred = None
