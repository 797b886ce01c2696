"""The process pool and the inline executor give the same bytes and the same report."""

from __future__ import annotations

import json
from pathlib import Path

from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from tests.steps._worlds import data_files, decontamination_world

VOLATILE = {"producer", "started_at", "completed_at", "paths", "config_hash"}  # output_dir


def test_local_pool_and_inline_agree(tmp_path: Path) -> None:
    train, holdout = decontamination_world(tmp_path / "w")
    reports = {}
    for executor in ("inline", "local"):
        out = tmp_path / executor
        run_decontamination(DecontaminationConfig(
            train_glob=str(train), holdout_glob=str(holdout), output_dir=str(out),
            id_field="id", partition_size="64KB",
            execution={"executor": executor, "workers": 2}))
        report = json.loads((out / "decontamination_report.json").read_text())
        reports[executor] = {k: v for k, v in report.items() if k not in VOLATILE}
    assert data_files(tmp_path / "inline") == data_files(tmp_path / "local")
    assert len([p for p in (tmp_path / "local").glob("part_*.jsonl")]) > 1
    assert reports["inline"] == reports["local"]
