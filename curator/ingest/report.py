"""The ingest report for people: markdown, tables and one CLI line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curator.steps.spec import Rendering


def render(report: dict[str, Any]) -> Rendering:
    ok = bool((report.get("producer") or {}).get("completed_at"))
    lines = [
        f"# Ingest report ({'complete' if ok else 'FAILED'})",
        "",
        f"- output: `{report.get('output_dir')}`",
        f"- documents seen: {report.get('documents_seen', 0)}, accepted: "
        f"{report.get('documents_accepted', 0)}, rejected: {report.get('documents_rejected', 0)}"
        f", skipped as resumed: {report.get('documents_skipped_resumed', 0)}",
        f"- balance ok: {report.get('balance', {}).get('ok')}",
    ]
    if report.get("error"):
        lines.append(f"- error: `{report['error']['error_id']}` {report['error']['message']}")
    reasons = report.get("rejections_by_reason") or {}
    if reasons:
        lines += ["", "| rejection reason | documents |", "|---|---:|"]
        lines += [f"| {k} | {v:,} |" for k, v in reasons.items()]
    if report.get("encodings_used"):
        lines += ["", "| encoding | documents |", "|---|---:|"]
        lines += [f"| {k} | {v:,} |" for k, v in report["encodings_used"].items()]
    summary = (
        f"ingest: {report.get('documents_seen', 0)} documents seen, "
        f"{report.get('documents_accepted', 0)} accepted, "
        f"{report.get('documents_rejected', 0)} rejected "
        f"({', '.join(f'{k} {v}' for k, v in reasons.items()) or '-'}); "
        f"{len(report.get('shards') or [])} shards in {report.get('output_dir')}; "
        f"report {Path(str(report.get('output_dir'))) / 'ingest_report.json'}"
    )
    tables = {"rejections": [{"reason": k, "documents": v} for k, v in reasons.items()]}
    return Rendering("\n".join(lines) + "\n", tables, summary)
