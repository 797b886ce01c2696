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
"""

from __future__ import annotations

from functools import partial

import numpy as np

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
    scan = FileScan(path=path)
    if not _is_file(path, scan):
        return scan
    reader = FileChunks(path, digest=digest)
    try:
        acc = None if rejected else Summary(scan, spec, want_ids, comparison_fields,
                                            fingerprint)
        for block in reader.blocks():
            index = block.index
            view = memoryview(block.data)
            numbers = np.flatnonzero(~index.blank)  # the rows (non-blank lines)
            for i in range(0, len(numbers), BATCH_LINES):
                at = numbers[i:i + BATCH_LINES]
                firsts = index.starts[at].tolist()
                batch = list(map(view.__getitem__, map(slice, firsts, index.ends[at].tolist())))
                records = parse_batch(scan, batch, partial(_shift, firsts, block.offset), exact)
                if acc is None:
                    for obj in records:
                        rejected_line(scan, obj)
                else:
                    acc.add(records)
        _read_whole(scan, reader)
        if acc is not None:
            acc.finish()
        return scan
    except UnreadableFile as exc:
        out = FileScan(path=path)  # nothing of a file that could not be read is counted
        out.fault = {"kind": NOT_READABLE, "offset": 0, "detail": str(exc)}
        return out


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
