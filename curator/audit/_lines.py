"""Lines hashed without splitting them in Python: each line's two 64-bit hashes, for a
block of a file's lines as the kernel's splitter indexes them
(:func:`curator.corpus.lines.line_blocks`).

What it is for (docs/audit.md, "Target lines reused from the reference"): the filter
writes the lines it keeps byte for byte, so a target line whose hashes are a reference
document line's is that document; the target is then read and hashed here, never split
into ``bytes`` objects or parsed.

How: the block's bytes become one Arrow binary column without a copy (the offsets are
the lines' starts: each value is a line *with* its ``\\n``, the file's final line
without one), and polars hashes the column twice (seeds 0 and 1). A value holds its
newline, so a final line without one (a truncated record) never equals a line that had
one: it is simply not reused.

The hashes are not cryptographic: two lines share both by chance about once in 2**128
pairs; data built to collide would defeat them, as it would the containment keys'
64-bit polars hashes (:func:`curator.audit.keys.row_keys`). They are stable within one
polars version (:data:`LINE_SCHEME`).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from curator.corpus.lines import Block

#: how lines are hashed: two scans' hashes are compared only when their schemes are equal
LINE_SCHEME = f"polars {pl.__version__} hash(0), hash(1) of a line's bytes and its newline"


def line_hashes(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """The two hashes (seeds 0 and 1) of each line of ``block``, its newline included (a
    block's lines lie end to end, each but the file's final line ending in one)."""
    starts, ends, data = block.index.starts, block.index.ends, block.data
    n = len(starts)
    if not n:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    offsets = np.append(starts, min(int(ends[-1]) + 1, len(data)))
    column = pl.from_arrow(pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]))
    assert isinstance(column, pl.Series)
    return column.hash(0).to_numpy(), column.hash(1).to_numpy()
