"""Two checkpointed pipelines at once on one Ray instance do not interfere (gap 3).

The reference keeps completion state in one named, detached actor per cluster, so
a second checkpointed pipeline on the same cluster shares (or kills) the first's.
Here two pipelines run at the same time, in two threads of one driver, on the
session's Ray. They read overlapping inputs (so they share source ids), apply
different transforms and keep different checkpoints. Each must process all of its
own sources (none skipped because the other completed them), record exactly its
own sources, and write what it alone would have written.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from curator.checkpoint import METADATA_DIRNAME
from curator.execution import InlineExecutor
from curator.pipeline import Pipeline, PipelineResult
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask
from curator_testing.jsonl import DocumentBatch, JsonlWriter, jsonl_reader
from executors import RayExecutor
from tests.integration._support import completed_sources, make_inputs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@dataclass
class Tag(ProcessingStage[DocumentBatch, DocumentBatch]):
    """Append ``suffix`` to every text, slowly (so the two runs overlap)."""

    suffix: str = ""
    delay: float = 0.25
    name: str = "tag"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        time.sleep(self.delay)
        df = task.to_polars().with_columns(pl.col("text") + self.suffix)
        return DocumentBatch(dataset_name=task.dataset_name, data=df,
                             _metadata=dict(task._metadata))


def _pipeline(inputs: list[Path], suffix: str, out: Path, delay: float) -> Pipeline:
    return Pipeline(
        f"tag{suffix}",
        [
            *jsonl_reader([str(p) for p in inputs], files_per_partition=1),
            Tag(suffix=suffix, delay=delay),
            JsonlWriter(path=str(out)),
        ],
    )


def test_two_pipelines_on_one_ray_keep_separate_checkpoints(
    tmp_path: Path, ray_local: None
) -> None:
    inputs = make_inputs(tmp_path / "input", 9)
    jobs = {  # overlapping inputs: files 3..5 belong to both
        "A": (inputs[:6], " [A]"),
        "B": (inputs[3:], " [B]"),
    }
    results: dict[str, PipelineResult] = {}
    errors: dict[str, BaseException] = {}
    windows: dict[str, tuple[float, float]] = {}

    def run(key: str) -> None:
        files, suffix = jobs[key]
        started = time.monotonic()
        try:
            results[key] = _pipeline(files, suffix, tmp_path / f"out-{key}", 0.25).run(
                executor=RayExecutor(workers=2), checkpoint_path=tmp_path / f"ckpt-{key}"
            )
        except BaseException as exc:  # reported by the main thread
            errors[key] = exc
        windows[key] = (started, time.monotonic())

    threads = [threading.Thread(target=run, args=(key,)) for key in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert not any(t.is_alive() for t in threads), "a pipeline did not finish"
    assert not errors, errors
    (a0, a1), (b0, b1) = windows["A"], windows["B"]
    assert a0 < b1 and b0 < a1, "the two runs did not overlap"

    for key, (files, suffix) in jobs.items():
        result = results[key]
        sids = {FileGroupTask(data=[str(p)]).get_deterministic_id() for p in files}
        assert result.sources_completed == len(files) and result.sources_skipped == 0
        assert result.sources_pending == []
        assert result.stats["jsonl_writer.rows_written"] == 50 * len(files)
        # Each checkpoint holds exactly its own pipeline's sources.
        assert completed_sources(tmp_path / f"ckpt-{key}" / METADATA_DIRNAME) == sids
        # The outputs are what this pipeline alone writes (same input paths: same names).
        alone = tmp_path / f"alone-{key}"
        _pipeline(files, suffix, alone, 0).run(executor=InlineExecutor())
        out = tmp_path / f"out-{key}"
        names = sorted(p.name for p in out.iterdir())
        assert names == sorted(p.name for p in alone.iterdir()) == sorted(
            f"{sid}.jsonl" for sid in sids
        )
        for name in names:
            assert (out / name).read_bytes() == (alone / name).read_bytes(), (key, name)

    # Rerun both (one after the other): each finds its own checkpoint complete.
    for key, (files, suffix) in jobs.items():
        again = _pipeline(files, suffix, tmp_path / f"out-{key}", 0).run(
            executor=RayExecutor(workers=2), checkpoint_path=tmp_path / f"ckpt-{key}"
        )
        assert again.sources_skipped == len(files) and again.sources_completed == 0
