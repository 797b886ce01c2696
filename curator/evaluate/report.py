"""The evaluation report for people: a plain-text table for the terminal."""

from __future__ import annotations

from typing import Any

from curator import models
from curator.models import EvaluationReport


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def render_text(report: EvaluationReport | dict[str, Any]) -> str:
    """Headline rates, the per-phenomenon table, per-gate attribution, warnings; of the
    report as :func:`~curator.evaluate.evaluate_policy` returns it, read through its
    model."""
    r = report if isinstance(report, EvaluationReport) else \
        models.parse(EvaluationReport, report, "the evaluation report")
    t, policy, pack = r.totals, r.policy, r.langpack
    out = [
        f"policy {policy.path} ({policy.policy_digest})",
        f"pack {pack.pack_id} {pack.version} ({pack.content_hash})"
        + ("" if pack.matches_policy else "  NOT the policy's pack"),
        f"labelled: {t.documents} documents in {len(r.labelled_files)} file(s), "
        f"{t.keep} keep, {t.drop} drop; gates: {', '.join(r.gates) or 'none'}",
        "",
        f"false rejection (keep dropped): {t.keep_dropped}/{t.keep} = "
        f"{_pct(t.false_rejection_rate)}",
        f"noise removal (drop dropped):   {t.drop_dropped}/{t.drop} = "
        f"{_pct(t.noise_removal_rate)}",
        "",
    ]
    rows = []
    for p in r.phenomena:
        if not p.keep and not p.drop:
            continue
        mark = "" if p.exercised else " (not exercised)"
        rows.append([p.phenomenon + mark, str(p.keep), str(p.keep_dropped),
                     _pct(p.false_rejection_rate), str(p.drop), str(p.drop_dropped),
                     _pct(p.noise_removal_rate)])
    out += _table(["phenomenon", "keep", "dropped", "false rej.", "drop", "dropped",
                   "removal"], rows)
    out.append("")
    rows = [[a.gate, str(a.removed_keep), str(a.removed_drop), str(a.failed_keep),
             str(a.failed_drop)] for a in r.attribution]
    out += _table(["gate (first failed)", "keep removed", "drop removed", "keep failing",
                   "drop failing"], rows)
    absent = [p.phenomenon for p in r.phenomena if not p.keep and not p.drop]
    if absent:
        out.append(f"absent phenomena: {', '.join(absent)}")
    for p in r.phenomena:
        if (p.keep or p.drop) and not p.exercised:
            out.append(f"note: {p.phenomenon}: {p.note}")
    for w in r.warnings:
        out.append(f"warning: {w}")
    return "\n".join(out)
