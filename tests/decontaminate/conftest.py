from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from curator.steps.decontamination import DecontaminationConfig, run_decontamination


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def removed_rows(out: Path) -> dict[str, dict[str, Any]]:
    rows = {}
    for p in sorted((out / "removed").glob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows[row["id"]] = row
    return rows


def kept_ids(out: Path) -> set[str]:
    return {json.loads(line)["id"] for p in sorted(out.glob("part_*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()}


@pytest.fixture
def decon(tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """Run the step on ``train`` and ``holdout`` rows (inline); return the report."""

    def go(train: list[dict[str, Any]], holdout: list[dict[str, Any]], out: str = "out",
           **keys: Any) -> dict[str, Any]:
        write_jsonl(tmp_path / "train" / "t.jsonl", train)
        write_jsonl(tmp_path / "holdout" / "h.jsonl", holdout)
        cfg = {"train_glob": str(tmp_path / "train"), "holdout_glob": str(tmp_path / "holdout"),
               "output_dir": str(tmp_path / out), "id_field": "id",
               "execution": {"executor": "inline"}, **keys}
        return run_decontamination(DecontaminationConfig(**cfg))

    return go
