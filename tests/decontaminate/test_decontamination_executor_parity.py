"""The process pool, Ray and the inline executor give the same bytes and the same report,
for any bucket count of the training ids' exchange (1, 7, 64) and any worker count; the
split fingerprint is the spec's recipe over the training ids, and a repeated id is
refused the same way whatever bucket it lands in. The holdout indexed in one unit or
several gives the same documents kept and removed, and a run killed while indexing the
holdout resumes to the same bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.io.partitioning import FilePartitioningStage
from curator.steps.base import partition_ids
from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from tests.steps._worlds import data_files, decontamination_world

VOLATILE = {"producer", "started_at", "completed_at", "paths", "config_hash"}  # output_dir


def _run(train: Path, holdout: Path, out: Path, executor: str, buckets: int) -> dict:
    run_decontamination(DecontaminationConfig(
        train_glob=str(train), holdout_glob=str(holdout), output_dir=str(out),
        id_field="id", partition_size="64KB",
        execution={"executor": executor, "workers": 2, "exchange_buckets": buckets}))
    report = json.loads((out / "decontamination_report.json").read_text())
    return {k: v for k, v in report.items() if k not in VOLATILE}


def _recipe(ids: list[str]) -> str:
    """steps.md: sha256 over the sorted unique ids, each followed by a NUL byte."""
    return "sha256:" + hashlib.sha256(
        b"".join(i.encode("utf-8") + b"\0" for i in sorted(set(ids)))).hexdigest()


def test_local_pool_and_inline_agree_for_any_bucket_count(tmp_path: Path) -> None:
    train, holdout = decontamination_world(tmp_path / "w")
    runs = {"inline": ("inline", 1), "local": ("local", 7), "inline-64": ("inline", 64)}
    reports = {name: _run(train, holdout, tmp_path / name, ex, b)
               for name, (ex, b) in runs.items()}
    for name in runs:
        assert data_files(tmp_path / name) == data_files(tmp_path / "inline"), name
        assert reports[name] == reports["inline"], name
    assert len([p for p in (tmp_path / "local").glob("part_*.jsonl")]) > 1
    ids = [json.loads(line)["id"] for p in sorted(train.glob("*.jsonl"))
           for line in p.read_text().splitlines()]
    split = reports["inline"]["splits"]["train"]
    assert split["documents"] == len(ids) and split["fingerprint"] == _recipe(ids)


@pytest.mark.parametrize("buckets", [1, 7])
def test_a_repeated_training_id_is_refused_whatever_its_bucket(tmp_path: Path,
                                                               buckets: int) -> None:
    train, holdout = decontamination_world(tmp_path / "w")
    extra = tmp_path / "w" / "train" / "shard_9.jsonl"
    rows = [json.loads(line) for line in (train / "shard_0.jsonl").read_text().splitlines()]
    again = [{**r, "text": r["text"] + " again"} for r in rows[5:9]]  # ids d0-5 .. d0-8
    extra.write_text("".join(json.dumps(r) + "\n" for r in again))
    with pytest.raises(CuratorError) as info:
        _run(train, holdout, tmp_path / "out", "inline", buckets)
    assert info.value.error_id == "id_field_missing_or_duplicated"
    assert info.value.message.startswith(
        "4 training ids occur more than once (['d0-5', 'd0-6', 'd0-7'])")


# -- the holdout indexed by units (holdout, holdout_index phases) -------------------------
def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "decontamination_report.json"}


def _joined(out: Path) -> tuple[bytes, bytes]:
    """The kept and the removed lines, every shard's in shard order."""
    def shards(folder: Path) -> bytes:
        return b"".join(p.read_bytes() for p in sorted(folder.glob("part_*.jsonl"),
                                                       key=lambda p: int(p.stem[5:])))
    return shards(out), shards(out / "removed")


def _small_world(tmp_path: Path) -> tuple[Path, Path]:
    return decontamination_world(tmp_path / "w", docs=60)


def _holdout_run(train: Path, holdout: Path, out: Path, size: str, runner=None,
                 **execution: object) -> dict:
    report = run_decontamination(DecontaminationConfig(
        train_glob=str(train), holdout_glob=str(holdout), output_dir=str(out),
        id_field="id", partition_size=size, execution=execution), runner)
    return {k: v for k, v in report.items() if k not in VOLATILE}


@pytest.mark.timeout(120)
def test_a_holdout_in_several_units_gives_the_same_bytes_whatever_runs_it(
        tmp_path: Path) -> None:
    """One holdout partition or several, 1 or 2 workers, 1, 7 or 64 buckets: the same
    kept and removed bytes and the same report."""
    train, holdout = _small_world(tmp_path)
    runs = {"one-unit": ("64KB", {"executor": "inline", "exchange_buckets": 1}),
            "inline": ("16KB", {"executor": "inline", "exchange_buckets": 7}),
            "pool-1": ("16KB", {"executor": "local", "workers": 1, "exchange_buckets": 64}),
            "pool-2": ("16KB", {"executor": "local", "workers": 2, "exchange_buckets": 7})}
    reports = {name: _holdout_run(train, holdout, tmp_path / name, size, **ex)
               for name, (size, ex) in runs.items()}
    base = _files(tmp_path / "inline")
    assert any(k.startswith("removed/") for k in base)  # something was removed
    for name, report in reports.items():
        if name != "one-unit":
            assert _files(tmp_path / name) == base, name
            assert report == reports["inline"], name
    # one holdout unit (64KB) or two (16KB): the same documents kept and removed, with
    # the same proofs, in the same order (the training shards are cut elsewhere)
    assert _joined(tmp_path / "one-unit") == _joined(tmp_path / "inline")
    for block in ("result", "similarity", "group_overlap", "splits"):
        assert reports["one-unit"][block] == reports["inline"][block], block
    assert reports["inline"]["splits"]["holdout"]["fingerprint"] == _recipe(
        [json.loads(line)["id"] for line in (holdout / "holdout.jsonl").read_text().splitlines()])


@pytest.mark.timeout(180)
def test_ray_indexes_the_holdout_to_the_same_bytes(tmp_path: Path, ray_local: None) -> None:
    from executors import make_executor

    train, holdout = _small_world(tmp_path)
    one = _holdout_run(train, holdout, tmp_path / "one-unit", "16KB", executor="inline")
    with make_executor("ray", 2, None) as executor:
        ray = _holdout_run(train, holdout, tmp_path / "ray", "16KB", executor,
                           executor="ray", workers=2, exchange_buckets=7)
    assert _files(tmp_path / "ray") == _files(tmp_path / "one-unit")
    assert ray == one


_SLOW_HOLDOUT = """
import json, sys, time
from curator.decontamination.holdout import HoldoutStage
from curator.steps.decontamination import DecontaminationConfig, run_decontamination
original = HoldoutStage.process
def slow(self, task):
    done = original(self, task)
    time.sleep(0.4)  # written, not yet recorded complete: the kill lands in the phase
    return done
HoldoutStage.process = slow
run_decontamination(DecontaminationConfig(**json.loads(sys.argv[1])))
"""


@pytest.mark.timeout(120)
def test_killed_while_indexing_the_holdout_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    train, holdout = _small_world(tmp_path)
    reference = _holdout_run(train, holdout, tmp_path / "reference", "8KB",
                             executor="inline")
    out = tmp_path / "out"
    cfg = {"train_glob": str(train), "holdout_glob": str(holdout), "output_dir": str(out),
           "id_field": "id", "partition_size": "8KB",
           "execution": {"executor": "inline", "checkpoint_path": str(tmp_path / "ckpt")}}
    parts = out / ".decontamination-work" / "holdout"
    total = len(partition_ids(FilePartitioningStage(file_paths=str(holdout), blocksize="8KB")))
    assert total >= 4
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_HOLDOUT, json.dumps(cfg)],
                            start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        # inline, two units run before the engine records them: at the third's files
        # the first two are recorded complete
        while len(list(parts.glob("*.parquet"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    written = len(list(parts.glob("*.parquet")))
    assert 3 <= written < total, f"{written} of {total} holdout partitions: not cut midway"
    assert not (out / ".decontamination-work" / "index").exists()
    assert not list(out.glob("part_*.jsonl"))
    resumed = _holdout_run(train, holdout, out, "8KB", executor="inline",
                           checkpoint_path=str(tmp_path / "ckpt"))
    producer = json.loads((out / "decontamination_report.json").read_text())["producer"]
    assert producer["resumed_partitions"] >= 2  # the holdout units done before the kill
    assert _files(out) == _files(tmp_path / "reference")
    assert resumed == reference
