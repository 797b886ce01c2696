"""A real SIGKILL of the whole run, then resume: on each backend, and across backends.

``examples/resume_demo.py`` runs as a subprocess over 12 input files with a slow
stage. Once it has reported a few partitions complete, its process group is killed
with SIGKILL: the driver, its pool workers, and, when the demo started Ray itself,
the GCS and raylet. Only the LMDB checkpoint survives. The rerun must skip exactly
what the checkpoint holds, leave those outputs untouched, and end with the bytes of
an uninterrupted run.

Backends (see ``_support.BACKENDS``): ``local`` is the process pool; ``ray`` is the
demo's own Ray, killed with it; ``ray-shared`` joins the session's Ray by address,
where the cluster outlives the killed driver.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.integration._support import (
    FILES,
    DemoRun,
    backend_kwargs,
    checkpoint_dir,
    completed_sources,
    output_name,
    outputs_by_input,
    pending_skipped,
    run_demo,
    snapshot,
    source_ids,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

DELAY = 0.4  # seconds per partition in the interrupted run (12 partitions, 2 workers)


def _kill_midway(workdir: Path, backend: dict) -> set[str]:
    """Run the demo, SIGKILL its process group after 3 partitions complete; return them."""
    with DemoRun(workdir, delay=DELAY, tag="killed", **backend) as run:
        reported = run.wait_completed(3, timeout=90)
        run.send(signal.SIGKILL, group=True)
        assert run.wait(30) == -signal.SIGKILL
        # Nothing it started outlives it: for its own Ray, the workers (in sessions of
        # their own, out of reach of the group kill) exit once their raylet is gone.
        assert run.survivors(timeout=20) == []
    done = completed_sources(checkpoint_dir(workdir))
    # What the driver reported complete is on disk; the run really was cut short.
    assert set(reported) <= done
    assert 3 <= len(done) < FILES, f"{len(done)} partitions complete: not interrupted midway"
    assert {output_name(sid) for sid in done} <= set(snapshot(workdir / "output"))
    return done


def _resume(
    workdir: Path, backend: dict, done: set[str], reference: dict[str, bytes]
) -> dict[str, tuple[int, int]]:
    """Rerun; check it skips exactly ``done``, leaves those outputs alone, and ends right."""
    before = snapshot(workdir / "output")
    code, log = run_demo(workdir, tag="resumed", **backend)
    assert code == 0, log
    assert pending_skipped(log) == (FILES - len(done), len(done))
    after = snapshot(workdir / "output")
    for sid in done:  # same inode and mtime: not rewritten
        assert after[output_name(sid)] == before[output_name(sid)], f"{sid} was re-run"
    assert outputs_by_input(workdir) == reference  # byte-identical, no stray files
    assert completed_sources(checkpoint_dir(workdir)) == set(source_ids(workdir).values())
    return after


@pytest.mark.parametrize(
    ("killed_on", "resumed_on"), [("local", "local"), ("ray", "ray-shared")]
)
def test_sigkill_then_resume_on_the_same_backend(
    tmp_path: Path,
    killed_on: str,
    resumed_on: str,
    ray_tmp: Path,
    reference: dict[str, bytes],
    request: pytest.FixtureRequest,
) -> None:
    workdir = tmp_path / "wd"
    done = _kill_midway(workdir, backend_kwargs(killed_on, ray_tmp, request))
    resumed = backend_kwargs(resumed_on, ray_tmp, request)
    after = _resume(workdir, resumed, done, reference)

    # A third run finds everything complete and touches nothing.
    code, log = run_demo(workdir, tag="third", **resumed)
    assert code == 0, log
    assert pending_skipped(log) == (0, FILES)
    assert snapshot(workdir / "output") == after


@pytest.mark.parametrize(
    ("killed_on", "resumed_on"), [("local", "ray-shared"), ("ray-shared", "local")]
)
def test_sigkill_on_one_backend_resume_on_the_other(
    tmp_path: Path,
    killed_on: str,
    resumed_on: str,
    ray_tmp: Path,
    reference: dict[str, bytes],
    request: pytest.FixtureRequest,
) -> None:
    workdir = tmp_path / "wd"
    done = _kill_midway(workdir, backend_kwargs(killed_on, ray_tmp, request))
    _resume(workdir, backend_kwargs(resumed_on, ray_tmp, request), done, reference)
