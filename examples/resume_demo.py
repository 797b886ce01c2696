"""Interrupt-and-resume walk-through of the engine (the seed's example).

    python examples/resume_demo.py --workdir demo-run            # run; Ctrl+C midway
    python examples/resume_demo.py --workdir demo-run            # resumes; skips done partitions

Creates ``<workdir>/input/*.jsonl`` on first use, writes ``<workdir>/output`` and
keeps completion state in ``<workdir>/checkpoints/resume-demo``. The JSONL reader and
writer are the generic stages of ``curator_testing.jsonl`` (the product ships none: each
curation step brings its own stages); the engine, executors and checkpoint are curator's.
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

from curator.errors import CuratorError
from curator.pipeline import Pipeline, Progress
from curator.stages import ProcessingStage
from curator_testing.jsonl import DocumentBatch, JsonlWriter, jsonl_reader
from executors import make_executor


@dataclass
class SlowPassThrough(ProcessingStage[DocumentBatch, DocumentBatch]):
    """Delay each partition so an interrupted run is easy to observe."""

    name: str = "slow_pass_through"
    delay: float = 2.0

    def process(self, task: DocumentBatch) -> DocumentBatch:
        time.sleep(self.delay)
        return task


def make_input(folder: Path, files: int, docs_per_file: int = 50) -> None:
    """Write ``files`` small deterministic JSONL files (only if the folder is empty)."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.glob("*.jsonl")):
        return
    for f in range(files):
        with open(folder / f"part-{f:03d}.jsonl", "w", encoding="utf-8") as out:
            for d in range(docs_per_file):
                text = f"Document {d} of file {f}. " * (1 + (f * 7 + d) % 5)
                out.write(json.dumps({"id": f"{f}-{d}", "text": text.strip()}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("."))
    parser.add_argument("--executor", choices=["local", "ray"], default="local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds per partition")
    parser.add_argument("--files", type=int, default=12, help="input files to generate")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    os.chdir(args.workdir.resolve() if args.workdir.exists() else _mk(args.workdir))
    make_input(Path("input"), args.files)
    # Ray is imported only for --executor ray: the pool's spawned workers re-import
    # this module, and importing ray in each of them costs seconds.
    executor = make_executor(args.executor, workers=args.workers)

    # Absolute paths: stages run in worker processes, and a Ray worker's working
    # directory is not this one when the run joins an existing cluster (RAY_ADDRESS).
    here = Path.cwd()
    pipeline = Pipeline(name="resume-demo", stages=[
        *jsonl_reader(str(here / "input" / "*.jsonl"), files_per_partition=1, fields=["text"]),
        SlowPassThrough(delay=args.delay),
        JsonlWriter(path=str(here / "output")),
    ])
    try:
        with executor:  # closes the pool, or a Ray it started, at the end
            result = pipeline.run(
                executor=executor, checkpoint_path=here / "checkpoints" / "resume-demo",
                on_progress=_report,
            )
    except CuratorError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code

    out = here / "output"
    print(
        f"done: {result.sources_completed} partitions written in this run, "
        f"{result.sources_skipped} skipped as already complete; "
        f"{int(result.stats.get('jsonl_writer.rows_written', 0))} documents in {out}"
    )
    return 0


def _report(progress: Progress) -> None:
    """One line per finished partition; "complete" means it is recorded in the checkpoint."""
    state = "complete" if progress.completed else "NOT complete (it will be processed again)"
    logging.getLogger("resume-demo").info(
        "partition %s %s (%d/%d)", progress.source_id, state, progress.done, progress.total
    )


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


if __name__ == "__main__":
    sys.exit(main())
