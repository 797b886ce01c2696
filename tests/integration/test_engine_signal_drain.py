"""SIGTERM and SIGINT drain the run; a second signal abandons it.

Signals go to the driver alone (``kill PID``) or to its whole process group (Ctrl+C
in a terminal, a batch scheduler's time limit). Either way the driver stops taking
new partitions, lets the running ones finish, records them, and exits with
128+signal and a message saying how to resume. Throughout the run and after it,
every ``*.jsonl`` visible in the output folder is whole.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.integration._support import (
    FILES,
    DemoRun,
    backend_kwargs,
    check_visible_outputs,
    checkpoint_dir,
    completed_sources,
    output_name,
    outputs_by_input,
    pending_skipped,
    run_demo,
    snapshot,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

DELAY = 0.5  # seconds per partition: 12 partitions on 2 workers need 3 s after the start


@pytest.mark.parametrize(
    ("backend", "sig", "to_group"),
    [
        ("local", signal.SIGTERM, False),
        ("local", signal.SIGINT, True),
        # A batch scheduler's time limit signals every process of the job: the pool
        # workers must not die mid-partition.
        ("local", signal.SIGTERM, True),
        # The demo's own Ray: Ctrl+C also reaches the GCS and raylet in its group.
        ("ray", signal.SIGINT, True),
    ],
    ids=["local-sigterm-driver", "local-sigint-group", "local-sigterm-group",
         "ray-sigint-group"],
)
def test_signal_drains_records_and_exits_nonzero(
    tmp_path: Path,
    backend: str,
    sig: signal.Signals,
    to_group: bool,
    ray_tmp: Path,
    reference: dict[str, bytes],
    request: pytest.FixtureRequest,
) -> None:
    workdir = tmp_path / "wd"
    out = workdir / "output"
    kwargs = backend_kwargs(backend, ray_tmp, request)
    with DemoRun(workdir, delay=DELAY, tag="interrupted", **kwargs) as run:
        run.wait_completed(2, timeout=90, check=check_visible_outputs)
        sent = time.monotonic()
        run.send(sig, group=to_group)
        # Poll to the exit, checking that no partial output ever becomes visible.
        while run.poll() is None:
            check_visible_outputs(out)
            assert time.monotonic() - sent < 2 * DELAY + 20, "the drain did not end"
            time.sleep(0.05)
        elapsed = time.monotonic() - sent
        code = run.wait(0)
        stderr = run.stderr()

    name = signal.Signals(sig).name
    assert code == 128 + sig, f"exit code {code}\n{stderr}"
    # Bounded: the in-flight partitions (at most DELAY each) plus shutting down (Ray's
    # shutdown takes seconds on a loaded 2-core machine).
    assert elapsed < 2 * DELAY + 15, f"took {elapsed:.1f}s to exit after {name}"
    assert f"{name} received: starting no new partitions" in stderr
    assert f"interrupted by {name}" in stderr
    assert "Rerun with the same checkpoint_path" in stderr
    # No partition failed: the running ones were drained, not killed.
    assert "Traceback" not in stderr and " ERROR " not in stderr, stderr

    # It stopped early, and everything it wrote is recorded: the running partitions
    # were waited for, not abandoned half-way.
    visible = check_visible_outputs(out)
    done = completed_sources(checkpoint_dir(workdir))
    assert 2 <= len(done) < FILES, f"{len(done)} partitions complete: no early stop"
    assert set(visible) == {output_name(sid) for sid in done}
    assert f"{len(done)} source partitions completed in this run, {FILES - len(done)} not" in (
        stderr
    )

    # The rerun (local, quick) skips what was recorded and leaves it untouched.
    before = snapshot(out)
    code, log = run_demo(workdir, executor="local", tag="resumed")
    assert code == 0, log
    assert pending_skipped(log) == (FILES - len(done), len(done))
    after = snapshot(out)
    for sid in done:
        assert after[output_name(sid)] == before[output_name(sid)], f"{sid} was re-run"
    assert outputs_by_input(workdir) == reference


def test_second_signal_abandons_running_partitions_at_once(tmp_path: Path) -> None:
    """The first SIGTERM drains; a second stops at once: running partitions are
    abandoned (their workers killed), not recorded, and nothing is left running."""
    slow = 4.0  # per partition: far longer than the exit may take
    workdir = tmp_path / "wd"
    with DemoRun(workdir, executor="local", delay=slow, tag="abandoned") as run:
        done_before = set(run.wait_completed(2, timeout=90))
        run.send(signal.SIGTERM, group=True)
        time.sleep(0.3)
        sent = time.monotonic()
        run.send(signal.SIGTERM, group=True)
        code = run.wait(30)
        elapsed = time.monotonic() - sent
        stderr = run.stderr()
        assert run.survivors(timeout=5) == []
    assert code == 128 + signal.SIGTERM, stderr
    assert elapsed < slow / 2, f"took {elapsed:.1f}s: the running partitions were waited for"
    assert "interrupted by SIGTERM" in stderr
    # Only what completed before the signals is recorded, and only that is visible.
    done = completed_sources(checkpoint_dir(workdir))
    assert done == done_before
    assert set(check_visible_outputs(workdir / "output")) == {output_name(s) for s in done}
