"""The ingest report: its fields from the merged parse statistics and the duplicate
decisions (pure functions), and its rendering for people (markdown, tables, one CLI
line)."""

from __future__ import annotations

from typing import Any

from curator.ingest.dedup import DedupResult
from curator.ingest.records import REASONS, IdentitySpec
from curator.models import IngestReport
from curator.pipeline import PipelineResult
from curator.steps.spec import Rendering


def render(report: IngestReport) -> Rendering:
    seen = report.documents_seen or 0
    accepted = report.documents_accepted or 0
    rejected = report.documents_rejected or 0
    lines = [
        f"# Ingest report ({'complete' if report.is_complete else 'FAILED'})",
        "",
        f"- output: `{report.output_dir}`",
        f"- documents seen: {seen}, accepted: {accepted}, rejected: {rejected}"
        f", skipped as resumed: {report.documents_skipped_resumed or 0}",
        f"- balance ok: {report.balance.ok if report.balance is not None else None}",
    ]
    if report.error is not None:
        lines.append(f"- error: `{report.error.error_id}` {report.error.message}")
    reasons = report.rejections_by_reason or {}
    if reasons:
        lines += ["", "| rejection reason | documents |", "|---|---:|"]
        lines += [f"| {k} | {v:,} |" for k, v in reasons.items()]
    if report.encodings_used:
        lines += ["", "| encoding | documents |", "|---|---:|"]
        lines += [f"| {k} | {v:,} |" for k, v in report.encodings_used.items()]
    summary = (
        f"ingest: {seen} documents seen, {accepted} accepted, {rejected} rejected "
        f"({', '.join(f'{k} {v}' for k, v in reasons.items()) or '-'}); "
        f"{len(report.shards or [])} shards in {report.output_dir}; "
        f"report {str(report.output_dir).rstrip('/')}/ingest_report.json"
    )
    tables = {"rejections": [{"reason": k, "documents": v} for k, v in reasons.items()]}
    return Rendering("\n".join(lines) + "\n", tables, summary)


def count_documents(stats: dict[str, float], dedup: DedupResult) -> dict[str, int]:
    def get(key: str) -> int:
        return int(stats.get(f"ingest_parse.{key}", 0))

    accepted = get("accepted")
    dropped = dedup.dropped
    return {
        "records_read": get("seen"),
        "unparsable_lines": get("rejected.unparsable_line"),
        "skipped_non_mapping": get("rejected.not_an_object"),
        "skipped_missing_text": get("rejected.missing_text") + get("rejected.text_not_a_string")
        + get("rejected.empty_text"),
        "skipped_missing_id": get("rejected.missing_id"),
        "duplicate_ids": dedup.duplicate_ids,
        "duplicate_groups": dedup.duplicate_groups,
        "written": accepted - dropped,
    }


def document_fields(stats: dict[str, float], parsed: PipelineResult, dedup: DedupResult,
                     counts: dict[str, int]) -> dict[str, Any]:
    by_reason = {r: int(stats.get(f"ingest_parse.rejected.{r}", 0)) for r in REASONS}
    by_reason["duplicate_id"] = dedup.dropped  # each dropped copy has its rejection
    by_reason = {k: v for k, v in by_reason.items() if v}
    seen = counts["records_read"]
    rejected = sum(by_reason.values())
    accepted = counts["written"]
    encodings = {k.split(".", 2)[2]: int(v) for k, v in stats.items()
                 if k.startswith("ingest_parse.encoding.")}
    return {
        "documents_seen": seen,
        "documents_accepted": accepted,
        "documents_rejected": rejected,
        "documents_skipped_resumed": int(parsed.skipped_stats.get("ingest_parse.seen", 0)),
        "rejections_by_reason": dict(sorted(by_reason.items())),
        "encodings_used": dict(sorted(encodings.items())),
        "lossy_documents": encodings.get("utf-8-lossy", 0),
        "files_with_bom": int(stats.get("ingest_parse.files_with_bom", 0)),
        "balance": {"seen": seen, "accepted": accepted, "rejected": rejected,
                    "ok": seen == accepted + rejected},
        "was_resumed": parsed.sources_skipped > 0,
    }


def identity_block(spec: IdentitySpec) -> dict[str, Any]:
    if spec.id_from is not None:
        return {"source": "corpus", "field": spec.id_from, "recipe": None, "fields": None,
                "prefix": None, "note": f"ids taken from the input column {spec.id_from!r}"}
    return {"source": "minted", "field": "id", "recipe": spec.recipe,
            "fields": list(spec.id_fields), "prefix": spec.id_prefix,
            "note": "ids minted from the listed fields; stable across runs and machines"}


def examples_text(dedup: DedupResult) -> str:
    parts = []
    for ex in dedup.examples:
        where = ", ".join(f"{a['path']}:{a['line'] if a['line'] is not None else a.get('row')}"
                          for a in ex["at"])
        parts.append(f"{ex['id']} x{ex['copies']} ({where})")
    return "; ".join(parts)


def reasons_text(by_reason: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in by_reason.items()) or "no records"
