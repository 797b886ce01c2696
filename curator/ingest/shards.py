"""Phase 3 of ingest: accepted records, in input order, into ``part_<n>.jsonl`` shards."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from curator.io.writers import write_atomic
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


def kept_frame(staging: Path, decisions: pl.DataFrame) -> pl.DataFrame:
    """A staged partition without dropped duplicates and with renamed ids applied."""
    df = pl.read_parquet(staging, columns=["ord_file", "ord_pos", "id", "text", "source", "kept"])
    if decisions.is_empty():
        return df
    drops = decisions.filter(pl.col("action") == "drop").select("ord_file", "ord_pos")
    renames = decisions.filter(pl.col("action") == "rename").select("ord_file", "ord_pos",
                                                                    "new_id")
    if not drops.is_empty():
        df = df.join(drops, on=["ord_file", "ord_pos"], how="anti", maintain_order="left")
    if not renames.is_empty():
        df = df.join(renames, on=["ord_file", "ord_pos"], how="left", maintain_order="left")
        df = df.with_columns(id=pl.coalesce("new_id", "id")).drop("new_id")
    return df


def jsonl_lines(df: pl.DataFrame) -> bytes:
    """Canonical records ``{text, id, source, kept...}`` as JSONL bytes."""
    if df.is_empty():
        return b""
    core = pl.struct("text", "id", "source").struct.json_encode()
    line = (
        pl.when(pl.col("kept").str.len_bytes() > 2)
        .then(pl.concat_str(core.str.head(-1), pl.lit(","), pl.col("kept").str.tail(-1)))
        .otherwise(core)
    )
    out = df.select(line.alias("line"))["line"]
    return ("\n".join(out.to_list()) + "\n").encode("utf-8")


@dataclass
class ShardWriterStage(ProcessingStage[ShardTask, FileGroupTask]):
    staging_dir: str
    output_dir: str
    decisions_path: str
    name: str = "ingest_shard_writer"

    def process(self, task: ShardTask) -> FileGroupTask:
        decisions = pl.read_parquet(self.decisions_path)
        pieces = []
        for sid, start, end in task.data:
            frame = kept_frame(Path(self.staging_dir) / f"{sid}.parquet",
                               decisions.filter(pl.col("part") == sid))
            pieces.append(jsonl_lines(frame.slice(start, end - start)))
        target = Path(self.output_dir) / f"part_{task.index}.jsonl"
        write_atomic(target, b"".join(pieces))
        rows = sum(end - start for _, start, end in task.data)
        self.stat_update("written", rows)
        return FileGroupTask(data=[str(target)], _metadata={"rows": rows})
