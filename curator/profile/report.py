"""The profile report: built from the merged sample scores (pure functions), and its
rendering for people (the summary, the signals table, one CLI line)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from curator.artifacts import canonical_digest
from curator.corpus.langid import FastTextLangId
from curator.errors import CuratorError
from curator.langpack import LangPack
from curator.models import ProfileReport
from curator.profile.passes import LANGUAGE, LANGUAGE_SCORE
from curator.profile.summary import render_summary
from curator.signals.registry import IMPL_VERSION, SignalSpec
from curator.steps.spec import Rendering

SAMPLING_METHOD = "per-source proportional allocation, hash-bottom-k by sha256(seed:key)"


def signal_rows(report: ProfileReport) -> list[dict[str, Any]]:
    """One row per signal: median, p10/p90 and the gate points a reviewer looks at first."""
    if report.signals is None:
        raise ValueError("a profile report without its signals")  # shown as failed, alone
    rows = []
    for block in report.signals:
        micro = (block.views.get("micro") if block.views else None) or {}
        rows.append({
            "signal": block.signal, "units": block.units,
            "direction": block.direction, "documents scored": block.n_scored,
            "p10": micro.get("p10"), "p50": micro.get("p50"), "p90": micro.get("p90"),
        })
    return rows


def render(report: ProfileReport) -> Rendering:
    corpus, sampling, producer = report.corpus, report.sampling, report.producer
    if corpus is None or sampling is None or producer is None or report.signals is None \
            or producer.output_dir is None:
        raise ValueError("a profile report without its corpus")  # shown as failed, alone
    out = producer.output_dir.rstrip("/")  # a local folder or a URL (never a Path of one)
    summary = (
        f"profile: {corpus.document_count} documents in {corpus.source_count} sources, "
        f"{sampling.sampled} sampled, {len(report.signals)} signals; "
        f"fingerprint {corpus.fingerprint}\n"
        f"  summary    {out}/profile_summary.md\n"
        f"  candidates {out}/candidate_policies.yaml  (approve with `curate approve`)\n"
        f"  report     {out}/profile_report.json"
    )
    # profile_summary.md, rendered from the report as written (curator/profile/summary.py)
    return Rendering(render_summary(report), {"signals": signal_rows(report)}, summary)


def sample_weights(scores: pl.DataFrame, populations: dict[str, int]) -> tuple[np.ndarray, ...]:
    sources = sorted(populations)
    index = {s: i for i, s in enumerate(sources)}
    drawn = scores.group_by("source").len()
    drawn_n = dict(zip(drawn["source"].to_list(), drawn["len"].to_list(), strict=True))
    src = scores["source"].to_list()
    weights = np.array([populations[s] / drawn_n[s] for s in src], dtype=np.float64)
    source_idx = np.array([index[s] for s in src], dtype=np.int64)
    return weights, source_idx, np.array(sources, dtype=object)


def build_report(
    sampling: dict[str, int],
    band_search: dict[str, float],
    pack: LangPack,
    specs: list[SignalSpec],
    notes: list[str],
    corpus: dict[str, Any],
    populations: dict[str, int],
    allocations: dict[str, int],
    scores: pl.DataFrame,
    stats: dict[str, float],
    langid: FastTextLangId,
    step_id: str,
) -> dict[str, Any]:
    from curator.profile import stats as S

    weights, source_idx, sources = sample_weights(scores, populations)
    blocks = []
    arrays: dict[str, np.ndarray] = {}
    for spec in specs:
        values = scores[spec.name].to_numpy().astype(np.float64)
        arrays[spec.name] = values
        failures = int(stats.get(f"profile_score.scoring_failures.{spec.name}", 0))
        block = S.signal_block(spec, values, weights, source_idx, list(sources),
                               scoring_failures=failures,
                               band_search=band_search)
        curve = block.get("retention")
        if isinstance(curve, list) and curve and not S.verify_direction(spec, values, weights,
                                                                         curve):
            raise CuratorError(
                "direction_mismatch",
                f"{spec.name}: the retention curve disagrees with the keep rule of a "
                f"{spec.direction!r} signal; the registry or the scorer is wrong",
            )
        blocks.append(block)
    registry = {s.name: s for s in specs}
    cooccurrence = S.cooccurrence(registry, arrays, weights)
    simulation = S.policy_simulation(registry, arrays, weights)
    if cooccurrence is None:
        notes.append(S.COOCCURRENCE_UNAVAILABLE)
    if simulation is None:
        notes.append(S.SIMULATION_UNAVAILABLE)
    report: dict[str, Any] = {
        "step_id": step_id,
        "schema_version": 1,
        "signals_impl_version": IMPL_VERSION,
        "langpack": pack.describe(),
        "corpus": corpus,
        "sampling": {**sampling, "sampled": scores.height, "method": SAMPLING_METHOD,
                     "allocations": allocations},
        "tokenizer": None,
        "views": {"macro": "nan-mean over sources of per-source quantiles",
                  "micro": "every sampled document weighted by its source's "
                           "population / drawn"},
        "notes": notes,
        "signals": blocks,
        "language_composition": language_composition(scores, langid),
        "cooccurrence": cooccurrence,
        "policy_simulation": simulation,
        "interpretation": interpretation(),
    }
    report["profile_digest"] = canonical_digest(report)
    return report


def interpretation() -> dict[str, str]:
    return {
        "retention": "share of the corpus (micro view) a single gate at that threshold keeps",
        "bands": "contiguous grid runs whose retention lies in band_search; each band's two "
                 "thresholds are alternative single bounds, not a range",
        "direction": "max keeps score <= threshold; min keeps score >= threshold; interval "
                     "keeps lo <= score <= hi",
        "candidates": "candidate_policies.yaml proposes, a person approves with "
                      "`curate approve`; nothing here is applied",
    }


def sample_manifest(
    sampling: dict[str, int],
    populations: dict[str, int],
    allocations: dict[str, int],
    scores: pl.DataFrame,
) -> dict[str, Any]:
    keys: dict[str, list[int]] = {}
    for source, ranks in scores.group_by("source", maintain_order=True).agg(pl.col("rank")) \
            .iter_rows():
        keys[source] = sorted(int(r) for r in ranks)
    rows = []
    for source, population in populations.items():
        drawn = len(keys.get(source, []))
        rows.append({
            "source": source, "population": population, "sampled": allocations.get(source, 0),
            "weight": population / allocations[source] if allocations.get(source) else None,
            "drawn": drawn, "effective_weight": population / drawn if drawn else None,
        })
    return {**sampling, "allocations": rows, "sampled_keys": dict(sorted(keys.items()))}


def language_composition(scores: pl.DataFrame, langid: FastTextLangId) -> dict[str, Any] | None:
    from curator.profile import stats as S

    if LANGUAGE not in scores.columns:
        return None
    desc = langid.describe()  # the model by name and digest: a path is not portable
    return S.language_composition(scores[LANGUAGE].to_list(),
                                  scores[LANGUAGE_SCORE].to_numpy(),
                                  f"{desc['model']} ({desc['sha256']})", desc["max_chars"])
