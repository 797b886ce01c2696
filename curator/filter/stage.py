"""The filter's engine stage: one source partition in, its kept and rejected records out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from curator.artifacts import write_json_atomic
from curator.corpus.formats import CountingSink, shard_name, summary_path
from curator.corpus.langid import LanguageModel
from curator.corpus.reading import iter_lines, iter_records
from curator.corpus.records import RecordSpec, Rejection, source_of
from curator.errors import CuratorError
from curator.filter.gates import LANGUAGE_GATE, WORD_GATE, BatchDecision, GatePlan, decide
from curator.io import shared
from curator.io.writers import atomic_file
from curator.signals.registry import REGISTRY
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask

BATCH = 2048


def _num(name: str, value: float) -> float | int | None:
    """A score as JSON: counts (integral signals, the word gate) as integers."""
    if not np.isfinite(value):
        return None
    spec = REGISTRY.get("word_count" if name == WORD_GATE else name)
    return int(value) if spec is not None and spec.grid.integral else float(value)


def counts_path(work_dir: str | Path, name: str) -> Path:
    """Where the unit that wrote shard ``name`` leaves its counters (the work area, on
    any node: :mod:`curator.io.shared`), for a failed run's report."""
    return Path(work_dir) / "counts" / f"{name}.json"


@dataclass
class CountStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Count a partition's records (non-blank lines) as ``count.input``: a failed run's
    input count for the partitions whose filter unit never finished, on the executor."""

    name: str = "count"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        n = sum(1 for path in task.data for _ in iter_lines(path, task.byte_range))
        self.stat_update("input", n)
        return FileGroupTask(data=[], _metadata={"rows": n})


@dataclass
class OnlyPartitions(ProcessingStage[EmptyTask, FileGroupTask]):
    """``inner``'s plan restricted to the partitions whose source id is in ``keep``."""

    inner: ProcessingStage[EmptyTask, FileGroupTask]
    keep: frozenset[str]
    name: str = "file_partitioning"

    def process(self, task: EmptyTask) -> list[FileGroupTask]:
        planned = self.inner.process(task)
        tasks = planned if isinstance(planned, list) else [planned] if planned else []
        return [t for t in tasks if t.get_deterministic_id() in self.keep]


@dataclass
class FilterStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Decide every record of a partition; write ``part_<i>.jsonl`` and its rejections.

    ``index`` maps a partition's source id to its position in the plan, so shard names
    follow input order whatever the executor. Counters (persisted with the partition's
    completion) feed the manifest and the ledger: ``input``, ``kept``, ``filtered.<gate>``,
    ``failed.<reason>`` (the kernel's rejection reasons, :mod:`curator.corpus.records`),
    ``source_in.<source>``, ``source_out.<source>``.
    """

    plan: GatePlan
    records: RecordSpec  # metadata_fields empty: records are kept whole
    index: dict[str, int]
    output_dir: str
    rejected_dir: str
    model: LanguageModel | None = None  # loads itself lazily in each worker
    #: where each shard's summary (rows, digest) goes, for the manifest
    work_dir: str = ""
    name: str = "filter"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        name = shard_name(self.index[sid])
        out = Path(self.output_dir) / name
        rej = Path(self.rejected_dir) / name
        kept_rows = 0
        # counted locally, handed to the engine once per partition (a stat_update per
        # record was a fifth of the filter's own time without gates)
        counts: Counter[str] = Counter()
        with atomic_file(out) as kept_file, atomic_file(rej) as rejected:
            kept = CountingSink(kept_file)
            pending: list[tuple[str, int, bytes, dict[str, Any]]] = []
            for path in task.data:
                for offset, line, record in iter_records(path, task.byte_range, self.records):
                    counts["input"] += 1
                    if type(record) is Rejection:
                        self._fail(record.reason, path, offset, rejected, counts)
                        continue
                    pending.append((path, offset, line, record))
                    if len(pending) >= BATCH:
                        kept_rows += self._flush(pending, kept, rejected, counts)
                        pending = []
            kept_rows += self._flush(pending, kept, rejected, counts)
            counts["kept"] = kept_rows
            if self.work_dir:  # before the shard appears: a shard on disk has its counts
                write_json_atomic(counts_path(self.work_dir, name), dict(sorted(counts.items())))
        for key, n in sorted(counts.items()):
            self.stat_update(key, n)
        if kept_rows == 0:
            shared.remove(out)
        elif self.work_dir:
            write_json_atomic(summary_path(self.work_dir, name), kept.summary(name))
        if rej.stat().st_size == 0:
            shared.remove(rej)
        return FileGroupTask(data=[str(out)] if kept_rows else [],
                             _metadata={"rows": kept_rows, "shard": name})

    @staticmethod
    def _fail(reason: str, path: str, offset: int, rejected: Any,
              counts: Counter[str]) -> None:
        """A line that is not a record: counted and kept with its reason."""
        counts[f"failed.{reason}"] += 1
        rejected.write(orjson.dumps({"id": None, "source": None, "removed_by": None,
                                     "failed": reason, "input": {"path": path,
                                                                  "offset": offset}}) + b"\n")

    def _source(self, record: dict) -> str:
        return source_of(record, self.records.source_field)

    def _flush(self, pending: list, kept: Any, rejected: Any, counts: Counter[str]) -> int:
        if not pending:
            return 0
        from curator.signals.scoring import score_batch

        texts = [rec[self.records.text_field] for _, _, _, rec in pending]

        def score(batch: list[str], names: list[str]) -> dict[str, np.ndarray]:
            frame = score_batch(batch, names, self.plan.pack)
            return {n: frame[n].to_numpy().astype(np.float64) for n in names}

        decision = decide(self.plan, texts, self.model, score)
        count = 0
        for i, (path, offset, line, record) in enumerate(pending):
            source = self._source(record)
            counts[f"source_in.{source}"] += 1
            if decision.kept[i]:
                kept.write(self._output_line(line, record, decision, i))
                counts[f"source_out.{source}"] += 1
                count += 1
            else:
                gate = decision.first_gate[i]
                counts[f"filtered.{gate}"] += 1
                rejected.write(self._rejection(record, source, path, offset, decision, i))
        return count

    def _output_line(self, line: bytes, record: dict, decision: BatchDecision, i: int) -> bytes:
        fields = self.records.metadata_fields
        if not fields and not decision.annotations:
            return line + b"\n"  # the input bytes, unchanged
        if fields:
            keep = [self.records.text_field, self.records.id_field, self.records.source_field,
                    *fields]
            absent = [f for f in fields if f not in record]
            if absent:
                raise CuratorError(
                    "metadata_field_absent_from_some_records",
                    f"metadata_fields {absent} are absent from record "
                    f"{record.get(self.records.id_field or 'id')!r}: list only fields every "
                    "record has",
                )
            out = {k: record[k] for k in dict.fromkeys(keep) if k is not None and k in record}
        else:
            out = dict(record)
        for name, values in decision.annotations.items():
            out[f"__{name}"] = _num(name, values[i])
        return orjson.dumps(out) + b"\n"

    def _rejection(self, record: dict, source: str, path: str, offset: int,
                   decision: BatchDecision, i: int) -> bytes:
        scores = {g: _num(g, decision.scores[g][i]) for g in decision.failed[i]}
        row: dict[str, Any] = {
            "id": record.get(self.records.id_field) if self.records.id_field else None,
            "source": source,
            "removed_by": decision.first_gate[i],
            "gates": decision.failed[i],
            "scores": scores,
            "input": {"path": path, "offset": offset},
        }
        if decision.labels is not None:
            row["language"] = decision.labels[i]
        if decision.unscored is not None and decision.unscored[i]:
            row["not_evaluated"] = [LANGUAGE_GATE]  # removed first by a cheaper gate
        return orjson.dumps(row) + b"\n"
