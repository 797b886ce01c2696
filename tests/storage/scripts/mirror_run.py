"""A driver whose checkpoint is a URL: ``python mirror_run.py CKPT_URL OUT_URL N DELAY
INTERVAL LOG``. Run (and SIGKILLed) by ``tests/storage/test_checkpoint_mirror.py``.

The checkpoint's local directory comes from ``$CURATE_SCRATCH_DIR``
(:func:`curator.checkpoint_mirror.resolve_checkpoint`). ``N`` source partitions each
put one object ``<OUT_URL>/<source id>.json`` (idempotent: the same name and bytes
whoever writes it) after ``DELAY`` seconds, then append ``{"source", "t"}`` to ``LOG``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

from curator.checkpoint_mirror import resolve_checkpoint
from curator.execution import InlineExecutor
from curator.io import storage
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import Task
from tests.unit._support import Emit


@dataclass
class PutEach(ProcessingStage[Task, Task]):
    """The sink: one object per source partition, then a line in the log."""

    out_url: str = ""
    delay: float = 0.0
    log: str = ""
    name: str = "put_each"

    def process(self, task: Task) -> Task:
        sid = task.source_id or ""
        time.sleep(self.delay)
        storage.write_bytes(storage.join(self.out_url, f"{sid}.json"),
                            json.dumps({"source": sid}).encode())
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"source": sid, "t": time.time()}) + "\n")
        return task


def main() -> None:
    ckpt_url, out_url, n, delay, interval, log = sys.argv[1:7]
    local, mirror = resolve_checkpoint(ckpt_url, interval=float(interval))
    assert local is not None and mirror is not None
    result = Pipeline("mirror-run", [Emit(n=int(n)), PutEach(out_url, float(delay), log)]).run(
        InlineExecutor(), checkpoint_path=local / "phase", checkpoint_mirror=mirror)
    print(json.dumps({"completed": result.sources_completed,
                      "skipped": result.sources_skipped, "local": str(local)}))


if __name__ == "__main__":
    main()
