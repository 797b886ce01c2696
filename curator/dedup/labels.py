"""A document's label: its place in the ``keep`` order, as 28 bytes that sort by it.

``label = rank (8) | stable hash of the id (8) | node (8) | partition (4)``, all
big-endian, so comparing labels as bytes compares ``(rank, hash, node)``:

- ``rank``: the ``keep`` rule's primary key as an order-preserving encoding of a float64
  (``hash``: 0; ``longest``: minus the text's code points; ``score:<f>``: minus the
  score, +inf when it is missing or not a finite number): smaller is better;
- ``hash``: :func:`curator.exchange.key_hash` of the id (the stable hash, the tie-break);
- ``node``: the document's input position, ``file index << 40 | byte offset``: unique,
  and the same for any partitioning;
- ``partition``: the input partition holding it (where its text is; never decides an
  order, ``node`` being unique before it).

A component's survivor is its smallest label; every phase compares labels only.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from curator.io import shared
from curator.io.writers import write_atomic

LABEL = 28
OFFSET_BITS = 40
MAX_FILES = 1 << (63 - OFFSET_BITS)


def sortable(values: np.ndarray) -> np.ndarray:
    """float64 -> uint64 whose unsigned order is the floats' order (-0.0 is 0.0)."""
    bits = (np.asarray(values, np.float64) + 0.0).view(np.uint64)
    neg = (bits >> np.uint64(63)) == 1
    return np.where(neg, ~bits, bits | np.uint64(1 << 63))


def make_labels(rank: np.ndarray, hashes: np.ndarray, nodes: np.ndarray, part: int
                ) -> pl.Series:
    """The labels of a partition's documents (a Binary series)."""
    n = len(nodes)
    rec = np.empty(n, dtype=[("r", ">u8"), ("h", ">u8"), ("n", ">u8"), ("p", ">u4")])
    rec["r"] = sortable(rank)
    rec["h"] = hashes
    rec["n"] = np.asarray(nodes, np.uint64)
    rec["p"] = part
    raw = rec.tobytes()
    arr = pa.FixedSizeBinaryArray.from_buffers(pa.binary(LABEL), n, [None, pa.py_buffer(raw)])
    return pl.Series("label", arr.cast(pa.large_binary()), dtype=pl.Binary)


def _matrix(labels: pl.Series) -> np.ndarray:
    """uint8 ``[n, LABEL]`` view of a Binary series of labels."""
    if labels.len() == 0:
        return np.zeros((0, LABEL), np.uint8)
    arr = labels.to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = arr.cast(pa.large_binary())
    _, off, data = arr.buffers()
    offsets = np.frombuffer(off, np.int64)[arr.offset:arr.offset + len(arr) + 1]
    raw = np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]]
    return raw.reshape(len(arr), LABEL)


def parts_of(labels: pl.Series) -> np.ndarray:
    """The partition of each label (int64)."""
    m = _matrix(labels)
    return np.ascontiguousarray(m[:, 24:28]).view(">u4").ravel().astype(np.int64)


def nodes_of(labels: pl.Series) -> np.ndarray:
    """The node (input position) of each label (int64)."""
    m = _matrix(labels)
    return np.ascontiguousarray(m[:, 16:24]).view(">u8").ravel().astype(np.int64)


def hash_hex(label: bytes) -> str:
    """The stable hash of a label's id as 16 hex digits (a component's id)."""
    return label[8:16].hex()


def folder(root: str | Path, part: int) -> Path:
    return Path(root) / f"p{part:07d}"


def write_by_part(root: str | Path, frame: pl.DataFrame, parts: np.ndarray, writer: str
                  ) -> None:
    """``frame``'s rows, each to the folder of its partition (``parts``), as
    ``<root>/p<part>/<writer>.parquet`` (atomic; a rerun writes the same files)."""
    if frame.is_empty():
        return
    split = frame.with_columns(_part=pl.Series(parts, dtype=pl.Int64)).partition_by(
        "_part", as_dict=True, maintain_order=True, include_key=False)
    for (part,), sub in sorted(split.items()):
        buf = io.BytesIO()
        sub.write_parquet(buf, compression="zstd", compression_level=1, statistics=False)
        write_atomic(folder(root, int(part)) / f"{writer}.parquet", buf.getvalue())


def read_part(root: str | Path, part: int, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Every row written to partition ``part``'s folder (any node's), as ``schema``."""
    files = shared.listing(folder(root, part), "*.parquet")
    frames = [pl.read_parquet(shared.localize(f)) for f in files]
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames, how="vertical_relaxed").cast(schema)  # type: ignore[arg-type]
