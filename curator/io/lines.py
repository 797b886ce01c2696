"""JSONL lines of a partition with their byte offsets (for readers that keep raw lines)."""

from __future__ import annotations

from collections.abc import Iterator

from curator.io.readers import read_bytes

COMPRESSED = (".gz", ".zst")


def read_block(path: str, rng: tuple[int, int] | None) -> tuple[int, bytes]:
    """(offset of the first byte, bytes) of the whole lines starting in ``rng``.

    For a compressed file the offsets are in the decompressed stream (and a compressed
    file is never split into ranges).
    """
    if rng is None or rng[0] == 0 or path.lower().endswith(COMPRESSED):
        return 0, read_bytes(path, rng)
    with open(path, "rb") as f:
        f.seek(rng[0] - 1)
        if f.read(1) != b"\n":
            f.readline()
        start = f.tell()
    return start, read_bytes(path, rng)


def iter_lines(path: str, rng: tuple[int, int] | None) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for every non-blank line (without its newline)."""
    base, data = read_block(path, rng)
    pos = 0
    for line in data.split(b"\n"):
        offset = base + pos
        pos += len(line) + 1
        if line.strip():
            yield offset, line
