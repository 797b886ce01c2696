"""``profile_summary.md``: the human copy of ``profile_report.json``.

Rendered from the report alone (plus the relative plot paths), read through its model
(:class:`~curator.models.ProfileReport`), so it can be rebuilt from any stored report.
Numbers in prose and tables are rounded for reading; the thresholds in the approve
block are the exact swept grid values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from curator import models
from curator.models.profile_report import (
    Bounds,
    Cooccurrence,
    Health,
    Histogram,
    Langpack,
    LanguageComposition,
    PolicySimulation,
    ProfileCorpus,
    ProfileReport,
    Sampling,
    SignalBlock,
)
from curator.profile.stats import GATE_TARGETS, SIMULATION_TARGET, gate_table

SPARK = "▁▂▃▄▅▆▇█"
CONCENTRATED_SHARE = 0.9  # one histogram bin holding this share → no sparkline
_KEEPS = {"max": "keeps score <= threshold", "min": "keeps score >= threshold",
          "interval": "keeps min <= score <= max"}


# -- formatting -----------------------------------------------------------------------


def _num(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    x = float(x)
    if not math.isfinite(x):
        return "n/a"
    return f"{x:.{digits}g}"


def _pct(x: Any, digits: int = 2) -> str:
    return "n/a" if x is None else f"{100 * float(x):.{digits}f}%"


def _count(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):,.0f}"


def _yaml_num(x: float | int) -> str:
    """A number PyYAML reads back as the same value (``1e-05`` needs a ``.0``)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    text = repr(float(x))
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def sparkline(counts: Sequence[int]) -> str:
    """One block character per bin, scaled to the fullest bin (empty bins are ``▁``)."""
    top = max(counts, default=0)
    if top <= 0:
        return SPARK[0] * len(counts)
    return "".join(SPARK[math.ceil(c / top * (len(SPARK) - 1))] for c in counts)


def _bounds_text(bounds: Bounds) -> str:
    """``min 50, max 100,000``: the bounds given, the lower first whatever the order of
    the keys (a written report's are sorted: ``max`` first)."""
    given = bounds.model_fields_set
    return ", ".join(f"{side} {_num(getattr(bounds, side))}" for side in ("min", "max")
                     if side in given)


def _gates(block: SignalBlock) -> list[dict[str, Any]]:
    """:func:`~curator.profile.stats.gate_table` of ``block`` (which computes on the
    block's plain form, as the policy simulation and the plots do)."""
    return gate_table(block.model_dump(include={"direction", "retention"}))


# -- sections -------------------------------------------------------------------------


def _corpus(report: ProfileReport) -> list[str]:
    corpus = report.corpus or ProfileCorpus()
    sampling = report.sampling or Sampling()
    pack = report.langpack or Langpack()
    by = f"field `{corpus.source_field}`" if corpus.source_field else "shard path"
    lines = [
        "## Corpus",
        "",
        f"- Input: `{corpus.glob}`: {_num(corpus.file_count)} files, "
        f"{_num(corpus.document_count)} documents",
        f"- Records read: {_num(corpus.records_read)}; without text: "
        f"{_num(corpus.records_without_text)}; unparsable lines: "
        f"{_num(corpus.unparsable_lines)}; damaged shards: "
        f"{_num(corpus.damaged_shards)}",
        f"- Sources: {_num(corpus.source_count)} (by {by})",
        f"- Fingerprint: `{corpus.fingerprint}`",
        f"- Sample: {_num(sampling.sampled)} documents "
        f"(max_total_docs {_num(sampling.max_total_docs)}, seed "
        f"{sampling.seed}, {sampling.method})",
        f"- Language pack: `{pack.pack_id}` ({pack.language_tag}) version "
        f"{pack.version}, content hash `{pack.content_hash}`",
        f"- Signals implementation: `{report.signals_impl_version}`",
        f"- Profile digest: `{report.profile_digest}`",
        "",
    ]
    for note in report.notes or []:
        lines += [f"> **NOTE:** {note}", ""]
    return lines


def _languages(comp: LanguageComposition | None) -> list[str]:
    if comp is None:
        return []
    rows = [
        [str(x.language), _num(x.documents), _pct(x.share),
         _num(x.confidence_p50, 3), _num(x.confidence_p10, 3)]
        for x in comp.languages or []
    ]
    lines = [
        "## Language composition",
        "",
        f"{_num(comp.scored)} documents scored with `{comp.model}`.",
        "",
        *_table(["Language", "Documents", "Share", "Confidence p50", "Confidence p10"], rows),
        "",
    ]
    if comp.note:
        lines += [f"> **NOTE:** {comp.note}", ""]
    return lines


def _quantile_order(key: str) -> float:
    """``p5`` before ``p10`` (a report read back from sorted JSON keeps the same table)."""
    try:
        return float(key.removeprefix("p"))
    except ValueError:
        return float("inf")


def _histogram_line(hist: Histogram | None) -> str:
    if hist is None or not hist.counts:
        return "Histogram: nothing scored."
    counts, edges = hist.counts, hist.edges
    total = sum(counts)
    top = max(range(len(counts)), key=lambda i: (counts[i], -i))
    span = f"{_num(edges[0])} … {_num(edges[-1])}"
    if total and counts[top] / total >= CONCENTRATED_SHARE:
        return (
            f"Histogram ({len(counts)} bins over {span}): heavily concentrated: "
            f"{_pct(counts[top] / total, 1)} of scored documents in "
            f"[{_num(edges[top])}, {_num(edges[top + 1])}]; read the quantiles instead."
        )
    return f"Histogram ({len(counts)} bins over {span}, raw counts): `{sparkline(counts)}`"


def _signal(block: SignalBlock, plots: Mapping[str, str] | None) -> list[str]:
    health = block.health or Health()
    direction = block.direction or ""
    lines = [
        f"### `{block.signal}`",
        "",
        f"Direction `{direction}` ({_KEEPS.get(direction, '')}), units {block.units}; "
        f"scored {_num(health.documents_scored)} of "
        f"{_num(health.documents_attempted)} "
        f"({_num(health.scoring_failures)} scorer failures, "
        f"{_num(health.non_finite_scores)} non-finite).",
        "",
    ]
    for note in block.notes or []:
        lines += [f"> **NOTE:** {note}", ""]
    micro = (block.views.get("micro") if block.views else None) or {}
    micro = dict(sorted(micro.items(), key=lambda kv: _quantile_order(kv[0])))
    lines += [
        "Micro quantiles:",
        "",
        *_table(list(micro), [[_num(v) for v in micro.values()]]),
        "",
        _histogram_line(block.histogram),
        "",
    ]
    rows = _gates(block)
    if rows:
        interval = direction == "interval"
        lines += [
            "Gates: the tightest swept threshold keeping at least each share (micro)"
            + (", each bound alone:" if interval else ":"),
            "",
            *_table(
                ["Keep at least", "Bound", "Threshold", "Retained"],
                [[_pct(r["target"], 0), r["bound"], _num(r["threshold"], 6),
                  _pct(r["retained"])] for r in rows],
            ),
            "",
        ]
    else:
        lines += ["Gates: retention suppressed, no gate table.", ""]
    default = block.curator_default
    if default:
        lines += [
            f"Curator default: {_bounds_text(default.thresholds)} keeps "
            f"{_pct(default.retained)} ({default.note}).",
            "",
        ]
    bands = block.retention_stable_bands
    if bands:
        spans = "; ".join(
            f"{_num(b.threshold_low)} … {_num(b.threshold_high)} "
            f"(keeps {_pct(b.retained_at_threshold_low)} … "
            f"{_pct(b.retained_at_threshold_high)})"
            for b in bands
        )
        lines += [f"Stable bands (each end is an alternative single bound): {spans}.", ""]
    if plots:
        links = [f"[{kind}]({path})" for kind, path in sorted(plots.items())]
        lines += ["Plots: " + " · ".join(links), ""]
    return lines


def _cooccurrence(pairs: Sequence[Cooccurrence] | None) -> list[str]:
    if not pairs:
        return []
    rows = [
        [f"`{p.signal_a}`", f"`{p.signal_b}`", _count(p.rejected_by_a),
         _count(p.rejected_by_b), _count(p.rejected_by_both),
         _pct(p.share_of_a_also_rejected_by_b, 1)]
        for p in pairs
    ]
    return [
        "## Co-occurrence at Curator defaults",
        "",
        "Rejections are micro-weighted (estimated corpus documents).",
        "",
        *_table(["A", "B", "Rejected by A", "Rejected by B", "By both",
                 "Share of A also rejected by B"], rows),
        "",
    ]


def _simulation(sim: PolicySimulation | None) -> list[str]:
    lines = ["## Policy simulation", ""]
    if sim is None:
        return [*lines, "Not computed (see the notes).", ""]
    target = SIMULATION_TARGET if sim.target_retention is None else sim.target_retention
    lines += [
        f"Every one-sided signal at its tightest grid point keeping ≥ "
        f"{_pct(target, 0)} on its own, all {sim.gates} gates "
        f"together. Counts are micro-weighted (estimated corpus documents).",
        "",
        f"- Documents: {_count(sim.documents)} (sampled {_num(sim.sampled_documents)})",
        f"- Kept: {_count(sim.kept)}; dropped: {_count(sim.dropped)}; "
        f"retention {_pct(sim.retention)}",
        f"- Sum of marginal drop shares: {_pct(sim.sum_of_marginals)} "
        f"(vs {_pct(None if sim.retention is None else 1 - sim.retention)} "
        "dropped together)",
        f"- {sim.order_note}",
        "",
        *_table(
            ["Gate", "Threshold", "Fails alone", "Shared", "Unique", "Incremental",
             "Retention without"],
            [[f"`{g.signal}`", _bounds_text(g.thresholds), _count(g.fails_alone),
              _count(g.shared), _count(g.unique), _count(g.incremental),
              _pct(g.retention_without)] for g in sim.per_gate or []],
        ),
        "",
    ]
    for skip in sim.skipped or []:
        lines += [f"- `{skip.signal}` not gated: {skip.reason}"]
    return lines + ([""] if sim.skipped else [])


def approve_block(report: ProfileReport) -> list[str]:
    """The commented-out YAML: one-sided signals at their 99% point, nothing approved.

    Uncommented (drop the leading ``# `` of each line) it reads as
    ``{approval{approver, date, method, evidence}, thresholds[{signal, max|min}]}``.
    ``approver`` and ``evidence`` are left empty on purpose, so an unedited block fails
    validation.
    """
    body = [
        "approval:",
        '  approver: ""',
        '  date: ""',
        "  method: manual",
        '  evidence: ""  # REQUIRED: what you reviewed (this summary, plots, samples)',
        "thresholds:",
    ]
    skipped: list[str] = []
    sets: list[str] = []
    for block in report.signals or []:
        if block.direction == "interval":
            skipped.append(f"{block.signal} (interval: pick both bounds from the surface)")
            continue
        row = next((r for r in _gates(block) if r["target"] == GATE_TARGETS[0]), None)
        if row is None or row["threshold"] is None:
            skipped.append(f"{block.signal} (no swept point keeps 99%)")
            continue
        body += [
            f"  - signal: {block.signal}",
            f"    {row['bound']}: {_yaml_num(row['threshold'])}  # keeps {_pct(row['retained'])}",
        ]
        sets.append(f"--set {block.signal}={_yaml_num(row['threshold'])}")
    lines = [
        "## Approve block",
        "",
        "A starting point, not a recommendation: each one-sided signal at its tightest "
        "swept threshold keeping at least 99% (micro). Edit the thresholds, fill in "
        "approver, date and evidence: a record of the choice to keep beside the policy.",
        "",
        "```yaml",
        *[f"# {line}" for line in body],
        "```",
        "",
        "To approve these choices, pass them to `curate approve` (or put them under "
        "`approve.thresholds` of a flow config as `signal: value`):",
        "",
        "```bash",
        "curate approve --candidate candidate_policies.yaml \\",
        *[f"    {item} \\" for item in sets],
        '    --approver "NAME" --evidence "WHAT YOU REVIEWED" --out approved_policy.yaml',
        "```",
        "",
    ]
    if skipped:
        lines += ["Not in the block: " + "; ".join(skipped) + ".", ""]
    return lines


def render_summary(
    report: ProfileReport | Mapping[str, Any],
    plots: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """``profile_summary.md`` for ``report``; ``plots`` maps signal → {kind: relative path}.

    A mapping (the step's report before it is written) is read through the model first,
    as the written report is (``models.build``: a NaN becomes null), so the summary of a
    run and the one rebuilt from its ``profile_report.json`` are the same bytes.
    """
    if not isinstance(report, ProfileReport):
        report = ProfileReport.model_validate(models.build(ProfileReport, dict(report)))
    lines = ["# Profile summary", "", *_corpus(report), *_languages(
        report.language_composition)]
    lines += ["## Signals", ""]
    for block in report.signals or []:
        lines += _signal(block, plots.get(block.signal) if plots else None)
    lines += _cooccurrence(report.cooccurrence)
    lines += _simulation(report.policy_simulation)
    lines += approve_block(report)
    return "\n".join(lines).rstrip("\n") + "\n"
