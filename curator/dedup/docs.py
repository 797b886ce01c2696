"""One input partition's documents, as the dedup phases read them: labels, ids, texts,
and the payload a pair's other side needs (shingle set or signature)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa

from curator.corpus.reading import iter_lines
from curator.corpus.records import MISSING_ID, RecordSpec, Rejection, classify_line, source_of
from curator.dedup.labels import MAX_FILES, OFFSET_BITS, make_labels
from curator.dedup.minhash import DEFAULT_PARAMS, MinHashParams, estimate, signatures
from curator.dedup.shingles import (
    DEFAULT_SHINGLING,
    ShingleSets,
    Shingling,
    jaccard,
    shingle_sets,
)
from curator.errors import CuratorError
from curator.exchange import key_hash
from curator.tasks import FileGroupTask

PAYLOAD = pl.List(pl.UInt64)


@dataclass(frozen=True)
class Rules:
    """What decides: the fields, the shingling, the MinHash, the threshold, the keep rule."""

    id_field: str
    text_field: str = "text"
    source_field: str | None = None
    shingling: Shingling = DEFAULT_SHINGLING
    params: MinHashParams = DEFAULT_PARAMS
    threshold: float = 0.8
    verify: bool = True
    keep: str = "hash"

    def spec(self) -> RecordSpec:
        return RecordSpec(text_field=self.text_field, id_field=self.id_field, require_id=True)

    def rank(self, record: dict[str, Any], text: str) -> float:
        """The keep rule's primary key (smaller survives)."""
        if self.keep == "hash":
            return 0.0
        if self.keep == "longest":
            return -float(len(text))
        value = record.get(self.keep[len("score:"):])
        if isinstance(value, int | float) and not isinstance(value, bool):
            v = float(value)
            if math.isfinite(v):
                return -v
        return math.inf


def lines(task: FileGroupTask, file_index: dict[str, int]) -> Iterator[tuple[int, bytes]]:
    """``(node, line)`` of every non-blank line of the partition, in input order."""
    for path in task.data:
        f = file_index[path]
        if f >= MAX_FILES:
            raise CuratorError("config_error", f"more than {MAX_FILES} input files")
        for offset, line in iter_lines(path, task.byte_range):
            yield (f << OFFSET_BITS) | offset, line


@dataclass
class Docs:
    """A partition's compared documents (rows in input order) and what was skipped."""

    frame: pl.DataFrame  # label, node, id, text, source
    skipped: Counter[str] = field(default_factory=Counter)
    records: dict[int, dict[str, Any]] = field(default_factory=dict)  # node -> record


def read_docs(task: FileGroupTask, rules: Rules, file_index: dict[str, int], part: int,
              want: set[int] | None = None, keep_records: bool = False) -> Docs:
    """The partition's documents (only the nodes in ``want`` when given)."""
    spec = rules.spec()
    nodes: list[int] = []
    ids: list[str] = []
    texts: list[str] = []
    ranks: list[float] = []
    sources: list[str] = []
    docs = Docs(pl.DataFrame())
    for node, line in lines(task, file_index):
        if want is not None and node not in want:
            continue
        record = classify_line(line, spec)
        if type(record) is Rejection:
            if record.reason == MISSING_ID:
                raise CuratorError(
                    "id_field_missing_or_duplicated",
                    f"{task.data[0]}: a record at node {node} has no {rules.id_field!r} "
                    "(id_field is required)")
            docs.skipped[record.reason] += 1
            continue
        assert isinstance(record, dict)
        text = record[rules.text_field]
        nodes.append(node)
        ids.append(str(record[rules.id_field]))
        texts.append(text)
        ranks.append(rules.rank(record, text))
        sources.append(source_of(record, rules.source_field))
        if keep_records:
            docs.records[node] = record
    id_series = pl.Series("id", ids, dtype=pl.String)
    labels = make_labels(np.array(ranks, np.float64), key_hash(id_series),
                         np.array(nodes, np.int64), part)
    docs.frame = pl.DataFrame({"label": labels, "node": pl.Series(nodes, dtype=pl.Int64),
                               "id": id_series, "text": pl.Series(texts, dtype=pl.String),
                               "source": pl.Series(sources, dtype=pl.String)})
    return docs


def payloads(texts: pl.Series, rules: Rules) -> pl.Series:
    """What a pair's other side needs of each text: its sorted distinct shingle hashes
    (``verify``), else its signature."""
    if rules.verify:
        sets = shingle_sets(texts, rules.shingling)
        offsets, values = sets.offsets.astype(np.int64), sets.hashes
    else:
        sig, _ = signatures(texts, rules.shingling, rules.params)
        width = sig.shape[1]
        offsets = np.arange(0, sig.shape[0] * width + 1, width, dtype=np.int64)
        values = sig.ravel().astype(np.uint64)
    arr = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()),
                                        pa.array(values, pa.uint64()))
    return pl.Series("payload", arr, dtype=PAYLOAD)


def _csr(s: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    lens = s.list.len().to_numpy().astype(np.int64)
    offsets = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    flat = s.explode().drop_nulls().to_numpy().astype(np.uint64) if len(s) else \
        np.zeros(0, np.uint64)
    return offsets, flat


def similarity(left: pl.Series, right: pl.Series, rules: Rules) -> np.ndarray:
    """The similarity of each aligned pair of payloads: exact Jaccard (``verify``), else
    the signature estimate."""
    n = len(left)
    if n == 0:
        return np.zeros(0, np.float64)
    lo, lf = _csr(left)
    ro, rf = _csr(right)
    if rules.verify:
        sets = ShingleSets(np.concatenate([lo, ro[1:] + lo[-1]]), np.concatenate([lf, rf]))
        return jaccard(sets, np.arange(n), np.arange(n, 2 * n))
    width = rules.params.num_perm
    sig = np.concatenate([lf, rf]).astype(np.uint32).reshape(2 * n, width)
    return estimate(sig, np.ones(2 * n, np.bool_), np.arange(n), np.arange(n, 2 * n))


def loads(line: bytes) -> dict[str, Any]:
    return dict(orjson.loads(line))
