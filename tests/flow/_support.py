"""Helpers for the ``curate flow`` tests: a small demo corpus, flow configs that keep
every step small, and readers for the flow's artifacts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from curator_demo import generate_demo_corpus
from tests.ingest._support import Cli

REPO = Path(__file__).resolve().parents[2]
LANGPACKS = str(REPO / "curator" / "langpacks")

#: The demo's choices (examples/demo/flow-apply.yaml), each aimed at planted noise.
THRESHOLDS: dict[str, Any] = {
    "stopword_ratio": 0.0952381,
    "unicode_alpha_numeric": 0.269841,
    "repeating_duplicate_ngrams": 0.507937,
    "boilerplate_hits": 3,
}
SIGNALS = ["word_count", *THRESHOLDS]
APPROVE: dict[str, Any] = {"thresholds": THRESHOLDS, "approver": "Test Reviewer",
                           "evidence": "profile_summary.md read by the test"}


def demo_corpus(folder: Path, docs: int = 240, seed: int = 7) -> Path:
    generate_demo_corpus(folder, docs=docs, seed=seed)
    return folder


def base_config(raw: Path, root: Path, *, ingest: bool = True, profile: bool = True,
                filt: bool = False, approve: dict[str, Any] | None = None,
                executor: dict[str, Any] | None = None) -> dict[str, Any]:
    """A measure (ingest + profile) or apply (filter) config with small steps."""
    return {
        "corpus": {"input": str(raw), "source_field": "source", "metadata_fields": ["url"],
                   "language": "en", "langpack_dir": LANGPACKS},
        "output_root": str(root),
        "steps": {
            "ingest": {"enabled": ingest, "on_duplicate": "drop", "partition_size": "64KB",
                       "shard_size": 100},
            "profile": {"enabled": profile, "max_total_docs": 200, "signals": SIGNALS,
                        "partition_size": "64KB"},
            "filter": {"enabled": filt, "partition_size": "32KB",
                       "quality_filters": {"min_langid_score": 0.3, "min_words": 20,
                                           "max_words": 100000}},
        },
        "approve": copy.deepcopy(approve),
        "execution": executor or {"executor": "inline"},
    }


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {s["step_id"]: s["status"] for s in report["steps"]}


def problem_ids(plan_or_error: dict[str, Any] | list[dict[str, Any]]) -> set[str]:
    rows = plan_or_error["problems"] if isinstance(plan_or_error, dict) else plan_or_error
    return {p["error_id"] for p in rows}


class FlowCli(Cli):
    """``curate flow --config FILE [--plan]`` in its own session (killed on exit)."""

    def __init__(self, config: Path, log_dir: Path, tag: str, plan: bool = False) -> None:
        super().__init__(config, log_dir, tag, command="flow")
        if plan:
            self.argv.append("--plan")
