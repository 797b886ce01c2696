"""The audit's checker of a step's Parquet copy (``output_format: jsonl+parquet``).

A corpus-writing step's completion artifact lists, under ``parquet``, each Parquet file
with the JSONL shard it copies, its rows and its sha256. Proved from disk, without the
code that wrote it (``curator.io.parquet_export`` is not imported; pyarrow reads the
files, orjson the shards):

- every listed file exists inside the artifact's directory (``parquet_copy_missing``;
  a name that leaves the directory is ``parquet_path_outside_output`` and is not read);
- its sha256 is the listed one (``parquet_digest_mismatch``);
- it has the listed rows, and as many as its JSONL shard has records
  (``parquet_row_count_mismatch``);
- each row is its shard's record, in order: every field's value, with the fields listed
  in ``json_columns`` read back from their JSON text (``parquet_records_differ``, with
  the first rows that differ);
- no Parquet file under the copy's folder is unlisted (``parquet_unlisted_file``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from curator import models
from curator.artifacts import file_digest
from curator.audit.checks import EXAMPLES, Block, Finding, finding
from curator.errors import CuratorError
from curator.models import CompletionArtifact, ParquetCopy


def _artifact(path: Path) -> CompletionArtifact:
    """The completion artifact through the base model (its ``parquet`` block typed)."""
    return models.read(CompletionArtifact, path)


def has_parquet_copy(path: Path) -> bool:
    """Whether a completion artifact lists a Parquet copy (the checker applies); a
    malformed one is its own step checker's finding."""
    try:
        return _artifact(path).parquet is not None
    except (OSError, CuratorError):
        return False


def _equal(got: Any, want: Any) -> bool:
    """A Parquet value against the record's: numbers may widen, a struct's extra fields
    are null, nothing else may differ (a string is never a number)."""
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_equal(got.get(k), want.get(k))
                                             for k in {*got, *want})
    if isinstance(want, list):
        return (isinstance(got, list) and len(got) == len(want)
                and all(_equal(g, w) for g, w in zip(got, want, strict=True)))
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, int | float) and isinstance(got, int | float):
        return got == want or (isinstance(want, float) and math.isnan(want)
                               and isinstance(got, float) and math.isnan(got))
    return type(got) is type(want) and got == want


def _inside(root: Path, name: Any) -> Path | None:
    if not isinstance(name, str) or not name:
        return None
    path = (root / name).resolve()
    return path if path.is_relative_to(root.resolve()) else None


def _records(path: Path) -> list[Any]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _differing_rows(copy: Path, shard: Path, json_columns: set[str]) -> list[int]:
    rows = pq.read_table(copy).to_pylist()
    records = _records(shard)
    bad = []
    for i, (row, rec) in enumerate(zip(rows, records, strict=False)):
        if not isinstance(rec, dict) or not set(rec) <= set(row):
            bad.append(i)
            continue
        for key, got in row.items():
            if key in json_columns and got is not None:
                try:
                    got = orjson.loads(got)
                except orjson.JSONDecodeError:
                    bad.append(i)
                    break
            if not _equal(got, rec.get(key)):
                bad.append(i)
                break
        if len(bad) >= EXAMPLES:
            break
    return bad


def check_parquet_copy(path: Path) -> Block:
    """Prove the Parquet copy a completion artifact lists (module docstring)."""
    try:
        block_in = _artifact(path).parquet or ParquetCopy()
    except (OSError, CuratorError) as exc:
        message = exc.message if isinstance(exc, CuratorError) else f"{path}: {exc}"
        return None, [finding("parquet_listing_unreadable", message)]
    root = path.parent
    findings: list[Finding] = []
    json_columns = set(block_in.json_columns or [])
    listed: set[Path] = set()
    rows_total = 0
    entries = block_in.shards or []
    for entry in entries:
        copy, shard = _inside(root, entry.name), _inside(root, entry.from_)
        if copy is None or shard is None:
            findings.append(finding("parquet_path_outside_output",
                                    f"{entry.name!r} / {entry.from_!r}: a "
                                    f"listed path leaves {root}; not read"))
            continue
        listed.add(copy)
        if not copy.is_file() or not shard.is_file():
            missing = copy if not copy.is_file() else shard
            findings.append(finding("parquet_copy_missing", f"{missing} is listed but absent"))
            continue
        if file_digest(copy) != entry.sha256:
            findings.append(finding("parquet_digest_mismatch",
                                    f"{copy.name}: sha256 differs from the listed one"))
        try:
            rows = pq.ParquetFile(copy).metadata.num_rows
            records = len(_records(shard))
        except (OSError, ValueError) as exc:  # pyarrow's errors derive from both
            findings.append(finding("parquet_records_differ",
                                    f"{copy.name} or {shard.name} cannot be read: {exc}"))
            continue
        rows_total += rows
        if not rows == records == entry.rows:
            findings.append(finding("parquet_row_count_mismatch",
                                    f"{copy.name}: {rows} rows, {records} records in "
                                    f"{shard.name}, {entry.rows} listed"))
            continue
        try:
            bad = _differing_rows(copy, shard, json_columns)
        except (OSError, ValueError) as exc:  # a damaged page: its metadata read fine
            findings.append(finding("parquet_records_differ",
                                    f"{copy.name} cannot be read: {exc}"))
            continue
        if bad:
            findings.append(finding("parquet_records_differ",
                                    f"{copy.name}: rows {bad} differ from {shard.name}",
                                    rows=bad))
    folder = _inside(root, block_in.dir or "parquet")
    if folder is not None and folder.is_dir():
        for extra in sorted(p for p in folder.rglob("*.parquet") if p.resolve() not in listed):
            findings.append(finding("parquet_unlisted_file",
                                    f"{extra} is in the copy's folder but not listed"))
    block = {"files": len(entries), "rows": rows_total,
             "listed_rows": block_in.rows, "json_columns": sorted(json_columns)}
    return block, findings
