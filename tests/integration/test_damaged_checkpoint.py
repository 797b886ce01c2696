"""A writer file whose data pages are damaged between runs: skipped, named, replayed.

Two interrupted runs leave two writer files (each run records its own partitions
in its own ``<host>-<pid>.mdb``). The first file's data pages are then overwritten:
it still opens, and fails only when read (the case that aborts the reference).
The next run must warn naming that file, process its sources again, keep the other
file's, and end with the bytes of an uninterrupted run.
"""

from __future__ import annotations

import signal
from pathlib import Path

import lmdb
import pytest

from curator.checkpoint import read_checkpoint_file
from tests.integration._support import (
    FILES,
    DemoRun,
    checkpoint_dir,
    output_name,
    outputs_by_input,
    pending_skipped,
    run_demo,
    snapshot,
    writer_files,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

PAGE = 4096  # pages 0 and 1 are LMDB's meta pages; everything after holds data


def _interrupted_run(workdir: Path, tag: str, partitions: int) -> None:
    with DemoRun(workdir, executor="local", delay=0.4, tag=tag) as run:
        run.wait_completed(partitions, timeout=60)
        run.send(signal.SIGTERM)
        assert run.wait(30) == 128 + signal.SIGTERM, run.stderr()


def _damage_data_pages(path: Path) -> None:
    size = path.stat().st_size
    assert size > 2 * PAGE
    with open(path, "r+b") as f:
        f.seek(2 * PAGE)
        f.write(b"\xff" * (size - 2 * PAGE))


def test_damaged_writer_file_is_skipped_and_its_sources_replay(
    tmp_path: Path, reference: dict[str, bytes]
) -> None:
    workdir = tmp_path / "wd"
    meta = checkpoint_dir(workdir)
    _interrupted_run(workdir, "first", 1)
    (damaged,) = writer_files(meta)
    lost = read_checkpoint_file(damaged)[0]
    _interrupted_run(workdir, "second", 1)
    (kept,) = [p for p in writer_files(meta) if p != damaged]
    survived = read_checkpoint_file(kept)[0]
    # (under load the two drains may between them finish every source; that is fine:
    # what matters is that the damaged file's sources are replayed and the others not)
    assert lost and survived and not lost & survived

    _damage_data_pages(damaged)
    lmdb.open(str(damaged), subdir=False, readonly=True, lock=False, max_dbs=2).close()
    with pytest.raises(lmdb.Error):  # opens fine, fails on read
        read_checkpoint_file(damaged)

    before = snapshot(workdir / "output")
    code, log = run_demo(workdir, executor="local", tag="after-damage")
    assert code == 0, log
    assert "skipping unreadable checkpoint" in log and str(damaged) in log, log
    # Only the intact file's sources are skipped; the damaged file's are processed again.
    assert pending_skipped(log) == (FILES - len(survived), len(survived))
    after = snapshot(workdir / "output")
    for sid in survived:
        assert after[output_name(sid)] == before[output_name(sid)], f"{sid} was re-run"
    for sid in lost:
        assert after[output_name(sid)] != before[output_name(sid)], f"{sid} was not re-run"
    assert outputs_by_input(workdir) == reference
