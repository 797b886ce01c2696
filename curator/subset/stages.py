"""The subset's engine passes, one unit per source partition.

**count**: every record of the partition read through the kernel's reader; a record
without text or id is skipped and counted; each document's units counted (or taken
from the token cache), its id hashed into the global order (the kernel's
``stable_uint64(seed, id)``); written to
``<work>/count/<i>.parquet`` (id, hash, tokens, source, score, file, offset); the
same documents (hash, id, tokens, source, score, partition, row) sent through the
exchange, range-partitioned by the hash (:mod:`curator.subset.ranges`).

**write**: the partition's lines copied, byte for byte, into every tier they belong
to (``<tier>/part_<i>.jsonl``), located by the offsets the count pass recorded; no
JSON is parsed again. Each row's first tier comes from the select units, by partition.
The writer reads its shards back and checks, here, that each tier holds exactly the
partition's planned ids and that the tiers nest; the driver sums its counts.

**Token cache**: one Parquet file per source partition (``<cache>/<sha256(partition)>
.parquet``: id, sha256 of the text, count), whose metadata names the cache version
and the tokenizer's name and revision; a file of another tokenizer is ignored. A
document is a hit when its id and text digest are both in the file.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from curator.corpus.formats import shard_name
from curator.corpus.reading import iter_lines, iter_records, map_lines
from curator.corpus.records import (
    MISSING_ID,
    NOT_A_RECORD,
    RecordSpec,
    Rejection,
    id_of,
    source_of,
)
from curator.corpus.sampling import stable_uint64
from curator.errors import CuratorError
from curator.exchange import Exchange
from curator.io import shared
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.subset.counting import TokenizerId, count
from curator.subset.ranges import first_tiers
from curator.tasks import FileGroupTask

CACHE_VERSION = "3"
#: the source of every document when there is no source field
ALL = "all"


def count_file(work: str | Path, index: int) -> Path:
    return Path(work) / "count" / f"{index}.parquet"


def written_file(work: str | Path, index: int) -> Path:
    """What a partition's writer read back from the tier shards it wrote: per tier the
    ids written and planned (counts), and whether they were the same set."""
    return Path(work) / "written" / f"{index}.json"


def written_ids(path: Path, field: str) -> list[str]:
    """The ids in a tier shard, as the plan's strings: read by polars when the column is
    strings or integers (their ``str`` is the same), else line by line."""
    try:
        column = pl.read_ndjson(path, infer_schema_length=None).get_column(field)
    except (pl.exceptions.PolarsError, OSError):
        column = None
    if column is not None and (column.dtype == pl.String or column.dtype.is_integer()) \
            and not column.null_count():
        return column.cast(pl.String).to_list()
    return [str(orjson.loads(line)[field]) for _, line in iter_lines(str(path))]


def tier_dir(budget: int, unit: str) -> str:
    return f"budget_{budget}_{unit}"


def _write_parquet(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as f:
        pq.write_table(table, f, compression="zstd")


class TokenCache:
    """The cached counts of one partition (see the module docstring)."""

    def __init__(self, root: str, sid: str, tok: TokenizerId) -> None:
        self.path = Path(root) / (hashlib.sha256(sid.encode()).hexdigest()[:32] + ".parquet")
        self.meta = {b"cache_version": CACHE_VERSION.encode(),
                     b"tokenizer": str(tok.name).encode(),
                     b"revision": str(tok.revision).encode()}
        self.known: dict[str, tuple[bytes, int]] = {}
        try:
            table = pq.read_table(self.path)
        except (OSError, pa.ArrowInvalid):
            return
        meta = table.schema.metadata or {}
        if any(meta.get(k) != v for k, v in self.meta.items()):
            return  # another tokenizer's (or version's) counts: ignored
        for i, d, t in zip(table["id"].to_pylist(), table["sha256"].to_pylist(),
                           table["tokens"].to_pylist(), strict=True):
            self.known[i] = (d, t)

    def get(self, doc_id: str, digest: bytes) -> int | None:
        hit = self.known.get(doc_id)
        return hit[1] if hit is not None and hit[0] == digest else None

    def save(self, ids: list[str], digests: list[bytes], tokens: list[int]) -> None:
        schema = pa.schema([("id", pa.string()), ("sha256", pa.binary(32)),
                            ("tokens", pa.int64())], metadata=self.meta)
        table = pa.table({"id": ids, "sha256": digests, "tokens": tokens}, schema=schema)
        _write_parquet(self.path, table)


@dataclass
class CountStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Count one source partition (see the module docstring)."""

    records: RecordSpec  # require_id=True
    tokenizer: TokenizerId
    seed: int
    score_field: str | None
    index: dict[str, int]
    work_dir: str
    cache_dir: str | None  # None: no cache (whitespace words)
    exchange: Exchange | None = None  # the plan's: every document, by its hash's range
    name: str = "count"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        i = self.index[sid]
        spec = self.records
        ids: list[str] = []
        texts: list[str] = []
        sources: list[str] = []
        scores: list[float] = []
        files: list[int] = []
        offsets: list[int] = []
        stats: dict[str, int] = {}
        for f, path in enumerate(task.data):
            for offset, _, record in iter_records(path, task.byte_range, spec):
                stats["records"] = stats.get("records", 0) + 1
                if type(record) is Rejection:
                    if record.reason in NOT_A_RECORD:
                        key = "unparsable_lines"
                        shard = f"unparsable_by_shard.{path}"
                        stats[shard] = stats.get(shard, 0) + 1
                    else:
                        key = ("skipped_missing_id" if record.reason == MISSING_ID
                               else "skipped_missing_text")
                    stats[key] = stats.get(key, 0) + 1
                    continue
                doc_id = id_of(record, spec)
                assert doc_id is not None  # require_id
                ids.append(doc_id)
                texts.append(record[spec.text_field])
                sources.append(source_of(record, spec.source_field, ALL))
                if self.score_field is not None:
                    scores.append(self._score(record, doc_id))
                files.append(f)
                offsets.append(offset)
        tokens = self._count(sid, ids, texts, stats)
        bad = [(d, t) for d, t in zip(ids, tokens, strict=True) if t <= 0]
        if bad:
            raise CuratorError("token_count_non_positive",
                               f"{len(bad)} documents count no {self.tokenizer.unit}, e.g. "
                               f"{bad[:3]}: a document must count at least one")
        table = pa.table({
            "id": pa.array(ids, pa.string()),
            "hash": pa.array([stable_uint64(self.seed, d) for d in ids], pa.uint64()),
            "tokens": pa.array(tokens, pa.int64()),
            "source": pa.array(sources, pa.string()),
            "score": pa.array(scores if self.score_field else [None] * len(ids),
                              pa.float64()),
            "file": pa.array(files, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
        })
        _write_parquet(count_file(self.work_dir, i), table)
        if self.exchange is not None:
            frame = pl.from_arrow(table.select(["hash", "id", "tokens", "source", "score"]))
            assert isinstance(frame, pl.DataFrame)
            self.exchange.write(f"p{i:08d}", frame.with_columns(
                part=pl.lit(i, pl.Int32), row=pl.int_range(pl.len(), dtype=pl.Int64)),
                "hash", ranged=True)
        stats["documents"] = len(ids)
        for key, n in sorted(stats.items()):
            self.stat_update(key, n)
        return FileGroupTask(data=[str(count_file(self.work_dir, i))],
                             _metadata={"rows": len(ids)})

    def _score(self, record: dict[str, Any], doc_id: str) -> float:
        field = self.score_field
        if field not in record:
            raise CuratorError("quality_score_field_absent",
                               f"quality_score_field {field!r} is absent from record "
                               f"{doc_id!r}")
        value = record[field]
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value):
            raise CuratorError("quality_score_non_finite",
                               f"record {doc_id!r}: {field} is {value!r}, not a finite number")
        return float(value)

    def _count(self, sid: str, ids: list[str], texts: list[str],
               stats: dict[str, int]) -> list[int]:
        if self.cache_dir is None:
            return count(self.tokenizer, texts)
        cache = TokenCache(self.cache_dir, sid, self.tokenizer)
        digests = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest() for t in texts]
        tokens: list[int] = []
        todo: list[int] = []
        for j, (d, h) in enumerate(zip(ids, digests, strict=True)):
            hit = cache.get(d, h)
            tokens.append(hit if hit is not None else 0)
            if hit is None:
                todo.append(j)
        counted = count(self.tokenizer, [texts[j] for j in todo])
        for j, n in zip(todo, counted, strict=True):
            tokens[j] = n
        stats["cache_hits"] = len(ids) - len(todo)
        stats["cache_misses"] = len(todo)
        if todo or not cache.path.is_file():
            cache.save(ids, digests, tokens)
        return tokens


@dataclass
class WriteStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Copy one partition's documents into the tiers they belong to."""

    tiers: list[str]  # tier directories, smallest budget first
    index: dict[str, int]
    work_dir: str
    output_dir: str
    id_field: str = "id"
    name: str = "write"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        i = self.index[sid]
        table = pq.read_table(shared.localize(count_file(self.work_dir, i)),
                              columns=["id", "file", "offset"])
        first = first_tiers(self.work_dir, i, table.num_rows, len(self.tiers))
        files = table["file"].to_numpy()
        offsets = table["offset"].to_numpy()
        chosen = np.flatnonzero(first < len(self.tiers))
        outs = [Path(self.output_dir) / t / shard_name(i) for t in self.tiers]
        written = [0] * len(self.tiers)
        with ExitStack() as stack:
            handles = []
            for out in outs:
                out.parent.mkdir(parents=True, exist_ok=True)
                handles.append(stack.enter_context(atomic_file(out)))
            for f, path in enumerate(task.data):
                rows = chosen[files[chosen] == f]
                if not len(rows):
                    continue
                buf, _, _ = map_lines(path, task.byte_range)
                size = len(buf)
                for r in rows.tolist():
                    off = int(offsets[r])
                    nl = buf.find(b"\n", off, size)
                    line = buf[off:nl if nl >= 0 else size] + b"\n"
                    for t in range(int(first[r]), len(self.tiers)):
                        handles[t].write(line)
                        written[t] += 1
        for out, n in zip(outs, written, strict=True):
            if not n:
                shared.remove(out)
        # read back here, on the node that wrote them, and checked against the plan
        ids = np.asarray(table["id"].to_pylist(), dtype=object)
        got = [written_ids(out, self.id_field) if n else [] for out, n in zip(outs, written,
                                                                              strict=True)]
        planned = [set(ids[first <= t].tolist()) for t in range(len(self.tiers))]
        same = [len(g) == len(p) and set(g) == p for g, p in zip(got, planned, strict=True)]
        nested = all(set(a) <= set(b) for a, b in itertools.pairwise(got))
        write_atomic(written_file(self.work_dir, i), orjson.dumps(
            {"written": [len(g) for g in got], "planned": [len(p) for p in planned],
             "same": same, "nested": nested}))
        self.stat_update("documents", len(first))
        for t, n in enumerate(written):
            self.stat_update(f"written.{t}", n)
        return FileGroupTask(data=[str(o) for o, n in zip(outs, written, strict=True) if n],
                             _metadata={"rows": len(chosen)})
