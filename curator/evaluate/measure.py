"""Measure what an approved policy does on labelled sets (``curate evaluate``).

Not a flow step: nothing is checkpointed, no corpus is written. The documents go
through the filter's own decision code (:func:`curator.filter.gates.decide`, the same
gates in the same order, scored by :func:`curator.signals.scoring.score_batch` with the
policy's pack), so a document dropped here is one the filter would drop.

What is checked and what is not:

- the policy must pass schema validation (:func:`curator.policy.load_policy`, no
  override): ``policy_not_approved`` / ``policy_invalid`` / ``policy_unresolved``;
- the corpus fingerprint and the signals' implementation version are *not* checked:
  they matter when a policy is applied to a corpus, not when it is measured; the
  report records the policy's and the installed version side by side;
- the pack is the one the policy names (``langpack.language_tag``) under
  ``langpack_dir``; if its content hash differs from the policy's, the measurement
  still runs (what would this policy do with this pack?) and says so in ``warnings``
  and ``langpack.matches_policy``;
- a policy signal the pack cannot compute (a missing capability, or ``token_count``
  without a tokenizer) is *not scored*: its gate is left out, listed in
  ``not_scored``, and warned about.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from curator import models
from curator.artifacts import tool_revision, utc_now
from curator.corpus.langid import DEFAULT_MAX_CHARS, FastTextLangId, LanguageModel
from curator.errors import CuratorError
from curator.evaluate.labelled import PHENOMENA, LabelledDoc, read_labelled
from curator.filter.gates import LANGUAGE_GATE, GatePlan, LanguageGate, decide
from curator.langpack import LangPack
from curator.langpack.loader import load_langpack
from curator.models import EvaluationReport
from curator.policy import LoadedPolicy, load_policy
from curator.signals.registry import IMPL_VERSION, REGISTRY, missing_requirements

SCHEMA_VERSION = 1
BATCH = 2048
#: ids listed per kind of error (false rejections, missed noise)
LISTED = 50
LANGID_PHENOMENON = "langid_error"


def evaluate_policy(
    policy_path: str | os.PathLike[str],
    labelled: Sequence[str | os.PathLike[str]],
    *,
    langpack_dir: str | os.PathLike[str] | None,
    language_codes: Sequence[str] = (),
    min_langid_score: float = 0.3,
    words: tuple[int, int] | None = None,
    langid_model: str | None = None,
    langid_max_chars: int | None = DEFAULT_MAX_CHARS,
    model: LanguageModel | None = None,
) -> dict[str, Any]:
    """The evaluation report (a JSON-ready dict; see docs/evaluate.md).

    ``language_codes`` (empty: no language gate), ``min_langid_score``, ``words``
    (``(min_words, max_words)`` or None) and the model options mean what the filter's
    keys of the same names mean. ``model`` replaces the fastText model (tests).
    """
    started = utc_now()
    policy = load_policy(policy_path)  # strict: no override when measuring
    docs, files = read_labelled(labelled)
    if langpack_dir is not None and not str(langpack_dir).strip():
        raise CuratorError("missing_langpack_dir",
                           "--langpack-dir is blank: leave it out for the packs installed with "
                           "curator, or name the directory holding the policy's pack")
    pack = _load_pack(policy, langpack_dir)
    warnings: list[str] = []
    if pack.content_hash != policy.langpack_content_hash:
        warnings.append(f"[policy_langpack_mismatch] the policy was measured with pack "
                        f"{policy.langpack_content_hash!r}, this is {pack.content_hash!r}: "
                        "the filter would refuse this pair; measured anyway")
    if policy.signals_impl_version != IMPL_VERSION:
        warnings.append(f"[signals_impl_version_differs] the policy was measured with signals "
                        f"{policy.signals_impl_version!r}, installed are {IMPL_VERSION!r}: the "
                        "filter would refuse it; measured with the installed signals")
    scored, not_scored = _split_signals(policy, pack)
    for entry in not_scored:
        warnings.append(f"[not_scored] {entry['signal']}: {entry['reason']}; its gate is left "
                        "out of this measurement")
    if words is not None:
        lo, hi = words
        if lo > hi or lo < 0:
            raise CuratorError("config_error", f"--words {lo}:{hi}: need 0 <= min <= max")
        if not pack.supports("word_segmentation"):
            raise CuratorError("incomplete_word_filter",
                               f"word bounds need word segmentation, which pack "
                               f"{pack.language_tag} does not declare")
    if isinstance(min_langid_score, bool) or not math.isfinite(min_langid_score):
        # the filter's quality_filters.min_langid_score is a finite real (curator.config.Real)
        raise CuratorError("config_error", f"--min-langid-score {min_langid_score!r}: "
                           "expected a finite number")
    language = None
    if language_codes:
        language = LanguageGate(tuple(language_codes), min_langid_score)
        if model is None:
            model = FastTextLangId.open(langid_model, langid_max_chars)
    plan = GatePlan(mode="filter", language=language, words=words, policy=scored, pack=pack)
    kept, first, failed = _decide_all(plan, docs, model)
    if language is not None and docs and all(g == LANGUAGE_GATE for g in first):
        # the filter's own refusal of the same settings (curator/steps/filter.py)
        raise CuratorError(
            "language_filter_removed_everything",
            f"the language gate removed all {len(docs)} documents: --language "
            f"{' '.join(language.codes)} does not match the labelled set (or "
            f"--min-langid-score {language.min_score} is too high)")
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": "curate/evaluate",
        "producer": {"tool_revision": tool_revision(), "started_at": started,
                     "completed_at": utc_now()},
        "policy": _policy_block(policy),
        "langpack": {**_pack_identity(pack),
                     "policy_content_hash": policy.langpack_content_hash,
                     "matches_policy": pack.content_hash == policy.langpack_content_hash},
        "signals_impl_version": {"policy": policy.signals_impl_version,
                                 "installed": IMPL_VERSION},
        "labelled_files": [f.describe() for f in files],
        "gates": plan.gate_names,
        "language_gate": ({"codes": list(language.codes), "min_langid_score": language.min_score,
                           "model": _describe_model(model)} if language else None),
        "word_bounds": {"min_words": words[0], "max_words": words[1]} if words else None,
        "not_scored": not_scored,
        "warnings": warnings,
    }
    report.update(_measure(docs, kept, first, failed, plan.gate_names, language is not None))
    return models.build(EvaluationReport, report)


def _load_pack(policy: LoadedPolicy, langpack_dir: str | os.PathLike[str] | None) -> LangPack:
    doc_pack = policy.doc.get("langpack") or {}
    tag = doc_pack.get("language_tag") if isinstance(doc_pack, dict) else None
    if not isinstance(tag, str) or not tag:
        raise CuratorError("policy_langpack_mismatch",
                           f"policy {policy.path} names no langpack.language_tag")
    return load_langpack(langpack_dir, tag)


def _split_signals(policy: LoadedPolicy, pack: LangPack
                   ) -> tuple[tuple[tuple[str, float | None, float | None], ...],
                              list[dict[str, str]]]:
    """The policy's gates this pack can score (policy order), and the others."""
    scored: list[tuple[str, float | None, float | None]] = []
    not_scored: list[dict[str, str]] = []
    for name, (lo, hi) in policy.thresholds.items():
        unmet = missing_requirements(REGISTRY[name], set(pack.capabilities))
        if unmet:
            not_scored.append({"signal": name, "reason": f"needs {', '.join(unmet)}, which "
                               f"pack {pack.language_tag} does not provide"})
        elif name == "token_count":
            not_scored.append({"signal": name, "reason": "no tokenizer backend is bundled"})
        else:
            scored.append((name, lo, hi))
    return tuple(scored), not_scored


def _decide_all(plan: GatePlan, docs: list[LabelledDoc], model: LanguageModel | None
                ) -> tuple[np.ndarray, list[str | None], list[list[str]]]:
    from curator.signals.scoring import score_batch

    def score(batch: list[str], names: list[str]) -> dict[str, np.ndarray]:
        frame = score_batch(batch, names, plan.pack)
        return {n: frame[n].to_numpy().astype(np.float64) for n in names}

    kept = np.ones(len(docs), dtype=bool)
    first: list[str | None] = []
    failed: list[list[str]] = []
    for start in range(0, len(docs), BATCH):
        texts = [d.text for d in docs[start:start + BATCH]]
        decision = decide(plan, texts, model, score)
        kept[start:start + len(texts)] = decision.kept
        first += decision.first_gate
        failed += decision.failed
    return kept, first, failed


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _measure(docs: list[LabelledDoc], kept: np.ndarray, first: list[str | None],
             failed: list[list[str]], gates: list[str], language_gate: bool) -> dict[str, Any]:
    """Totals, the per-phenomenon table, per-gate attribution, and the ids behind the
    two kinds of error."""
    n = Counter(d.label for d in docs)
    dropped = Counter(d.label for d, k in zip(docs, kept, strict=True) if not k)
    phenomena = []
    for ph in PHENOMENA:
        rows = [(d, k) for d, k in zip(docs, kept, strict=True) if d.phenomenon == ph]
        n_keep = sum(1 for d, _ in rows if d.label == "keep")
        n_drop = len(rows) - n_keep
        keep_dropped = sum(1 for d, k in rows if d.label == "keep" and not k)
        drop_dropped = sum(1 for d, k in rows if d.label == "drop" and not k)
        exercised, note = bool(rows), "" if rows else "absent from the labelled set"
        if ph == LANGID_PHENOMENON and rows and not language_gate:
            exercised = False
            note = ("not exercised: no language gate configured (--language); its documents "
                    "are counted in the totals, removed only by other gates")
        phenomena.append({
            "phenomenon": ph, "exercised": exercised, "note": note,
            "keep": n_keep, "keep_dropped": keep_dropped,
            "false_rejection_rate": _rate(keep_dropped, n_keep),
            "drop": n_drop, "drop_dropped": drop_dropped,
            "noise_removal_rate": _rate(drop_dropped, n_drop),
        })
    attribution = []
    for gate in gates:
        attribution.append({
            "gate": gate,
            "removed_keep": sum(1 for d, g in zip(docs, first, strict=True)
                                if g == gate and d.label == "keep"),
            "removed_drop": sum(1 for d, g in zip(docs, first, strict=True)
                                if g == gate and d.label == "drop"),
            "failed_keep": sum(1 for d, f in zip(docs, failed, strict=True)
                               if gate in f and d.label == "keep"),
            "failed_drop": sum(1 for d, f in zip(docs, failed, strict=True)
                               if gate in f and d.label == "drop"),
        })
    false_rejections = [
        {"id": d.id, "phenomenon": d.phenomenon, "removed_by": g, "gates": f, "file": d.file,
         "line": d.line}
        for d, k, g, f in zip(docs, kept, first, failed, strict=True)
        if d.label == "keep" and not k]
    missed = [{"id": d.id, "phenomenon": d.phenomenon, "file": d.file, "line": d.line}
              for d, k in zip(docs, kept, strict=True) if d.label == "drop" and k]
    return {
        "totals": {
            "documents": len(docs), "keep": n["keep"], "drop": n["drop"],
            "keep_dropped": dropped["keep"], "drop_dropped": dropped["drop"],
            "false_rejection_rate": _rate(dropped["keep"], n["keep"]),
            "noise_removal_rate": _rate(dropped["drop"], n["drop"]),
        },
        "phenomena": phenomena,
        "attribution": attribution,
        "false_rejections": false_rejections[:LISTED],
        "missed_noise": missed[:LISTED],
    }


def _policy_block(policy: LoadedPolicy) -> dict[str, Any]:
    approval = policy.doc.get("approval") or {}
    return {
        "path": policy.path, "status": policy.status, "policy_digest": policy.policy_digest,
        "profile_digest": policy.profile_digest,
        "corpus_fingerprint": policy.corpus_fingerprint,
        "approval": {"approver": approval.get("approver"), "method": approval.get("method"),
                     "date": str(approval["date"]) if approval.get("date") else None},
        "thresholds": [{"signal": name, "min": lo, "max": hi}
                       for name, (lo, hi) in policy.thresholds.items()],
    }


def _pack_identity(pack: LangPack) -> dict[str, Any]:
    return {"pack_id": pack.pack_id, "language_tag": pack.language_tag,
            "version": pack.version, "content_hash": pack.content_hash}


def _describe_model(model: LanguageModel | None) -> dict[str, Any] | None:
    describe = getattr(model, "describe", None)
    return describe() if callable(describe) else {"model": type(model).__name__}
