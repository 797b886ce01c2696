"""In a flow, dedup is off by default; when on it reads the previous step's corpus and
the decontamination (or the subset, when the decontamination is off) reads its output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from curator.flow.plan import load_flow_config, plan_flow


def _config(tmp_path: Path, steps: dict[str, Any]) -> dict[str, Any]:
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    (raw / "a.jsonl").write_text(json.dumps({"id": "a", "text": "x y z"}) + "\n")
    holdout = tmp_path / "holdout.jsonl"
    holdout.write_text(json.dumps({"id": "h", "text": "q r s"}) + "\n")
    steps = {k: {"enabled": True, **v} for k, v in steps.items()}
    if "decontamination" in steps:
        steps["decontamination"]["holdout"] = str(holdout)
    return {"corpus": {"input": str(raw), "id_field": "id"},
            "output_root": str(tmp_path / "out"), "steps": steps,
            "execution": {"executor": "inline"}}


def _steps(tmp_path: Path, steps: dict[str, Any]) -> dict[str, Any]:
    plan = plan_flow(load_flow_config(_config(tmp_path, steps)))
    assert not plan.problems, plan.problems
    return {s.key: s for s in plan.steps}


def test_dedup_is_off_unless_enabled_and_feeds_the_next_step(tmp_path: Path) -> None:
    off = _steps(tmp_path, {"decontamination": {}})
    assert not off["dedup"].enabled
    assert off["decontamination"].config["train_glob"] == str(tmp_path / "raw")
    on = _steps(tmp_path, {"dedup": {}, "decontamination": {}})
    dedup_out = str(tmp_path / "out" / "deduplicated")
    assert on["dedup"].enabled and on["dedup"].config["input_glob"] == str(tmp_path / "raw")
    assert on["dedup"].config["id_field"] == "id"
    assert on["decontamination"].config["train_glob"] == f"{dedup_out}/part_*.jsonl"
    subset = _steps(tmp_path, {"dedup": {}, "subset": {"token_budgets": [10]}})
    assert subset["subset"].config["input_glob"] == f"{dedup_out}/part_*.jsonl"
