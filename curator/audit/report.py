"""``audit_report.json``: built from the checks (a pure function), and its rendering for
people (markdown with the findings and the strengths of claim, tables, one CLI line)."""

from __future__ import annotations

from typing import Any

from curator.audit.checks import CHECKERS, AuditFacts, check_containment, observations
from curator.models import AuditReport
from curator.steps.spec import Rendering

SCHEMA_VERSION = 1
REPORT_NAME = "audit_report.json"
SUMMARY_NAME = "audit_summary.md"
#: the strengths of claim, weakest first (docs/audit.md)
STRENGTHS = (
    (1, "corpus alone", "readability, row counts (and digests in digest modes)"),
    (2, "plus the manifest", "completeness: shards, rows, per-shard digests, completed_at"),
    (3, "plus the ledger", "attribution of the input->output difference to gates"),
    (4, "plus the rejected records", "record-level accounting: input = output + rejected, "
     "by id, and each rejected record's gate against the ledger"),
)


def build_report(facts: AuditFacts, producer: dict[str, Any],
                 error: dict[str, str] | None = None,
                 steps: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The audit report of what the scan found (``facts``) and of the later steps'
    artifacts proved by their checkers (``steps``: ``{key: {artifact, block,
    findings}}``, from ``output_root``)."""
    report: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "step_id": producer["step_id"],
                              "mode": facts.mode, "producer": producer}
    findings: list[dict[str, Any]] = []
    for field_name, check in CHECKERS.values():
        block, found = check(facts)
        report[field_name] = block
        findings += found
    if facts.wants_containment:
        report["containment"], found = check_containment(facts)
        findings += found
    report["observations"] = observations(facts)
    if steps:
        report["steps"] = {key: {"artifact": s["artifact"], **(s["block"] or {}),
                                 "findings": [f["name"] for f in s["findings"]]}
                           for key, s in steps.items()}
        findings += [f for s in steps.values() for f in s["findings"]]
    report["strengths"] = strengths(report)
    report["findings"] = findings
    report["passed"] = error is None and not findings
    if error is not None:
        report["error"] = error
    return report


def strengths(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Which strengths of claim this report makes, and why not the others."""
    made = {
        1: (True, None),
        2: (report["completeness"]["claimed"], report["completeness"].get("reason")),
        3: (report["attribution"]["available"], report["attribution"].get("reason")),
        4: (report["accounting"]["available"] and report["accounting"].get("by_id", False),
            report["accounting"].get("reason")
            or ("no id_field: counted, not matched by id"
                if report["accounting"]["available"] else None)),
    }
    out = []
    for level, claim, basis in STRENGTHS:
        ok, reason = made[level]
        entry: dict[str, Any] = {"level": level, "claim": claim, "basis": basis, "made": ok}
        if not ok and reason:
            entry["reason"] = reason
        out.append(entry)
    return out


def findings_rows(report: AuditReport) -> list[dict[str, Any]]:
    return [{"finding": f.name, "message": f.message} for f in report.findings or []]


def render(report: AuditReport) -> Rendering:
    """Markdown (deterministic: no times, no output dir), tables and the CLI line."""
    t, acc, att = report.target, report.accounting, report.attribution
    if t is None or acc is None or att is None or report.findings is None \
            or report.strengths is None:
        raise ValueError("an audit report without its verdict")  # shown as failed, alone
    verdict = "PASSED" if report.passed else "FAILED"
    lines = [f"# Audit ({report.mode}): {verdict}", "",
             f"- target: {t.file_count} files, {t.row_count:,} rows, {t.bytes:,} "
             f"bytes; unreadable shards {t.unreadable_count}, bad records "
             f"{t.bad_record_count}"]
    if t.digest:
        lines.append(f"- corpus digest: `{t.digest}`")
    if acc.available:
        lines.append(f"- records: {acc.input_documents:,} in = {acc.output_records:,} "
                     f"out + {acc.rejected_records:,} rejected"
                     + (" (matched by id)" if acc.by_id else " (counted)"))
    if att.available:
        lines.append(f"- attribution: observed delta {att.observed_delta}, filtered "
                     f"{att.declared_filtered}, failed {att.declared_failed}, "
                     f"unexplained {att.unexplained}")
    c = report.containment
    if c is not None:
        lines.append(f"- containment by {c.comparison_fields}: "
                     f"{'verifiable' if c.verifiable else 'UNVERIFIABLE'}, "
                     f"{'contained' if c.contained else 'NOT contained'} "
                     f"({c.missing_row_count} rows missing from the reference)")
    lines += ["", "## Strengths of claim", "", "| level | claim | made | basis / why not |",
              "|---:|---|---|---|"]
    lines += [f"| {s.level} | {s.claim} | {'yes' if s.made else 'no'} | "
              f"{s.reason or s.basis} |" for s in report.strengths]
    if report.steps:
        lines += ["", "## Later steps (output_root)", "", "| step | artifact | findings |",
                  "|---|---|---|"]
        lines += [f"| {key} | `{s.artifact}` | {', '.join(s.findings or []) or 'none'} |"
                  for key, s in report.steps.items()]
    lines += ["", "## Findings", ""]
    lines += [f"- `{f.name}`: {f.message}" for f in report.findings] or ["none"]
    names = sorted({f.name for f in report.findings})
    later = f"; later steps: {', '.join(report.steps)}" if report.steps else ""
    summary = (f"audit ({report.mode}): {verdict}; {t.file_count} shards, "
               f"{t.row_count} rows{later}; findings: {', '.join(names) or 'none'}")
    return Rendering("\n".join(lines) + "\n",
                     {"findings": findings_rows(report),
                      "strengths": [s.dump() for s in report.strengths]}, summary)
