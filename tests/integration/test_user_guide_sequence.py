"""The user guide's step-by-step sequence (docs/user-guide.md, "Running each step on its
own"), each step on its own with the demo's example config, in the guide's order, on a
small demo corpus and the demo holdout: the tiers hold no document decontamination
removed (#29, docs and examples that disagree with the tool)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "demo"
DOCS = 400  # a small corpus (the demo's is 3000): the sequence, not the volumes


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CURATE_PREFECT": "never"}
    done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done


def _curate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(cwd, sys.executable, "-m", "flows.cli", *args)


def _ids(files: list[Path]) -> set[str]:
    return {json.loads(line)["id"] for f in files for line in f.read_text().splitlines()
            if line.strip()}


def _guide_order() -> list[str]:
    """The steps of the guide's table of commands, in its order."""
    text = (REPO / "docs" / "user-guide.md").read_text()
    section = text.split("## 3. Running each step on its own", 1)[1].split("\n\n", 2)[1]
    return [row.split("|")[1].strip() for row in section.splitlines()[2:]]


@pytest.mark.slow
def test_the_guides_step_by_step_sequence_keeps_removed_documents_out_of_the_tiers(
        tmp_path: Path) -> None:
    order = _guide_order()
    assert order[:8] == ["ingest", "profile", "approve", "filter", "audit", "dedup",
                         "decontaminate", "subset"], order
    approve: dict[str, Any] = yaml.safe_load(
        (EXAMPLES / "flow-apply.yaml").read_text())["approve"]
    _curate(tmp_path, "demo-corpus", "--out", "demo-run/raw", "--docs", str(DOCS))
    _run(tmp_path, sys.executable, "-m", "curator_demo.holdout", "--corpus", "demo-run/raw",
         "--out", "demo-run/holdout")
    for step in order[:8]:
        if step == "approve":
            sets = [a for name, value in approve["thresholds"].items()
                    for a in ("--set", f"{name}={value}")]
            _curate(tmp_path, "approve", "--candidate",
                    "demo-run/profile/candidate_policies.yaml", *sets,
                    "--approver", "test", "--evidence", "the demo's choices",
                    "--out", "demo-run/policy/approved_policy.yaml")
            continue
        config = EXAMPLES / ("decontamination.yaml" if step == "decontaminate"
                             else f"{step}.yaml")
        _curate(tmp_path, step, "--config", str(config))
    run = tmp_path / "demo-run"
    duplicates = _ids(sorted((run / "deduplicated" / "removed").glob("*.jsonl")))
    assert duplicates, "the planted near-duplicates are removed"
    removed = _ids(sorted((run / "decontaminated" / "removed").glob("*.jsonl")))
    kept = _ids(sorted((run / "decontaminated").glob("part_*.jsonl")))
    assert removed, "the planted holdout removes documents"
    report = json.loads((run / "subset" / "subset_report.json").read_text())
    tiers = [_ids(sorted(Path(t["output"]).glob("*.jsonl"))) for t in report["tiers"]]
    assert tiers and all(tiers), [len(t) for t in tiers]
    for tier in tiers:
        assert not tier & removed, sorted(tier & removed)[:5]
        assert not tier & duplicates, sorted(tier & duplicates)[:5]
        assert tier <= kept
