"""One unit of the audit's scan: one file read once (:func:`scan_file`), what the
checks need of it summarised (:class:`curator.audit.summary.FileScan`).

**How it reads.** Through the corpus kernel's one line reader
(:class:`curator.corpus.reading.FileChunks`): a local uncompressed file
:data:`~curator.corpus.reading.CHUNK_BYTES` at a time, never whole, into one buffer
reused for every chunk (a compressed file or an object is read whole); lines are split
as the kernel splits them (:mod:`curator.corpus.lines`: on ``\\n`` only, a leading
UTF-8 BOM skipped, blank lines not rows), each chunk's whole lines indexed and parsed
where they lie (:mod:`curator.audit.summary`), a line split across chunks joined first;
the sha256 is of the chunks as they come. An I/O error midway makes the file ``not
readable`` with nothing of it counted; a file that does not end in a newline has a
``truncated final record``.

**Target lines reused from the reference** (docs/audit.md). When the stage knows the
run's reference files (keyed or fingerprinted files that are neither target nor
rejected), a reference unit also writes its documents' lines table (each document
line's two hashes, :mod:`curator.audit._lines`, with its source, id and key), and a
target unit does not parse: it reads, digests and hashes its lines (``deferred``). The
driver completes the targets with one join of their lines with the tables
(:func:`curator.audit.join.complete`); a target with a line that is no reference
document's is scanned in full there, with :func:`scan_file`, so the result is always
what the full scan gives.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import polars as pl

from curator.audit._lines import LINE_SCHEME, line_hashes
from curator.audit.keys import Keys
from curator.audit.summary import (
    NOT_A_FILE,
    NOT_READABLE,
    TRUNCATED,
    FileScan,
    Summary,
    parse_batch,
    rejected_line,
)
from curator.corpus.reading import FileChunks, UnreadableFile
from curator.corpus.records import RecordSpec
from curator.io import storage

#: lines parsed and summarised at a time (bounds the parsed records held in memory)
BATCH_LINES = 8192


def scan_file(path: str, spec: RecordSpec, *, want_ids: bool,
              comparison_fields: tuple[str, ...] = (), rejected: bool = False,
              fingerprint: bool = False, digest: bool = True, exact: bool = False
              ) -> FileScan:
    """Read one file once (see the module docstring). ``digest``: compute the sha256 of
    its bytes (a target shard's; no check reads another file's). ``exact``: parse line
    by line with offsets even where a whole batch parses (the tests compare the two)."""
    return scan_unit(path, spec, want_ids=want_ids, comparison_fields=comparison_fields,
                     rejected=rejected, fingerprint=fingerprint, digest=digest,
                     exact=exact)[0]


def scan_unit(path: str, spec: RecordSpec, *, want_ids: bool,
              comparison_fields: tuple[str, ...] = (), rejected: bool = False,
              fingerprint: bool = False, digest: bool = True, exact: bool = False,
              table: bool = False, defer: bool = False
              ) -> tuple[FileScan, pl.DataFrame | None]:
    """:func:`scan_file`, and: ``table``, the documents' lines table (a reference
    file's: each document line's hashes, :func:`curator.audit._lines.line_hashes`, and
    its source, id and key); ``defer``, no parse: the file's lines are hashed only (a
    target file's: the driver completes the scan from the reference's tables), the
    hashes of its rows returned."""
    scan = FileScan(path=path)
    if not _is_file(path, scan):
        return scan, None
    reader = FileChunks(path, digest=digest)
    try:
        if defer:
            return _deferred(scan, reader, spec, want_ids, comparison_fields)
        acc = None if rejected else Summary(scan, spec, want_ids, comparison_fields,
                                            fingerprint, table)
        for block in reader.blocks():
            index = block.index
            view = memoryview(block.data)
            numbers = np.flatnonzero(~index.blank)  # the rows (non-blank lines)
            h0, h1 = line_hashes(block) if table else (None, None)
            for i in range(0, len(numbers), BATCH_LINES):
                at = numbers[i:i + BATCH_LINES]
                firsts = index.starts[at].tolist()
                batch = list(map(view.__getitem__, map(slice, firsts, index.ends[at].tolist())))
                records, good = parse_batch(scan, batch, partial(_shift, firsts, block.offset),
                                            exact)
                if acc is None:
                    for obj in records:
                        rejected_line(scan, obj)
                    continue
                hashes = None
                if h0 is not None and h1 is not None:  # the records' lines' hashes
                    lines = at if good is None else at[np.array(good, np.int64)]
                    hashes = (h0[lines], h1[lines])
                acc.add(records, hashes)
        _read_whole(scan, reader)
        return scan, None if acc is None else acc.finish()
    except UnreadableFile as exc:
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


def _shift(offsets: list[int], by: int) -> list[int]:
    return [o + by for o in offsets]


def _read_whole(scan: FileScan, reader: FileChunks) -> None:
    """What is known once every line is read and handled: the file's size and sha256,
    and its truncation fault (a file that does not end in a newline: a truncated final
    record at its final line, 0 without a newline), unless a bad record came before it
    (a bad final line is reported as the truncation)."""
    scan.bytes, scan.sha256 = reader.size, reader.sha256
    offset = reader.unterminated
    if offset is not None and (scan.fault is None or scan.fault["offset"] >= offset):
        scan.fault = {"kind": TRUNCATED, "offset": offset}


def _deferred(scan: FileScan, reader: FileChunks, spec: RecordSpec, want_ids: bool,
              comparison_fields: tuple[str, ...]) -> tuple[FileScan, pl.DataFrame]:
    """A target's scan without parsing: its rows' hashes, for the driver."""
    h0s, h1s = [], []
    for block in reader.blocks():
        rows = ~block.index.blank
        scan.rows += int(rows.sum())
        h0, h1 = line_hashes(block)
        h0s.append(h0[rows])
        h1s.append(h1[rows])
    _read_whole(scan, reader)
    scan.deferred = {"line_scheme": LINE_SCHEME, "want_ids": want_ids,
                     "comparison_fields": list(comparison_fields),
                     "key_scheme": Keys(comparison_fields, spec).scheme
                     if comparison_fields else None,
                     "spec": _spec_json(spec)}
    return scan, pl.DataFrame({"h0": np.concatenate(h0s), "h1": np.concatenate(h1s)})


def _spec_json(spec: RecordSpec) -> dict[str, Any]:
    return {"text_field": spec.text_field, "id_field": spec.id_field,
            "source_field": spec.source_field, "metadata_fields": list(spec.metadata_fields),
            "require_id": spec.require_id}
