"""The exchange's key hash: the same value in every process and version (a pure-Python
reference of FNV-1a + MurmurHash3's mixer), and buckets that spread keys evenly."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import polars as pl
import pyarrow as pa

from curator.exchange import bucket_of, key_hash

M64 = (1 << 64) - 1


def reference(text: str | None) -> int:
    h = 0xCBF29CE484222325
    for byte in (text or "").encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & M64
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


KEYS = ["", "a", "doc-1", "caf\u00e9", "\U0001f600 emoji", "x" * 1000, None]


def test_matches_the_reference_for_strings_nulls_and_slices() -> None:
    got = key_hash(pa.array(KEYS))
    assert [int(v) for v in got] == [reference(k) for k in KEYS]
    sliced = pa.array(["skip", *KEYS[:4]]).slice(1)  # an offset into the buffers
    assert [int(v) for v in key_hash(sliced)] == [reference(k) for k in KEYS[:4]]
    chunked = pa.chunked_array([pa.array(KEYS[:2]), pa.array(KEYS[2:4])])
    assert [int(v) for v in key_hash(chunked)] == [reference(k) for k in KEYS[:4]]
    assert [int(v) for v in key_hash(pl.Series(KEYS))] == [reference(k) for k in KEYS]
    assert len(key_hash(pa.array([], pa.string()))) == 0


def test_a_fresh_process_gives_the_same_values() -> None:
    code = ("import pyarrow as pa; from curator.exchange import key_hash; "
            f"print(list(map(int, key_hash(pa.array({KEYS!r})))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == str([reference(k) for k in KEYS])


def test_buckets_are_in_range_and_even() -> None:
    keys = pa.array([f"doc-{i}" for i in range(64_000)])
    for n in (1, 7, 64):
        b = bucket_of(keys, n)
        assert b.dtype == np.int32 and b.min() >= 0 and b.max() < n
        counts = np.bincount(b, minlength=n)
        assert counts.min() > 0.85 * len(keys) / n and counts.max() < 1.15 * len(keys) / n
