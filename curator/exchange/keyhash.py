"""A stable 64-bit hash of string keys, computed over a whole Arrow column at once.

The exchange routes a record to a bucket by its key's hash, so the hash must be the
same in every process, on every node, in every version of the libraries: Python's
``hash`` is salted per process and polars' ``hash`` changes between releases. This is
FNV-1a over the key's UTF-8 bytes, finished with MurmurHash3's 64-bit mixer (FNV's
low bits alone are weak), in one compiled pass over the column's buffers. A null key
hashes as the empty string. Pinned against a pure-Python reference in
tests/exchange/test_keyhash.py.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
from numba import njit

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True, nogil=True)
def _fnv1a_fmix(data, offsets, out):  # pragma: no cover - compiled
    prime = np.uint64(0x100000001B3)
    m1, m2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
    s33 = np.uint64(33)
    for i in range(len(out)):
        h = np.uint64(0xCBF29CE484222325)
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * prime
        h ^= h >> s33
        h *= m1
        h ^= h >> s33
        h *= m2
        h ^= h >> s33
        out[i] = h


def key_hash(keys: pa.Array | pa.ChunkedArray | pl.Series) -> np.ndarray:
    """The stable hash (uint64) of each key, in order: strings by their UTF-8 bytes,
    binary keys by their bytes (the same value for the same bytes)."""
    if isinstance(keys, pl.Series):
        keys = keys.to_arrow() if keys.dtype == pl.Binary else keys.cast(pl.String).to_arrow()
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.large_binary())
    arr = keys.cast(pa.large_binary()).fill_null(b"")
    out = np.empty(len(arr), np.uint64)
    if len(arr) == 0:
        return out
    _validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = (np.frombuffer(data_buf, np.uint8) if data_buf is not None and data_buf.size
            else np.zeros(1, np.uint8))
    _fnv1a_fmix(data, offsets, out)
    return out


def range_of(hashes: np.ndarray, buckets: int) -> np.ndarray:
    """Each uint64 hash's bucket in ``0..buckets-1`` (int32) by its top 32 bits,
    ``floor(top * buckets / 2**32)``: bucket ``b`` holds one contiguous range of hashes,
    and every hash in it is below every hash of bucket ``b + 1`` (range partitioning,
    for a reducer that needs a global order, e.g. the subset's plan)."""
    top = np.asarray(hashes, dtype=np.uint64) >> np.uint64(32)
    return ((top * np.uint64(buckets)) >> np.uint64(32)).astype(np.int32)


def bucket_of(keys: pa.Array | pa.ChunkedArray | pl.Series, buckets: int) -> np.ndarray:
    """Each key's bucket in ``0..buckets-1`` (int32): its hash modulo ``buckets``."""
    return (key_hash(keys) % np.uint64(buckets)).astype(np.int32)
