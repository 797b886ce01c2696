"""``dedup_report.json`` from the phases' statistics and summaries, and its rendering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from curator.artifacts import canonical_digest
from curator.exchange import read_summaries
from curator.io import shared
from curator.models import DedupReport
from curator.steps.spec import Rendering

REPORT_NAME = "dedup_report.json"
SCHEMA_VERSION = 1
BAR = 40


def _bin_key(name: str) -> int:
    return int(name.split("-")[0])


def components(work: Path, buckets: int) -> dict[str, Any]:
    """The component counts and size histogram, added up over the assign buckets."""
    total = removed = largest = 0
    sizes: dict[str, int] = {}
    for s in read_summaries(work / "components", buckets, "the components"):
        total += s["components"]
        removed += s["removed"]
        largest = max(largest, s["largest"])
        for k, n in s["sizes"].items():
            sizes[k] = sizes.get(k, 0) + n
    return {"components": total, "documents_in_components": total + removed,
            "largest_component": largest,
            "component_sizes": dict(sorted(sizes.items(), key=lambda kv: _bin_key(kv[0])))}


def written(work: Path, sids: list[str]) -> dict[str, Any]:
    """The writers' counts, shards and removals per source, in partition order (what
    exists: a failed run's completed partitions)."""
    docs = kept = gone = 0
    by_source: dict[str, int] = {}
    shards, removed_shards = [], []
    for sid in sids:
        path = shared.localize(work / "written" / f"{sid}.json")
        if not path.is_file():
            continue
        w = json.loads(path.read_text())
        docs += w["documents"]
        kept += w["kept"]
        gone += w["removed"]
        for k, n in w["removed_by_source"].items():
            by_source[k] = by_source.get(k, 0) + n
        if "shard" in w:
            shards.append(w["shard"])
        if "removed_shard" in w:
            removed_shards.append(w["removed_shard"])
    return {"documents_in": docs, "documents_out": kept, "removed": gone,
            "removed_by_source": dict(sorted(by_source.items())), "shards": shards,
            "removed_shards": removed_shards}


def config_digest(params: dict[str, Any]) -> str:
    return canonical_digest(params)


def histogram(sizes: dict[str, int]) -> list[str]:
    """The component-size histogram as text bars (the report's picture)."""
    if not sizes:
        return ["(no components)"]
    top = max(sizes.values())
    width = max(len(k) for k in sizes)
    return [f"{k:>{width}} | {'#' * max(1, round(BAR * n / top))} {n}"
            for k, n in sizes.items()]


#: a bigger picture is not inlined into the markdown (a Prefect artifact is a DB row)
MAX_INLINE_PICTURE_BYTES = 1_000_000


def histogram_png(sizes: dict[str, int]) -> bytes | None:
    """The component-size histogram as a PNG (bars per size bin; Agg, no ``Software``
    metadata), for the Prefect artifact, which cannot show a file on a worker's disk;
    ``None`` without components."""
    if not sizes:
        return None
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 2.6), dpi=100)
    ax = fig.add_subplot()
    ax.bar(range(len(sizes)), list(sizes.values()), color="#4c72b0")
    ax.set_xticks(range(len(sizes)), list(sizes))
    ax.set_xlabel("documents in the component")
    ax.set_ylabel("components")
    ax.set_title("near-duplicate components by size", fontsize=10)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata={"Software": None})
    return out.getvalue()


def picture_markdown(sizes: dict[str, int]) -> list[str]:
    """The histogram as a markdown image with a ``data:`` URI (no lines when there is
    nothing to draw or the picture is too big to inline)."""
    import base64

    png = histogram_png(sizes)
    if png is None or len(png) > MAX_INLINE_PICTURE_BYTES:
        return []
    data = base64.b64encode(png).decode("ascii")
    return ["", f"![component sizes](data:image/png;base64,{data})"]


def render(report: DedupReport) -> Rendering:
    if report.documents_in is None or report.params is None:
        raise ValueError("a dedup report without its counts")
    p = report.params
    sizes = report.component_sizes or {}
    lines = [
        f"# {report.step_id}",
        "",
        f"- documents: {report.documents_in} in, {report.removed} removed, "
        f"{report.documents_out} out",
        f"- shingles: {p.get('shingle')} x {p.get('n')}, MinHash {p.get('bands')} bands x "
        f"{p.get('rows')} rows (seed {p.get('seed')}), threshold {p.get('threshold')}, "
        f"verify {p.get('verify')}, keep `{p.get('keep')}`",
        f"- expected recall at the threshold: {p.get('expected_recall')}",
        f"- candidate pairs {report.candidate_pairs}, verified {report.verified_pairs}, "
        f"rejected {report.rejected_pairs}",
        f"- components {report.components} ({report.documents_in_components} documents, "
        f"largest {report.largest_component}), {report.rounds} rounds",
        f"- config digest `{report.config_digest}`",
        "",
        "## Component sizes",
        "",
        "```",
        *histogram(sizes),
        "```",
        *picture_markdown(sizes),
    ]
    for w in report.warnings or []:
        lines.append(f"- warning `{w.id}`: {w.message}")
    table = [{"metric": k, "value": getattr(report, k)} for k in (
        "documents_in", "documents_out", "removed", "candidate_pairs", "verified_pairs",
        "rejected_pairs", "components", "documents_in_components", "largest_component",
        "rounds")]
    tables = {"result": table,
              "component-sizes": [{"size": k, "components": n} for k, n in sizes.items()],
              "removed-by-source": [{"source": k, "removed": n}
                                    for k, n in (report.removed_by_source or {}).items()]}
    summary = (f"dedup: {report.removed} of {report.documents_in} documents removed as "
               f"near-duplicates in {report.components} components; "
               f"{report.documents_out} kept")
    return Rendering("\n".join(lines) + "\n", tables, summary)


__all__ = ["REPORT_NAME", "SCHEMA_VERSION", "DedupReport", "components", "config_digest",
           "render", "written"]
