"""Run a checkpointed JSONL pipeline over the given input files; print a JSON summary.

    python shard_run.py --checkpoint DIR --output DIR [--barrier DIR --parties N] FILE...

Used by the multi-writer test: several processes share one checkpoint directory.
With ``--barrier``, the first partition of each process waits until ``--parties``
processes have reached it, so the writers are provably running at the same time.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator_testing.jsonl import DocumentBatch, JsonlWriter, jsonl_reader
from executors import make_executor


@dataclass
class Rendezvous(ProcessingStage[DocumentBatch, DocumentBatch]):
    """Pass-through; on first use, wait for every party (one file per process)."""

    barrier: str = ""
    parties: int = 1
    owner: int = 0  # the driver's pid: one barrier file per pipeline run
    name: str = "rendezvous"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        if self.barrier:
            folder = Path(self.barrier)
            (folder / str(self.owner)).touch()
            deadline = time.monotonic() + 60
            while len(list(folder.iterdir())) < self.parties:
                if time.monotonic() > deadline:
                    raise TimeoutError("the other writers never started")
                time.sleep(0.02)
        return task


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--executor", default="local")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--barrier", default="")
    parser.add_argument("--parties", type=int, default=1)
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    pipeline = Pipeline(
        "shard",
        [
            *jsonl_reader([os.path.abspath(p) for p in args.inputs], files_per_partition=1),
            Rendezvous(barrier=args.barrier, parties=args.parties, owner=os.getpid()),
            JsonlWriter(path=os.path.abspath(args.output)),
        ],
    )
    started = time.time()
    result = pipeline.run(
        executor=make_executor(args.executor, workers=args.workers),
        checkpoint_path=args.checkpoint,
    )
    print(json.dumps({
        "pid": os.getpid(),
        "checkpoint_file": result.checkpoint_file.name if result.checkpoint_file else None,
        "sources_total": result.sources_total,
        "sources_skipped": result.sources_skipped,
        "sources_completed": result.sources_completed,
        "sources_pending": result.sources_pending,
        "rows_written": result.stats.get("jsonl_writer.rows_written", 0),
        "started": started,
        "finished": time.time(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
