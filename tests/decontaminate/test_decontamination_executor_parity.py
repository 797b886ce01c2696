"""The process pool and the inline executor give the same bytes and the same report, for
any bucket count of the training ids' exchange (1, 7, 64); the split fingerprint is the
spec's recipe over the training ids, and a repeated id is refused the same way whatever
bucket it lands in."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from curator.errors import CuratorError
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
