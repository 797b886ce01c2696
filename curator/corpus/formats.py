"""Corpus file formats: the one place that says which file names are JSONL or Parquet.

A JSONL file ends in one of :data:`JSONL_EXTENSIONS`, optionally followed by one of
:data:`COMPRESSED_SUFFIXES` (``part_0.jsonl.zst``); a Parquet file ends in one of
:data:`PARQUET_EXTENSIONS` (Parquet compresses inside the file, but a ``.gz``/``.zst``
suffix is still recognised as Parquet, so it is refused as such rather than read as
JSONL). Matching is case-insensitive.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

JSONL_EXTENSIONS = (".jsonl", ".json", ".ndjson")
PARQUET_EXTENSIONS = (".parquet", ".pq")
GZIP_SUFFIX = ".gz"
ZSTD_SUFFIX = ".zst"
#: whole-file compression of JSONL input (a compressed file is never split into ranges)
COMPRESSED_SUFFIXES = (GZIP_SUFFIX, ZSTD_SUFFIX)




def with_compression(extensions: Sequence[str]) -> tuple[str, ...]:
    """Every extension as is and followed by each compressed suffix."""
    return tuple(ext + comp for ext in extensions for comp in ("", *COMPRESSED_SUFFIXES))


#: every name ending of a JSONL file (``.jsonl``, ``.jsonl.gz``, ``.jsonl.zst``, ...)
JSONL_NAMES = with_compression(JSONL_EXTENSIONS)
#: every name ending of a Parquet file
PARQUET_NAMES = with_compression(PARQUET_EXTENSIONS)


def has_extension(path: str, extensions: Sequence[str]) -> bool:
    """``path`` ends in one of ``extensions``, optionally followed by a compressed suffix."""
    return path.lower().endswith(with_compression(extensions))


def is_compressed(path: str) -> bool:
    return path.lower().endswith(COMPRESSED_SUFFIXES)


def is_parquet(path: str) -> bool:
    return path.lower().endswith(PARQUET_NAMES)


def file_format(path: str) -> str:
    """``"parquet"`` or ``"jsonl"`` (anything that is not Parquet is read as JSONL)."""
    return "parquet" if is_parquet(path) else "jsonl"


def shard_name(index: int) -> str:
    """The file name of a step's output shard ``index`` (``part_<index>.jsonl``)."""
    return f"part_{index}.jsonl"


class CountingSink:
    """A file being written, seen through: the digest and the line count of what
    goes through it, so the writer reports its shard without reading it back."""

    def __init__(self, f: Any) -> None:
        self.f = f
        self.rows = 0
        self._h = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self._h.update(data)
        self.rows += data.count(b"\n")
        return int(self.f.write(data))

    def summary(self, name: str) -> dict[str, Any]:
        """The shard as a manifest lists it (as :func:`shard_summary` reads it)."""
        return {"name": name, "rows": self.rows, "sha256": "sha256:" + self._h.hexdigest()}


def summary_path(work_dir: str | Path, name: str) -> Path:
    """Where a shard's writer leaves its :meth:`CountingSink.summary` (the work area)."""
    return Path(work_dir) / "shards" / f"{name}.json"


def written_summary(work_dir: str | Path, shard: Path) -> dict[str, Any] | None:
    """A shard as a manifest lists it: from the summary its writer left in the work
    area (on any node: :mod:`curator.io.shared`), else read from the shard itself;
    ``None`` when neither is there."""
    from curator.io import shared  # curator.io imports this module: not at the top

    left = shared.localize(summary_path(work_dir, shard.name))
    if left.is_file():
        return dict(orjson.loads(left.read_bytes()))
    return shard_summary(shared.localize(shard))


def file_facts(path: Path) -> tuple[int, str]:
    """A file's lines (``\\n`` bytes) and ``sha256:`` digest, in one read."""
    # a loop, not hashlib.file_digest: one read gives the row count and the digest
    h = hashlib.sha256()
    rows = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            rows += chunk.count(b"\n")
    return rows, "sha256:" + h.hexdigest()


def shard_summary(path: Path) -> dict[str, Any] | None:
    """A written shard as a manifest lists it: name, rows (lines) and sha256, in one
    read; ``None`` when it is absent."""
    if not path.is_file():
        return None
    rows, digest = file_facts(path)
    return {"name": path.name, "rows": rows, "sha256": digest}
