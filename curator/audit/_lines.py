"""A file's lines indexed without splitting it in Python: each line's span, whether it
is blank, and its two 64-bit hashes, in the order of ``data[start:].split(b"\\n")``;
and a file read in chunks, a block of whole lines at a time (:func:`line_blocks`).

What it is for (docs/audit.md, "Target lines reused from the reference"): the filter
writes the lines it keeps byte for byte, so a target line whose hashes are a reference
document line's is that document; the target is then read and hashed here, never split
into ``bytes`` objects or parsed.

How: the newlines are found with ``bytes.find`` (memchr), the file's bytes become one
Arrow binary column without a copy (the offsets are the lines' starts: each value is a
line *with* its ``\\n``, the last line without one), and polars hashes the column
twice (seeds 0 and 1). A value holds its newline, so a final line without one (a
truncated record) never equals a line that had one: it is simply not reused. Blank is
what ``bytes.strip`` strips (ASCII whitespace), checked in Python only for the lines
that are empty or start with whitespace.

The hashes are not cryptographic: two lines share both by chance about once in 2**128
pairs; data built to collide would defeat them, as it would the containment keys'
64-bit polars hashes (:func:`curator.audit.scan.row_keys`). They are stable within one
polars version (:data:`LINE_SCHEME`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa

#: how lines are hashed: two scans' hashes are compared only when their schemes are equal
LINE_SCHEME = f"polars {pl.__version__} hash(0), hash(1) of a line's bytes and its newline"
_WHITESPACE = np.array([9, 10, 11, 12, 13, 32], np.uint8)


def newlines(data: bytes | bytearray, start: int = 0, end: int | None = None) -> np.ndarray:
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
    """Each line's two hashes (None when not asked for), whether it is blank, and its
    bytes' span ``data[starts[i]:ends[i]]`` (its newline excluded)."""

    h0: np.ndarray | None
    h1: np.ndarray | None
    blank: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def part(self, at: slice) -> LineIndex:
        """The lines ``at``."""
        return LineIndex(*(None if a is None else a[at] for a in self))


def line_index(data: bytes | bytearray, start: int = 0, end: int | None = None, hashed: bool = True
               ) -> LineIndex:
    """The lines of ``data[start:end]``, as ``data[start:end].split(b"\\n")`` gives
    them (one more than newlines, the last possibly empty): their spans, whether each is
    blank, and (``hashed``) their two hashes."""
    end = len(data) if end is None else end
    nl = newlines(data, start, end)
    n = len(nl) + 1
    offsets = np.empty(n + 1, np.int64)
    offsets[0], offsets[1:n], offsets[n] = start, nl + 1, end
    h0 = h1 = None
    if hashed:
        column = pl.from_arrow(pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]))
        assert isinstance(column, pl.Series)
        h0, h1 = column.hash(0).to_numpy(), column.hash(1).to_numpy()
    starts = offsets[:-1]
    ends = np.append(nl, end)  # each line's end, its newline excluded
    blank = np.zeros(n, np.bool_)
    arr = np.frombuffer(data, np.uint8)
    maybe = ends == starts
    nonempty = ~maybe
    maybe[nonempty] = np.isin(arr[starts[nonempty]], _WHITESPACE)
    for i in np.flatnonzero(maybe):
        blank[i] = not data[starts[i]:ends[i]].strip()
    return LineIndex(h0, h1, blank, starts, ends)


class Block(NamedTuple):
    """Whole lines of a file: ``data``, the file's bytes from ``offset`` (or a line
    joined from several chunks), and its lines' :class:`LineIndex` in ``data``."""

    offset: int
    data: bytes | bytearray
    index: LineIndex


def line_blocks(chunks: Iterable[bytes | bytearray], start: int = 0, hashed: bool = True
                ) -> Iterator[Block]:
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
            yield Block(at, line, line_index(line, hashed=hashed).part(slice(0, 1)))
            cut = chunk.rfind(b"\n") + 1
            if cut > i + 1:  # the chunk's whole lines (the empty value after them dropped)
                yield Block(offset, chunk,
                            line_index(chunk, i + 1, cut, hashed).part(slice(0, -1)))
            pending, at = [chunk[cut:]], offset + cut
        offset += len(chunk)
        start = 0
    final = b"".join(pending)
    yield Block(at, final, line_index(final, hashed=hashed))
