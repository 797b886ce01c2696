"""The subset's artifacts: ``plan.json`` and ``subset_report.json`` (pure building), and
their rendering for people (markdown, the tier table, one CLI line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curator import models
from curator.io.writers import atomic_file
from curator.models import SubsetPlan, SubsetReport
from curator.models.subset_report import Stratum, SubsetCorpus, TokenCache
from curator.steps.spec import Rendering
from curator.subset.planning import PlanTotals

SCHEMA_VERSION = 1
#: 2: the order is sha256(f"{seed}:{id}"), was blake2b; 3: a summary, the ids in one
#: file per range of the order (``ranges``), was every id in ``strata``
PLAN_SCHEMA_VERSION = 3


def plan_json(plan: PlanTotals, ranges: list[dict[str, Any]], *, seed: int,
              budgets: list[int], bands: list[int], score_field: str | None, unit: str,
              tokenizer: dict[str, Any] | None) -> dict[str, Any]:
    """``plan.json`` (docs/subset.md): the strata's totals, the quotas and prefixes, and
    the per-range id files (``ranges``: ``{file, documents}`` in the order), built
    through its model (Python numbers: ``int``/``float`` of any numpy value)."""
    return models.build(SubsetPlan, {
        "schema_version": PLAN_SCHEMA_VERSION, "seed": seed, "budgets": budgets,
        "length_bands": bands, "score_field": score_field,
        "score_cut_points": [float(x) for x in plan.cut_points],
        "total_tokens": int(plan.total_tokens),
        "stratum_tokens": {s: int(n) for s, n in
                           zip(plan.strata, plan.stratum_tokens, strict=True)},
        "stratum_documents": {s: int(n) for s, n in
                              zip(plan.strata, plan.stratum_docs, strict=True)},
        "ranges": ranges,
        "quotas": {str(t.budget): {s: int(q) for s, q in zip(plan.strata, t.quotas, strict=True)}
                   for t in plan.tiers},
        "taken": {str(t.budget): {s: int(n) for s, n in
                                  zip(plan.strata, t.taken_docs, strict=True)}
                  for t in plan.tiers},
        "warnings": plan.warnings, "unit": unit, "tokenizer": tokenizer,
    })


def tier_rows(plan: PlanTotals, unit: str, outputs: list[str], written: list[int]
              ) -> list[dict[str, Any]]:
    rows = []
    for t, tier in enumerate(plan.tiers):
        deviation = {s: took - q for s, took, q in
                     zip(plan.strata, tier.taken_tokens, tier.quotas, strict=True)}
        exhausted = [s for s, n, total in zip(plan.strata, tier.taken_docs, plan.stratum_docs,
                                              strict=True) if n == total]
        rows.append({
            "budget": tier.budget, "document_count": tier.document_count,
            "achieved_tokens": tier.achieved, "token_shortfall": tier.budget - tier.achieved,
            "per_stratum_deviation": deviation,
            "per_stratum_tokens": dict(zip(plan.strata, tier.taken_tokens, strict=True)),
            "documents_refilled": 0, "strata_exhausted": exhausted, "unit": unit,
            "documents_written": written[t] if t < len(written) else 0,
            "output": outputs[t],
        })
    return rows


def interpretation(unit: str) -> str:
    return (f"Each tier holds whole documents of each stratum (source, length band, score "
            f"decile) in one fixed pseudo-random order, up to the stratum's D'Hondt share of "
            f"the budget in {unit}; a stratum stops at the first document that would exceed "
            "its share, so a tier may fall short of its budget (token_shortfall), and no "
            "shortfall is made up from another stratum. Every tier contains every smaller "
            "one.")


def _cache_text(cache: TokenCache | None) -> str:
    """``{dir, hits, misses}`` as a person reads it."""
    if cache is None:
        return str(cache)
    where = f"`{cache.dir}`" if cache.dir else "none (whitespace words are not cached)"
    return f"{cache.hits or 0:,} hits, {cache.misses or 0:,} misses; {where}"


def _bar(share: float, width: int = 20) -> str:
    n = round(share * width)
    return "#" * n + "." * (width - n)


def _strata(report: SubsetReport) -> dict[str, Stratum]:
    return (report.stratification.strata if report.stratification else None) or {}


def _tokens(stratum: Stratum) -> int:
    if stratum.tokens is None:
        raise ValueError("a stratum without its tokens")
    return stratum.tokens


def render(report: SubsetReport) -> Rendering:
    tiers = report.tiers or []
    unit = report.unit if "unit" in report.model_fields_set else "tokens"
    corpus = report.corpus or SubsetCorpus()
    tok = report.tokenizer
    who = f"{tok.name} ({(tok.revision or '')[:19]}...)" if tok else "whitespace words"
    step_id = report.producer.step_id if report.producer is not None else None
    lines = [f"# {step_id}", "",
             f"- corpus: {corpus.documents or 0:,} documents, "
             f"{corpus.total_tokens or 0:,} {unit}; counted with {who}",
             f"- token cache: {_cache_text(report.token_cache)}", "",
             "## Tiers", "",
             f"| budget ({unit}) | documents | achieved ({unit}) | achieved (% of budget) "
             f"| shortfall ({unit}) | strata exhausted |",
             "|---:|---:|---:|---:|---:|---:|"]
    table = []
    for t in tiers:
        docs, achieved, shortfall = t.document_count, t.achieved_tokens, t.token_shortfall
        if docs is None or achieved is None or shortfall is None or t.strata_exhausted is None:
            raise ValueError("a tier without its counts")  # the report is shown as failed
        lines.append(f"| {t.budget:,} | {docs:,} | {achieved:,} | "
                     f"{100 * achieved / (t.budget or 1):.1f}% | "
                     f"{shortfall:,} | {len(t.strata_exhausted)} |")
        table.append({f"budget ({unit})": t.budget, "documents": docs,
                      f"achieved ({unit})": achieved,
                      "achieved (% of budget)": round(100 * achieved / (t.budget or 1), 1),
                      f"shortfall ({unit})": shortfall,
                      "strata exhausted": len(t.strata_exhausted)})
    strata = _strata(report)
    total = sum(_tokens(s) for s in strata.values()) or 1
    if strata and tiers:
        lines += ["", "## Per-stratum token shares", "", "| stratum | corpus | "
                  + " | ".join(f"{t.budget:,}" for t in tiers) + " |",
                  "|---|---|" + "---|" * len(tiers)]
        for key, s in strata.items():
            cells = [f"`{_bar(_tokens(s) / total)}` {_tokens(s) / total:.1%}"]
            for t in tiers:
                got = t.per_stratum_tokens.get(key, 0) if t.per_stratum_tokens else 0
                share = got / (t.achieved_tokens or 1)
                cells.append(f"`{_bar(share)}` {share:.1%}")
            lines.append(f"| {key} | " + " | ".join(cells) + " |")
        lines += picture_markdown(report)
    lines += ["", "## Warnings", ""]
    lines += [f"- `{w.id}`: {w.message}" for w in report.warnings or []] or ["none"]
    summary = (f"subset: {len(tiers)} tiers ("
               + ", ".join(f"{t.budget:,}: {t.document_count} docs, "
                           f"{t.achieved_tokens:,} {unit}" for t in tiers)
               + f"); nesting verified: {bool(report.nesting_verified)}")
    return Rendering("\n".join(lines) + "\n", {"tiers": table}, summary)


PICTURE_NAME = "tier_shares.png"
#: a bigger picture is not inlined into the markdown (a Prefect artifact is a DB row)
MAX_INLINE_PICTURE_BYTES = 1_000_000


def picture_markdown(report: SubsetReport) -> list[str]:
    """The report's ``tier_shares.png`` as a markdown image with a ``data:`` URI, so the
    ``subset-report`` Prefect artifact shows it (the Prefect UI cannot open a file on
    the worker's disk); no lines when there is no picture, or it is too big to inline."""
    import base64

    path = report.picture
    picture = Path(str(path)) if path else None
    if picture is None or picture.suffix != ".png" or not picture.is_file() or \
            picture.stat().st_size > MAX_INLINE_PICTURE_BYTES:
        return []
    data = base64.b64encode(picture.read_bytes()).decode("ascii")
    unit = report.unit if "unit" in report.model_fields_set else "tokens"
    return ["", f"![per-stratum shares of {unit}: the corpus and each tier]"
                f"(data:image/png;base64,{data})",
            "", f"*Per-stratum shares of {unit}, the corpus and each tier "
                f"(`{picture.name}`).*"]


def write_picture(report: SubsetReport, path: Path) -> Path | None:
    """Per-stratum token shares of the corpus and of each tier, as stacked horizontal
    bars (the ten largest strata, the rest as ``other``); PNG, Agg, no ``Software``
    metadata, written atomically. ``None`` when there is nothing to draw."""

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    strata = _strata(report)
    tiers = report.tiers or []
    if not strata or not tiers:
        return None
    top = [k for k, _ in sorted(strata.items(), key=lambda kv: (-_tokens(kv[1]), kv[0]))[:10]]
    rows = [("corpus", {k: _tokens(s) for k, s in strata.items()})]
    rows += [(f"{t.budget:,}", t.per_stratum_tokens or {}) for t in tiers]
    fig = Figure(figsize=(8, 1.2 + 0.45 * len(rows)), dpi=100)
    ax = fig.add_subplot()
    colors = [matplotlib.colormaps["tab20"](i) for i in range(len(top) + 1)]
    for y, (_, tokens) in enumerate(rows):
        total = sum(tokens.values()) or 1
        left = 0.0
        shares = [tokens.get(k, 0) / total for k in top]
        shares.append(max(0.0, 1 - sum(shares)))
        for i, share in enumerate(shares):
            ax.barh(y, share, left=left, color=colors[i],
                    label=([*top, "other"])[i] if y == 0 else None)
            left += share
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    unit = report.unit if "unit" in report.model_fields_set else "tokens"
    ax.set_xlabel(f"share of {unit}")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    fig.tight_layout()
    with atomic_file(path) as f:  # to the output's storage too (curator.io.shared)
        fig.savefig(f, format="png", metadata={"Software": None})
    return path
