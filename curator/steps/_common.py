"""What the steps share: partition ids, resumable work directories, engine phases."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curator.checkpoint import METADATA_DIRNAME
from curator.execution import Executor
from curator.io.writers import write_atomic
from curator.pipeline import Pipeline, PipelineResult, Progress
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask

log = logging.getLogger("curator.steps")

ProgressHook = Callable[[str, Progress], None]


def partition_ids(partitions: ProcessingStage) -> list[str]:
    """The source ids of a partitioning stage's plan, in plan order."""
    return [t.get_deterministic_id() for t in partitions.process(EmptyTask())]


def can_resume(work: Path, ckpt_root: Path | None, config_digest: str) -> bool:
    """Whether :func:`prepare_work` will resume (the same test, without its side effects)."""
    marker = work / "config_hash"
    return (ckpt_root is not None and marker.is_file()
            and marker.read_text() == config_digest
            and any(ckpt_root.glob(f"*/{METADATA_DIRNAME}/*.mdb")))


def prepare_work(work: Path, ckpt_root: Path | None, config_digest: str) -> bool:
    """Keep a resumable run's work files, else start afresh; return whether resuming.

    Work is resumed only with a checkpoint holding completions and a work directory
    made by the same configuration (``config_digest``): another configuration's
    partial results must never be mixed in.
    """
    resuming = can_resume(work, ckpt_root, config_digest)
    if not resuming:
        if ckpt_root is not None and ckpt_root.exists():
            log.warning("checkpoint %s belongs to another configuration or its work files "
                        "are gone: starting afresh", ckpt_root)
            shutil.rmtree(ckpt_root, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    write_atomic(work / "config_hash", config_digest)
    return resuming


def run_phase(
    name: str,
    partitions: ProcessingStage,
    stage: Any,
    executor: Executor | None,
    ckpt_root: Path | None,
    on_progress: ProgressHook | None,
    prefix: str,
) -> PipelineResult:
    """One engine pass of a step: ``partitions`` then ``stage``, checkpointed per phase."""
    pipeline = Pipeline(name=f"{prefix}-{name}")
    pipeline.add_stage(partitions)
    pipeline.add_stage(stage)
    return pipeline.run(
        executor=executor,
        checkpoint_path=ckpt_root / name if ckpt_root is not None else None,
        on_progress=(lambda p: on_progress(name, p)) if on_progress else None,
    )
