"""An output root built one step at a time, each step into the flow's default
subdirectory (no ``flow_plan.json``): ingested shards, a profile and its approved policy,
the filter (``filtered_jsonl``), decontamination (``decontaminated``, against a holdout
under the root) and subset tiers with their Parquet copy (``subset``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from curator.steps.subset import SubsetConfig, run_subset
from tests.filter._support import (
    approve,
    corpus_records,
    profile_candidate,
    run,
    shard_files,
    write_shards,
)

INLINE = {"executor": "inline"}


def build_root(root: Path) -> Path:
    """The root, built step by step with the steps' run functions (module docstring)."""
    inp = write_shards(root / "ingested", corpus_records(300, seed=5), shards=2)
    policy = approve(profile_candidate(inp, root / "profile"),
                     root / "policy" / "approved_policy.yaml")
    filtered = root / "filtered_jsonl"
    run(inp, filtered, policy, partition_size="30KB")
    kept = [json.loads(line) for p in shard_files(filtered)
            for line in p.read_text(encoding="utf-8").splitlines()]
    holdout = root / "holdout" / "holdout.jsonl"  # a few kept documents, copied
    holdout.parent.mkdir(parents=True)
    holdout.write_text("".join(json.dumps({**r, "id": f"h{i}"}) + "\n"
                               for i, r in enumerate(kept[:: max(1, len(kept) // 6)])),
                       encoding="utf-8")
    run_decontamination(DecontaminationConfig(
        train_glob=str(filtered / "part_*.jsonl"), holdout_glob=str(holdout),
        output_dir=str(root / "decontaminated"), id_field="id", partition_size="64KB",
        execution=INLINE))
    words = sum(len(r["text"].split()) for r in kept)
    run_subset(SubsetConfig(
        input_glob=str(root / "decontaminated" / "part_*.jsonl"),
        output_dir=str(root / "subset"), id_field="id", source_field="source",
        token_budgets=[words // 8, words // 3], length_bands=[64, 256],
        output_format="jsonl+parquet", execution=INLINE))
    return root


def copy_root(root: Path, to: Path) -> Path:
    """``cp -r root to``."""
    shutil.copytree(root, to, symlinks=True)
    return to


def with_flow_plan(root: Path) -> Path:
    """``root`` with the ``flow_plan.json`` a flow would write there: every path in it
    absolute, under ``root``."""
    policy = root / "policy" / "approved_policy.yaml"
    plan: dict[str, Any] = {"schema_version": 1, "output_root": str(root), "steps": [
        {"key": "filter", "enabled": True, "config": {
            "input_glob": str(root / "ingested"), "output_dir": str(root / "filtered_jsonl"),
            "id_field": "id", "source_field": "source",
            "emit_manifest": "run_manifest.json", "emit_ledger": "curation_ledger.json",
            "heuristic_filters": {"approved_policy": str(policy)}}}]}
    (root / "flow_plan.json").write_text(json.dumps(plan), encoding="utf-8")
    return root
