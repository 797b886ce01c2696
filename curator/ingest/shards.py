"""Phase 3 of ingest: accepted records, in input order, into ``part_<n>.jsonl`` shards.

The parse phase already wrote each accepted record's output line to its partition's
records file, so a shard is byte ranges of those files: less dropped duplicates,
with renamed lines rewritten.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import polars as pl
import pyarrow.parquet as pq

from curator.ingest.dedup import read_decisions
from curator.ingest.parse_stage import records_path
from curator.ingest.records import renamed_line
from curator.io import shared
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask, Task

Slice = tuple[str, int, int]  # (partition source id, first kept row, end kept row)


@dataclass
class ShardTask(Task[list[Slice]]):
    """One output shard: slices of staged partitions, in order."""

    data: list[Slice] = field(default_factory=list)
    index: int = 0

    def get_deterministic_id(self) -> str:
        key = f"{self.index}|" + "|".join(f"{s}:{a}-{b}" for s, a, b in self.data)
        return hashlib.sha256(key.encode()).hexdigest()[:12]


def plan_shards(kept_rows: list[tuple[str, int]], shard_size: int) -> list[ShardTask]:
    """Cut the concatenation of partitions (in order) into shards of ``shard_size`` rows."""
    shards: list[ShardTask] = []
    current: list[Slice] = []
    room = shard_size
    for sid, rows in kept_rows:
        start = 0
        while start < rows:
            take = min(room, rows - start)
            current.append((sid, start, start + take))
            start += take
            room -= take
            if room == 0:
                shards.append(ShardTask(data=current, index=len(shards)))
                current, room = [], shard_size
    if current:
        shards.append(ShardTask(data=current, index=len(shards)))
    return shards


@dataclass
class ShardPlanStage(ProcessingStage[EmptyTask, ShardTask]):
    shards: list[ShardTask]
    name: str = "ingest_shard_plan"

    def process(self, task: EmptyTask) -> list[ShardTask]:
        return [ShardTask(data=list(s.data), index=s.index) for s in self.shards]


class Piece(NamedTuple):
    """Bytes ``lo:hi`` of a records file (one or more whole lines); with ``rename``
    (old id, new id), the single line there with its id replaced."""

    lo: int
    hi: int
    rename: tuple[str, str] | None = None


def shard_pieces(ends: Sequence[int], start: int, end: int, drops: list[int],
                 renames: dict[int, tuple[str, str]]) -> list[Piece]:
    """Kept rows ``start:end`` of a staged partition, as pieces of its records file.

    ``ends[i]`` is where row ``i``'s line ends in the file. Rows in ``drops`` are left
    out of the kept numbering; a row in ``renames`` (row -> (old id, new id)) is a
    piece of its own. Runs of other rows are single byte ranges: no per-record work.
    """
    pieces: list[Piece] = []
    kept = 0  # kept rows before `row`
    row = 0
    for stop in [*sorted(drops), len(ends)]:  # a run of kept rows: row..stop
        a = row + max(0, start - kept)
        b = row + min(stop - row, end - kept)
        cuts = sorted(r for r in renames if a <= r < b) if renames else []
        for r in [*cuts, b]:
            if a < r:
                pieces.append(Piece(ends[a - 1] if a else 0, ends[r - 1]))
            if r < b:
                pieces.append(Piece(ends[r - 1] if r else 0, ends[r], renames[r]))
            a = r + 1
        kept += stop - row
        row = stop + 1
        if kept >= end:
            break
    return pieces


_CHUNK = 1 << 20  # bytes read and hashed at a time, through one reused buffer


def _copy(src: BinaryIO, dst: BinaryIO, lo: int, hi: int) -> None:
    """Append bytes ``lo:hi`` of ``src`` to ``dst`` (flushed), in the kernel if it can."""
    while lo < hi:
        try:
            n = os.copy_file_range(src.fileno(), dst.fileno(), hi - lo, lo)
        except (AttributeError, OSError):  # not Linux, or not between these files
            src.seek(lo)
            n = dst.write(src.read(min(hi - lo, 1 << 24)))
            dst.flush()
        if n <= 0:
            raise OSError(f"{src.name} is shorter than its staging table says")
        lo += n


def _hash_range(src: BinaryIO, lo: int, hi: int, digest: Any, view: memoryview) -> None:
    src.seek(lo)
    while lo < hi:
        n = src.readinto(view[:min(hi - lo, len(view))])  # type: ignore[attr-defined]
        if not n:
            raise OSError(f"{src.name} is shorter than its staging table says")
        digest.update(view[:n])
        lo += n


def write_shard(target: Path, sources: list[tuple[Path, list[Piece]]]) -> str:
    """Write a shard from pieces of records files, atomically; return its digest
    (``sha256:<hex>``, as ``curator.artifacts.file_digest`` gives).

    The byte ranges are copied file to file with ``copy_file_range``: the lines were
    encoded once, in the parse phase, and (but for renamed lines) never pass through
    Python again. Writing from user memory costs several times more system time than
    the kernel's copy on the VMs measured (``docs/benchmarks-ingest.md``). The digest
    is taken from the same ranges as they are copied, read through one reused
    buffer, so the report does not read the shard back.
    """
    digest = hashlib.sha256()  # of the bytes as they are written: no file to digest yet
    view = memoryview(bytearray(_CHUNK))
    with atomic_file(target) as out:
        for path, pieces in sources:
            with open(path, "rb") as src:
                for lo, hi, rename in pieces:
                    if rename is None:
                        out.flush()  # what was written through the buffer goes first
                        _copy(src, out, lo, hi)
                        _hash_range(src, lo, hi, digest, view)
                    else:
                        src.seek(lo)
                        line = renamed_line(src.read(hi - lo), *rename)
                        digest.update(line)
                        out.write(line)
    return "sha256:" + digest.hexdigest()


def digest_path(staging_dir: str | Path, index: int) -> Path:
    """Where the shard writer leaves the digest of ``part_<index>.jsonl`` for the report."""
    return Path(staging_dir) / f"part_{index}.sha256"


def _ends(staging: Path) -> memoryview:
    """The ``end`` column of a staging table, as int64 values (no per-value conversion)."""
    col = pq.ParquetFile(staging).read(columns=["end"]).column("end").combine_chunks()
    return memoryview(col.buffers()[1]).cast("q")[col.offset:col.offset + len(col)]


@dataclass
class ShardWriterStage(ProcessingStage[ShardTask, FileGroupTask]):
    staging_dir: str
    output_dir: str
    decisions_dir: str
    name: str = "ingest_shard_writer"

    def process(self, task: ShardTask) -> FileGroupTask:
        sources: list[tuple[Path, list[Piece]]] = []
        for sid, start, end in task.data:
            mine = read_decisions(self.decisions_dir, sid)
            drops = mine.filter(pl.col("action") == "drop")["row"].to_list()
            renamed = mine.filter(pl.col("action") == "rename").select("row", "id", "new_id")
            renames = {r: (old, new) for r, old, new in renamed.iter_rows()}
            staging = shared.localize(Path(self.staging_dir) / f"{sid}.parquet")
            pieces = shard_pieces(_ends(staging), start, end, drops, renames)
            sources.append((shared.localize(records_path(staging)), pieces))
        target = Path(self.output_dir) / f"part_{task.index}.jsonl"
        # The digest goes beside the staging files, after the shard: the report reads it
        # instead of reading the shard back (and hashes the shard itself without it).
        write_atomic(digest_path(self.staging_dir, task.index), write_shard(target, sources))
        rows = sum(end - start for _, start, end in task.data)
        self.stat_update("written", rows)
        return FileGroupTask(data=[str(target)], _metadata={"rows": rows})
