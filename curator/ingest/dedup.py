"""Phase 2 of ingest: decide, over the whole corpus, what happens to duplicate ids.

"The first copy" is the one earliest in input order: sorted input path, then
byte offset (JSONL) or row (Parquet). This never depends on partitioning, the
executor, the worker count or interruptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

#: One row per later copy: where it is (``row`` is its index in the partition's staging
#: table) and what happens to it; ``id`` is its id before a rename.
DECISIONS_SCHEMA = {
    "part": pl.String, "row": pl.Int64, "ord_file": pl.Int32, "ord_pos": pl.Int64,
    "id": pl.String, "action": pl.String, "new_id": pl.String,
}


@dataclass
class DedupResult:
    decisions: pl.DataFrame
    duplicate_ids: int = 0  # copies beyond the first
    duplicate_groups: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    rejections: list[dict[str, Any]] = field(default_factory=list)


def _location(files: list[str], fmt: str, row: dict[str, Any]) -> dict[str, Any]:
    loc: dict[str, Any] = {"path": files[row["ord_file"]]}
    if fmt == "parquet":
        loc.update(line=None, row=row["line"], byte_offset=None)
    else:
        loc.update(line=row["line"], byte_offset=row["ord_pos"])
    return loc


def resolve_duplicates(
    parts: list[tuple[str, str]], mode: str, files: list[str], fmt: str
) -> DedupResult:
    """``parts`` are (source id, staging parquet path) in partition order."""
    frames = [
        pl.read_parquet(path, columns=["id", "ord_file", "ord_pos", "line"])
        .with_row_index("row")
        .with_columns(part=pl.lit(sid))
        for sid, path in parts
    ]
    empty = pl.DataFrame(schema=DECISIONS_SCHEMA)
    if not frames:
        return DedupResult(decisions=empty)
    ids = pl.concat(frames)
    dups = (
        ids.filter(pl.col("id").is_duplicated())
        .sort(["ord_file", "ord_pos"])
        .with_columns(rank=pl.col("id").cum_count().over("id") - 1)
    )
    if dups.is_empty():
        return DedupResult(decisions=empty)
    groups = dups["id"].n_unique()
    result = DedupResult(decisions=empty, duplicate_ids=dups.height - groups,
                         duplicate_groups=groups)
    first = {r["id"]: r for r in dups.filter(pl.col("rank") == 0).iter_rows(named=True)}
    for doc_id in sorted(first, key=lambda i: (first[i]["ord_file"], first[i]["ord_pos"]))[:3]:
        copies = dups.filter(pl.col("id") == doc_id)
        result.examples.append(
            {"id": doc_id, "copies": copies.height,
             "at": [_location(files, fmt, r) for r in copies.head(3).iter_rows(named=True)]}
        )
    later = dups.filter(pl.col("rank") > 0)
    if mode == "drop":
        result.decisions = later.select(
            "part", "row", "ord_file", "ord_pos", "id", action=pl.lit("drop"),
            new_id=pl.lit(None, pl.String),
        )
        for r in later.iter_rows(named=True):
            result.rejections.append(
                {**_location(files, fmt, r), "reason": "duplicate_id", "id": r["id"],
                 "first_copy": _location(files, fmt, first[r["id"]])}
            )
    elif mode == "suffix":
        used = set(ids["id"].to_list())
        new_ids = []
        for r in later.iter_rows(named=True):
            k = r["rank"]
            while f"{r['id']}-{k}" in used:
                k += 1
            new_id = f"{r['id']}-{k}"
            used.add(new_id)
            new_ids.append(new_id)
        result.decisions = later.select("part", "row", "ord_file", "ord_pos", "id").with_columns(
            action=pl.lit("rename"), new_id=pl.Series(new_ids, dtype=pl.String)
        )
    result.decisions = result.decisions.cast(DECISIONS_SCHEMA)  # type: ignore[arg-type]
    return result
