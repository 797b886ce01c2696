"""Machine faults, run as ``curate <command>``: for the first registered step a FIFO, a
device file and symlink loops in the input, an input inside the output, a read-only and
a full output filesystem; for every registered step a full checkpoint filesystem (the
first step in ``make test``, all in ``make chaos``). Small tmpfs mounts, skipped where
mounting is not permitted. Expected: a rejection or an error id (exit 2), never a hang
or a traceback; after the fault is gone, a rerun completes with the bytes of a clean
run."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from curator.config import validate_config
from curator.steps.registry import STEPS
from tests.chaos._harness import Case, leftovers
from tests.steps._worlds import data_files

pytestmark = pytest.mark.timeout(300)
SPEC = STEPS[0]
FULL = os.environ.get("CURATE_CHAOS_FULL") == "1"
HANG = 120  # seconds: a run that takes longer than this on the small world hangs


def run(case: Case, tag: str, cfg: dict | None = None) -> tuple[int, str]:
    path = case.config_path
    if cfg is not None:
        path = case.folder / f"{tag}.yaml"
        path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    with case.proc(tag, config=path) as proc:
        code = proc.wait(HANG)
        err = proc.stderr()
    assert "Traceback" not in err, err[-3000:]
    return code, err


def test_a_fifo_a_device_and_symlink_loops_in_the_input_never_hang(tmp_path: Path) -> None:
    case = Case(SPEC, "local", tmp_path)
    raw = Path(case.cfg[SPEC.input_key])
    os.mkfifo(raw / "fifo.jsonl")  # nobody ever writes to it: opening it blocks
    os.mknod(raw / "null.jsonl", stat.S_IFCHR | 0o644, os.makedev(1, 3))  # /dev/null
    os.symlink("loop.jsonl", raw / "loop.jsonl")
    (raw / "sub").mkdir()
    os.symlink("..", raw / "sub" / "up")
    code, err = run(case, "odd-files")
    assert code in (0, 2), err[-3000:]
    if code == 2:
        assert "error: [" in err
    for name in ("fifo.jsonl", "null.jsonl", "loop.jsonl"):
        os.unlink(raw / name)
    shutil.rmtree(raw / "sub")
    assert run(case, "rerun")[0] == 0
    clean = tmp_path / "clean"
    SPEC.run(validate_config(SPEC.config, case.world.config(clean)))
    assert data_files(case.out) == data_files(clean)


def test_an_input_inside_the_output_is_refused_or_never_read_back(tmp_path: Path) -> None:
    case = Case(SPEC, "local", tmp_path)
    raw = Path(case.cfg[SPEC.input_key])
    cfg = {**case.cfg, "output_dir": str(raw.parent)}  # the output holds the input
    code, err = run(case, "inside", cfg)
    assert code in (0, 2), err[-3000:]
    if code == 0:  # then a second run must not take its own output for input
        code2, err2 = run(case, "inside-again", cfg)
        assert code2 in (0, 2), err2[-3000:]


@contextmanager
def tmpfs(where: Path, size: str, *options: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    opts = ",".join((f"size={size}", *options))
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_read_only_output_is_an_error_id(tmp_path: Path) -> None:
    case = Case(SPEC, "local", tmp_path)
    with tmpfs(tmp_path / "ro", "1m", "ro") as ro:
        cfg = {**case.cfg, "output_dir": str(ro / "out")}
        code, err = run(case, "read-only", cfg)
        assert code == 2, err[-3000:]
        assert "output_dir_unwritable" in err, err[-3000:]
        cfg = {**case.cfg, "execution": {**case.cfg["execution"],
                                         "checkpoint_path": str(ro / "ckpt")}}
        code, err = run(case, "read-only-ckpt", cfg)
        assert code == 2, err[-3000:]
        assert "checkpoint_unwritable" in err, err[-3000:]


def test_a_full_output_filesystem_fails_cleanly_and_a_rerun_completes(tmp_path: Path) -> None:
    case = Case(SPEC, "local", tmp_path)
    clean = tmp_path / "clean"
    SPEC.run(validate_config(SPEC.config, case.world.config(clean)))
    need = sum(len(b) for b in data_files(clean).values())
    with tmpfs(tmp_path / "small", f"{max(need // 3, 64 * 1024)}") as small:
        cfg = {**case.cfg, "output_dir": str(small / "out")}
        code, err = run(case, "full", cfg)
        assert code == 2, f"exit {code}\n{err[-3000:]}"
        assert "error: [" in err
        out = small / "out"
        assert not SPEC.is_complete({**cfg})
        visible_temps = [p for p in leftovers(out) if "-work" not in p and "lock" not in p]
        assert visible_temps == [], visible_temps
        # space freed: the same output moved to a roomy filesystem, the run completes
        roomy = tmp_path / "roomy"
        shutil.copytree(out, roomy, symlinks=True)
    cfg = {**case.cfg, "output_dir": str(roomy)}
    code, err = run(case, "after", cfg)
    assert code == 0, err[-3000:]
    assert data_files(roomy) == data_files(clean)


#: the checkpoint-full case for every registered step: the first in ``make test``, the
#: rest in ``make chaos`` (``CURATE_CHAOS_FULL=1``)
CKPT_CASES = [pytest.param(spec, id=spec.key, marks=() if FULL or spec is SPEC else
                           pytest.mark.skip(reason="every step runs in make chaos "
                                                   "(CURATE_CHAOS_FULL=1)"))
              for spec in STEPS]


@pytest.mark.parametrize("spec", CKPT_CASES)
def test_a_full_checkpoint_filesystem_fails_cleanly_and_a_rerun_completes(
        spec, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The checkpoint directory on a tmpfs too small for it (LMDB writes with pwrite, so
    a full disk is ENOSPC, not a SIGBUS through a mapped page): an error id, no
    traceback, the step not complete; the checkpoint moved to a roomy disk, the same
    output completes to the clean bytes."""
    case = Case(spec, "local", tmp_path)
    clean = tmp_path / "clean"
    spec.run(validate_config(spec.config, case.world.config(clean)))
    with tmpfs(tmp_path / "small", "48k") as small:
        cfg = {**case.cfg, "execution": {**case.cfg["execution"],
                                         "checkpoint_path": str(small / "ckpt")}}
        code, err = run(case, "ckpt-full", cfg)
        assert code == 2, f"exit {code}\n{err[-3000:]}"
        assert "error: [" in err and "internal_error" not in err, err[-3000:]
        assert not spec.is_complete(cfg)
        visible_temps = [p for p in leftovers(case.out) if "-work" not in p and "lock" not in p]
        assert visible_temps == [], visible_temps
        roomy = tmp_path / "roomy-ckpt"
        shutil.copytree(small / "ckpt", roomy, symlinks=True)
    cfg = {**case.cfg, "execution": {**case.cfg["execution"], "checkpoint_path": str(roomy)}}
    code, err = run(case, "after", cfg)
    assert code == 0, err[-3000:]
    assert data_files(case.out) == data_files(clean)
    assert leftovers(case.out) == []
