"""``output_format: jsonl+parquet``: a Parquet copy of a step's corpus shards.

The JSONL shards stay what the step writes first: byte for byte the lines it kept,
what the next step reads and what the audit proves against the ledger. With
``jsonl+parquet`` each shard ``<output_dir>/<rel>.jsonl`` also gets
``<output_dir>/parquet/<rel>.parquet``: the same records in the same order, parsed
with the kernel's JSON semantics (orjson: the last of duplicate keys wins, as every
step decided), one column per top-level field, one schema for all the shards of a step
so that ``datasets.load_dataset("parquet", ...)`` and ``polars.scan_parquet`` read them
as one table.

Types: a field whose values share one JSON kind gets its natural column type (string,
integer or float, boolean, list, struct; a field absent from a record is null). A
field whose values are of different kinds (a number in one record, a string or an
object in another, in one shard or across shards) is stored as its JSON text, and the
step's report lists it in ``json_columns``: a value is never coerced into another
type. The copy is checked against its source: as many rows as the JSONL shard has
records, or ``parquet_export_failed``. See docs/user-guide.md, "Parquet output".
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pyarrow.parquet as pq

from curator.artifacts import file_digest
from curator.errors import CuratorError
from curator.io import shared
from curator.io.writers import atomic_file

#: the folder under a step's output_dir that holds the Parquet copy
PARQUET_DIR = "parquet"
#: ``output_format`` values: what every corpus-writing step accepts
OUTPUT_FORMATS = ("jsonl", "jsonl+parquet")

_NUMERIC = {"int", "float"}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "dict"


def _json_text(values: list[Any]) -> list[str | None]:
    return [None if v is None else orjson.dumps(v).decode() for v in values]


def _records(path: Path) -> list[dict[str, Any]]:
    """Every record of a JSONL shard, in order (blank lines are not records)."""
    try:  # a shard another node wrote is fetched (the copy is made in the driver)
        records = [orjson.loads(line) for line in shared.localize(path).read_bytes().splitlines()
                   if line.strip()]
    except orjson.JSONDecodeError as exc:
        raise CuratorError("parquet_export_failed",
                           f"{path}: a line is not JSON ({exc}); the JSONL shards are "
                           "kept: rerun with output_format: jsonl") from exc
    if not all(isinstance(r, dict) for r in records):
        raise CuratorError("parquet_export_failed",
                           f"{path}: a line is not a JSON object; the JSONL shards are "
                           "kept: rerun with output_format: jsonl")
    return records


def _same(got: Any, value: Any) -> bool:
    """Whether a value read back from a column is the record's value: the same kind (a
    number may widen), a field a struct adds being null."""
    if value is None or got is None:
        return value is None and got is None
    if isinstance(value, dict):
        return isinstance(got, dict) and all(
            _same(got.get(k), value.get(k)) for k in {*got, *value})
    if isinstance(value, list):
        return (isinstance(got, list) and len(got) == len(value)
                and all(_same(g, v) for g, v in zip(got, value, strict=True)))
    kinds = {_kind(got), _kind(value)}
    return (len(kinds) == 1 or kinds <= _NUMERIC) and got == value


def _column(name: str, values: list[Any]) -> pl.Series | None:
    """The values as one typed column, or ``None`` when no column type holds them all as
    they are (polars would drop a struct field, print a number as a string or truncate a
    float in a list: every nested or mixed column is read back and compared)."""
    kinds = {_kind(v) for v in values if v is not None}
    if len(kinds) > 1 and not kinds <= _NUMERIC:
        return None
    try:
        series = pl.Series(name, values, strict=False)
    except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
        return None  # an int beyond 128 bits
    if not _storable(series.dtype):
        return None  # a Python-object column (lists of lists and numbers): not Parquet
    if len(kinds) == 1 and kinds <= {"str", "bool", "int", "float"}:
        return series  # one scalar kind: exact
    back = series.to_list()
    if kinds <= _NUMERIC:
        return series if back == values else None  # an int too large for a float
    return series if all(_same(g, v) for g, v in zip(back, values, strict=True)) else None


def _storable(dtype: pl.DataType) -> bool:
    if isinstance(dtype, pl.Struct):
        return all(_storable(f.dtype) for f in dtype.fields)
    if isinstance(dtype, pl.List | pl.Array):
        return _storable(dtype.inner)
    return dtype != pl.Object


def _frame(records: list[dict[str, Any]], as_json: set[str]) -> tuple[pl.DataFrame, set[str]]:
    """The records as columns, and the fields that had to be stored as JSON text."""
    names = list(dict.fromkeys(k for r in records for k in r))
    columns, mixed = [], set()
    for name in names:
        values = [r.get(name) for r in records]
        series = None if name in as_json else _column(name, values)
        if series is None:
            mixed.add(name)
            series = pl.Series(name, _json_text(values), dtype=pl.String)
        columns.append(series)
    return pl.DataFrame(columns), mixed


def _fits(src: pl.DataType, dst: pl.DataType) -> bool:
    """Whether values of ``src`` keep their kind as ``dst``: the same type, null, a number
    widened, a struct with fewer fields, a list of fitting items. A string column that
    would receive numbers (polars' relaxed concat would print them) does not fit."""
    if src == dst or src == pl.Null:
        return True
    if src.is_numeric() and dst.is_numeric():
        return dst.is_float() or not src.is_float()
    if isinstance(src, pl.Struct) and isinstance(dst, pl.Struct):
        fields = {f.name: f.dtype for f in dst.fields}
        return all(f.name in fields and _fits(f.dtype, fields[f.name]) for f in src.fields)
    if isinstance(src, pl.List) and isinstance(dst, pl.List):
        return _fits(src.inner, dst.inner)
    return False


def _union(schemas: Sequence[pl.Schema]) -> tuple[pl.Schema, set[str]]:
    """One schema for all shards, and the fields no one type holds without changing a
    value's kind (a string in one shard, a number in another)."""
    seen: dict[str, list[pl.DataType]] = {}
    for schema in schemas:
        for name, dtype in schema.items():
            seen.setdefault(name, []).append(dtype)
    bad = set()
    union = {}
    for name, dtypes in seen.items():
        try:
            union[name] = pl.concat([pl.DataFrame(schema={name: d}) for d in dtypes],
                                    how="vertical_relaxed").schema[name]
        except pl.exceptions.PolarsError:
            bad.add(name)
            continue
        if not all(_fits(d, union[name]) for d in dtypes):
            bad.add(name)
    return pl.Schema(union), bad


def _write(df: pl.DataFrame, target: Path) -> None:
    buf = io.BytesIO()
    df.write_parquet(buf, compression="zstd", statistics=True)
    with atomic_file(target) as f:
        f.write(buf.getvalue())


def shard_order(paths: Iterable[Path]) -> list[Path]:
    """``part_<i>.jsonl`` files by ``i`` (``part_10`` after ``part_9``), others by name."""
    def key(p: Path) -> tuple[int, int, str]:
        tail = p.stem.removeprefix("part_")
        return (0, int(tail), p.name) if tail.isdigit() else (1, 0, p.name)
    return sorted(paths, key=key)


def parquet_path(out: Path, shard: Path) -> Path:
    """Where the Parquet copy of ``shard`` (a file under ``out``) goes."""
    return out / PARQUET_DIR / shard.relative_to(out).with_suffix(".parquet")


def _convert(shard: Path, target: Path, as_json: set[str]) -> tuple[pl.Schema, set[str], int]:
    """One shard to Parquet (its own schema); its schema, its mixed fields, its rows."""
    records = _records(shard)
    df, mixed = _frame(records, as_json)
    _write(df, target)
    return df.schema, mixed, len(records)


def export_parquet(out: Path, shards: Sequence[Path]) -> dict[str, Any]:
    """Write the Parquet copy of ``shards`` (JSONL files under ``out``); return the block
    the step's completion artifact carries under ``parquet``: the columns, the fields
    stored as JSON text, and per shard its name, source, rows and sha256.

    One shard is in memory at a time. A shard is converted again only when a later shard
    shows that a field it typed must be JSON text; one whose schema lacks a column or
    has a narrower number type than the others is widened from its Parquet copy.
    """
    targets = [parquet_path(out, s) for s in shards]
    as_json: set[str] = set()
    schemas: list[pl.Schema] = []
    rows: list[int] = []
    written_with: list[set[str]] = []
    for shard, target in zip(shards, targets, strict=True):
        schema, mixed, n = _convert(shard, target, as_json)
        as_json |= mixed
        schemas.append(schema)
        rows.append(n)
        written_with.append(set(as_json))
    while True:
        schema, bad = _union(schemas)
        as_json |= bad
        stale = [i for i, s in enumerate(schemas)
                 if any(name in as_json and name not in written_with[i] for name in s)]
        if not stale:
            break
        for i in stale:
            schemas[i], _, rows[i] = _convert(shards[i], targets[i], as_json)
            written_with[i] = set(as_json)
    entries = []
    for shard, target, own, n in zip(shards, targets, schemas, rows, strict=True):
        if own != schema:  # a column it lacks, a narrower type: widened to the union
            _write(pl.concat([pl.DataFrame(schema=schema), pl.read_parquet(target)],
                             how="diagonal_relaxed"), target)
        written = pq.ParquetFile(target).metadata.num_rows
        if written != n:
            raise CuratorError("parquet_export_failed",
                               f"{target}: {written} rows written for the {n} records of "
                               f"{shard}; the JSONL shards are kept")
        entries.append({"name": target.relative_to(out).as_posix(),
                        "from": shard.relative_to(out).as_posix(),
                        "rows": n, "sha256": file_digest(target)})
    return {"dir": PARQUET_DIR,
            "columns": {name: str(dtype) for name, dtype in schema.items()},
            "json_columns": sorted(as_json),
            "rows": sum(rows),
            "shards": entries}
