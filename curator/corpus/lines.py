"""The one JSONL line splitter: how every step splits a file's bytes into lines.

**The rules.** Lines are split on ``\\n`` only (U+2028 and friends are not line ends),
as ``bytes.split(b"\\n")`` splits them; a line keeps any other byte, a trailing ``\\r``
included (a JSON parser reads it as whitespace). A UTF-8 byte order mark at the start
of a file is not part of its first line. A line of ASCII whitespace only (what
``bytes.strip`` strips) is blank: it is not a record.

**The index.** :func:`line_index` gives each line's span and whether it is blank,
without splitting the bytes in Python: the newlines are found with ``bytes.find``
(memchr; a loop in Python, as fast as it gets for lines of documents: a compiled
kernel measured slower, docs/benchmarks.md section 5), blanks checked only for the lines
that are empty or start with whitespace. Every reader walks these spans:
:func:`split_lines` (the record reader, :mod:`curator.corpus.reading`), ingest's parse
loop (a window of a memory-mapped file at a time, :func:`line_windows`) and the audit's
scan (a file read in chunks, :func:`line_blocks` over
:class:`curator.corpus.reading.FileChunks`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from mmap import mmap
from typing import NamedTuple

import numpy as np

UTF8_BOM = b"\xef\xbb\xbf"
#: bytes of a buffer indexed at a time by :func:`line_windows` (bounds the index's memory)
WINDOW_BYTES = 8 << 20
_WHITESPACE = np.array([9, 10, 11, 12, 13, 32], np.uint8)  # what bytes.strip() strips


#: what the splitter reads
Buffer = bytes | bytearray | mmap


def bom_length(data: Buffer) -> int:
    """How many bytes of ``data`` (a file's first bytes) are a UTF-8 BOM: 3 or 0."""
    return len(UTF8_BOM) if data[:len(UTF8_BOM)] == UTF8_BOM else 0


def newlines(data: Buffer, start: int = 0, end: int | None = None) -> np.ndarray:
    """The offsets of ``data[:end]``'s newlines from ``start`` (int64)."""
    end = len(data) if end is None else end
    out = []
    find, append = data.find, out.append
    i = find(b"\n", start, end)
    while i >= 0:
        append(i)
        i = find(b"\n", i + 1, end)
    return np.array(out, np.int64)


class LineIndex(NamedTuple):
    """Each line's bytes' span ``data[starts[i]:ends[i]]`` (its newline excluded) and
    whether it is blank."""

    blank: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def part(self, at: slice) -> LineIndex:
        """The lines ``at``."""
        return LineIndex(*(a[at] for a in self))

    def rows(self) -> tuple[list[int], list[int]]:
        """The non-blank lines' starts and ends, as lists."""
        rows = ~self.blank
        return self.starts[rows].tolist(), self.ends[rows].tolist()


def line_index(data: Buffer, start: int = 0, end: int | None = None) -> LineIndex:
    """The lines of ``data[start:end]``, as ``data[start:end].split(b"\\n")`` gives
    them (one more than newlines, the last possibly empty): their spans and whether each
    is blank."""
    end = max(start, len(data) if end is None else end)
    nl = newlines(data, start, end)
    starts = np.empty(len(nl) + 1, np.int64)
    starts[0], starts[1:] = start, nl + 1
    ends = np.append(nl, end)  # each line's end, its newline excluded
    blank = ends == starts  # empty: blank; a line starting with whitespace: checked
    nonempty = ~blank
    blank[nonempty] = np.isin(np.frombuffer(data, np.uint8)[starts[nonempty]], _WHITESPACE)
    for i in np.flatnonzero(blank):
        blank[i] = not data[starts[i]:ends[i]].strip()
    return LineIndex(blank, starts, ends)


def split_lines(data: bytes, base_offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` of every non-blank line of ``data`` (which starts at
    ``base_offset`` in its file; at offset 0 a UTF-8 BOM is skipped)."""
    starts, ends = line_index(data, bom_length(data) if base_offset == 0 else 0).rows()
    for s, e in zip(starts, ends, strict=True):
        yield base_offset + s, data[s:e]


def line_windows(data: Buffer, start: int = 0, end: int | None = None,
                 size: int = WINDOW_BYTES) -> Iterator[LineIndex]:
    """The lines of ``data[start:end]`` as :func:`line_index` gives them, whole lines
    about ``size`` bytes at a time (a line longer than that alone): the index of a large
    memory-mapped file is never held whole."""
    end = len(data) if end is None else end
    while end - start > size:
        cut = data.rfind(b"\n", start, start + size) + 1
        if cut <= start:  # no newline in the window: up to the end of its line
            cut = data.find(b"\n", start + size, end) + 1
            if cut <= 0:
                break
        if cut >= end:
            break
        yield line_index(data, start, cut).part(slice(0, -1))  # (the empty value after)
        start = cut
    yield line_index(data, start, end)


class Block(NamedTuple):
    """Whole lines of a file: ``data``, the file's bytes from ``offset`` (or a line
    joined from several chunks), and its lines' :class:`LineIndex` in ``data``."""

    offset: int
    data: bytes | bytearray
    index: LineIndex


def line_blocks(chunks: Iterable[bytes | bytearray], start: int = 0) -> Iterator[Block]:
    """The lines of ``b"".join(chunks)[start:]`` (``start``: in the first chunk, a BOM
    skipped), as ``bytes.split(b"\\n")`` gives them, a block at a time: each chunk's
    whole lines where they lie, a line split across chunks joined (its bytes only). The
    last block holds the final line alone (after the last newline, possibly empty), so
    the file is never held whole. A chunk is used until the next is asked for, never
    after: the chunks may be one buffer read into again."""
    pending: list[bytes] = []  # the line being read: its bytes so far
    offset, at = 0, start  # the chunk's offset in the file; the pending line's
    for chunk in chunks:
        i = chunk.find(b"\n", start)
        if i < 0:
            pending.append(chunk[start:])
        else:
            line = b"".join([*pending, chunk[start:i + 1]])  # the line that was pending
            yield Block(at, line, line_index(line).part(slice(0, 1)))
            cut = chunk.rfind(b"\n") + 1
            if cut > i + 1:  # the chunk's whole lines (the empty value after them dropped)
                yield Block(offset, chunk, line_index(chunk, i + 1, cut).part(slice(0, -1)))
            pending, at = [chunk[cut:]], offset + cut
        offset += len(chunk)
        start = 0
    final = b"".join(pending)
    yield Block(at, final, line_index(final))
