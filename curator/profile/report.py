"""The profile report for people: the summary, the signals table, one CLI line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curator.profile.summary import render_summary
from curator.steps.spec import Rendering


def signal_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per signal: median, p10/p90 and the gate points a reviewer looks at first."""
    rows = []
    for block in report["signals"]:
        micro = (block.get("views") or {}).get("micro") or {}
        rows.append({
            "signal": block["signal"], "direction": block["direction"],
            "n_scored": block.get("n_scored"), "p10": micro.get("p10"),
            "p50": micro.get("p50"), "p90": micro.get("p90"),
        })
    return rows


def render(report: dict[str, Any]) -> Rendering:
    out = Path(report["producer"]["output_dir"])
    corpus = report["corpus"]
    summary = (
        f"profile: {corpus['document_count']} documents in {corpus['source_count']} sources, "
        f"{report['sampling']['sampled']} sampled, {len(report['signals'])} signals; "
        f"fingerprint {corpus['fingerprint']}\n"
        f"  summary    {out / 'profile_summary.md'}\n"
        f"  candidates {out / 'candidate_policies.yaml'}  (approve with `curate approve`)\n"
        f"  report     {out / 'profile_report.json'}"
    )
    return Rendering(render_summary(report), {"signals": signal_rows(report)}, summary)
