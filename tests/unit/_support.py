"""Stages and helpers shared by the unit tests (real stages, no mocks).

Stages run by :class:`~curator.execution.InlineExecutor` are pickled copies, so
anything a test wants to observe from inside a stage goes to a file (``log``),
never to an attribute of the stage object the test holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from curator.adapter import AdapterResult, StageAdapter
from curator.checkpoint import CheckpointStore
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FailedTask, Task
from curator_testing.jsonl import DocumentBatch


def batch(i: int) -> DocumentBatch:
    return DocumentBatch(data=pa.table({"i": [i], "text": [f"doc {i}"]}))


def _log(path: str | None, record: dict) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


@dataclass
class Emit(ProcessingStage[EmptyTask, DocumentBatch]):
    """A source: the root fans out to ``n`` batches, source ids ``"0".."n-1"``."""

    n: int = 3
    name: str = "emit"

    def process(self, task: EmptyTask) -> list[DocumentBatch]:
        return [batch(i) for i in range(self.n)]


@dataclass
class Step(ProcessingStage[DocumentBatch, DocumentBatch]):
    """A configurable stage: logs what it sees and filters, fails, replaces or fans out.

    ``fail``/``drop``/``empty``: source ids answered with ``FailedTask`` / ``None`` / ``[]``;
    ``fanout``: outputs per input (a list); ``fresh``: return a new object, not the input;
    ``crash``: ``(source_id, n)`` raise on the n-th input (0-based) of that source.
    """

    name: str = "step"
    fail: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    empty: tuple[str, ...] = ()
    fanout: int | None = None
    fresh: bool = False
    crash: tuple[str, int] | None = None
    log: str | None = None

    def process(self, task: DocumentBatch) -> Task | list[Task] | None:
        sid = task.source_id or ""
        _log(self.log, {"stage": self.stage_name, "source": sid, "task": task.task_id})
        self.stat_update("seen")
        if self.crash is not None and sid == self.crash[0]:
            seen = [r for r in read_log(Path(self.log or "")) if r["source"] == sid]
            if len(seen) - 1 == self.crash[1]:
                raise RuntimeError(f"crash on input {self.crash[1]} of source {sid}")
        if sid in self.fail:
            return FailedTask(reason="injected")
        if sid in self.drop:
            return None
        if sid in self.empty:
            return []
        if self.fanout is not None:
            return [DocumentBatch(data=task.data) for _ in range(self.fanout)]
        if self.fresh:
            return DocumentBatch(data=task.data)
        return task


@dataclass
class Batched(ProcessingStage[DocumentBatch, DocumentBatch]):
    """An overridden ``process_batch`` that returns ``k`` outputs whatever it is given."""

    k: int = 3
    name: str = "batched"
    batch_size: int = 2

    def process_batch(self, tasks: list[DocumentBatch]) -> list[DocumentBatch]:
        return [batch(i) for i in range(self.k)]


def source_tasks(n: int = 3) -> list[Task]:
    """Real source-stage outputs: ids ``0_0..0_{n-1}``, source ids ``"0".."n-1"``."""
    result = StageAdapter(Emit(n=n), is_source=True).process_batch([EmptyTask()])
    return result.tasks


def run_adapter(stage: ProcessingStage, inputs: list[Task], **role: bool) -> AdapterResult:
    return StageAdapter(stage, **role).process_batch(inputs)


def completed_on_disk(checkpoint: Path, reader: str = "reader-0") -> frozenset[str]:
    """What a fresh writer reads back (its own empty file is removed again)."""
    store = CheckpointStore(checkpoint, writer_id=reader)
    try:
        return store.completed
    finally:
        store.close()
        store.path.unlink(missing_ok=True)


def out_sources(tasks: list[Task]) -> list[str]:
    return sorted(t.source_id or "" for t in tasks)


def crasher_bytes(root: Path) -> bytes:
    """The bytes of a real writer file that LMDB opens and then reads past its end
    (SIGBUS in the reading process): one stats value big enough for overflow pages has
    its node's data size set to 200 MiB, off the end of the 1 GiB map's backing file."""
    import struct

    with CheckpointStore(root, writer_id="donor") as store:
        store.mark_completed({"bigsrc": {"blob": "x" * 20000}, "small": None})
        path = store.path
    data = bytearray(path.read_bytes())
    key, pos, tampered = b"bigsrc", 0, 0
    while (i := data.find(key, pos)) >= 0:
        _lo, _hi, flags, ksize = struct.unpack_from("<HHHH", data, i - 8)
        if ksize == len(key) and flags & 0x01:  # F_BIGDATA: the stats value
            size = 200 * 1024 * 1024
            struct.pack_into("<HH", data, i - 8, size & 0xFFFF, size >> 16)
            tampered += 1
        pos = i + 1
    assert tampered == 1
    path.unlink()
    return bytes(data)
