"""Numbers and orders the docs state, checked against the tool (#29, "docs and examples
that disagree with the tool")."""

from __future__ import annotations

from pathlib import Path

import yaml

from curator.langpack.loader import load_langpack
from curator.signals.registry import REGISTRY
from curator.steps.profile import select_signals

REPO = Path(__file__).resolve().parents[2]


def test_the_signal_counts_are_the_profiles_and_the_registrys() -> None:
    profiled, _ = select_signals([], load_langpack(REPO / "curator" / "langpacks", "en"), False)
    readme = (REPO / "README.md").read_text()
    guide = (REPO / "docs" / "user-guide.md").read_text()
    assert f"**`curate profile`**: {len(profiled)} quality signals" in readme
    assert f"the registry's {len(REGISTRY)} but" in readme
    assert f"profile ({len(profiled)} signals on every" in guide


def test_the_demo_subset_reads_what_the_demo_decontamination_writes() -> None:
    demo = REPO / "examples" / "demo"
    dedup = yaml.safe_load((demo / "dedup.yaml").read_text())
    decon = yaml.safe_load((demo / "decontamination.yaml").read_text())
    subset = yaml.safe_load((demo / "subset.yaml").read_text())
    assert dedup["input_glob"].startswith("demo-run/filtered_jsonl/")
    assert decon["train_glob"] == f"{dedup['output_dir']}/part_*.jsonl"
    assert subset["input_glob"] == f"{decon['output_dir']}/part_*.jsonl"
