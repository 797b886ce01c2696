"""``quality_filters.gate_order`` (issue 15): ``cheapest_first`` evaluates the word bounds
and the policy gates before the language gate, never language-scores a record a cheaper
gate removed, and attributes removals in that order; ``diagnose_all_gates`` scores every
gate anyway. The kept records are the same in every order, the ledger and the rejected
records agree, and the audit passes on the result."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from curator.corpus.langid import FastTextLangId
from curator.filter.gates import LANGUAGE_GATE, WORD_GATE, GatePlan, LanguageGate, decide
from curator.filter.ledger import load_ledger
from curator.langpack.loader import load_langpack
from curator.signals.scoring import score_batch
from curator.steps.audit import AuditConfig, run_audit
from tests.filter._support import (
    LANGPACKS,
    THRESHOLDS,
    approve,
    corpus_records,
    manifest,
    multilingual_records,
    profile_candidate,
    rejected,
    run,
    shard_files,
    write_shards,
)


class Recording:
    """The real language model, recording every text it is asked to score."""

    name = "recording"

    def __init__(self) -> None:
        self.model = FastTextLangId.open(None, 500)
        self.seen: list[str] = []

    def predict(self, texts: list[str]) -> tuple[list[str], np.ndarray]:
        self.seen.extend(texts)
        return self.model.predict(texts)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    records = corpus_records(120, seed=11) + multilingual_records()
    # short English: fails the word bounds (and often the language gate too)
    records += [{"text": "yes", "id": "s1"}, {"text": "ok then", "id": "s2"},
                {"text": "Привет, как дела?", "id": "s3"}]
    return [r["text"] for r in records]


def _plan(order: str, diagnose: bool = False) -> GatePlan:
    pack = load_langpack(LANGPACKS, "en")
    return GatePlan(language=LanguageGate(("EN",), 0.3), words=(20, 5000),
                    policy=(("stopword_ratio", 0.3, None), ("white_space", None, 0.2)),
                    pack=pack, order=order, diagnose_all=diagnose)  # type: ignore[arg-type]


def _decide(plan: GatePlan, texts: list[str]) -> tuple[Any, Recording]:
    model = Recording()

    def score(batch: list[str], names: list[str]) -> dict[str, np.ndarray]:
        frame = score_batch(batch, names, plan.pack)
        return {n: frame[n].to_numpy().astype(np.float64) for n in names}

    return decide(plan, texts, model, score), model


def test_cheapest_first_never_scores_a_removed_record(texts: list[str]) -> None:
    ref, ref_model = _decide(_plan("reference"), texts)
    fast, fast_model = _decide(_plan("cheapest_first"), texts)
    # the same records are kept
    assert fast.kept.tolist() == ref.kept.tolist()
    cheap = [WORD_GATE, "stopword_ratio", "white_space"]
    removed_cheaply = [i for i, gates in enumerate(ref.failed) if set(gates) & set(cheap)]
    assert removed_cheaply and any(LANGUAGE_GATE in ref.failed[i] for i in removed_cheaply)
    # the model saw exactly the records no cheaper gate removed, in batch order
    assert fast_model.seen == [t for i, t in enumerate(texts) if i not in removed_cheaply]
    assert ref_model.seen == texts
    for i in removed_cheaply:
        assert fast.unscored[i] and fast.labels[i] is None
        assert np.isnan(fast.scores[LANGUAGE_GATE][i])
        assert LANGUAGE_GATE not in fast.failed[i]
        # attributed to the first failing gate in evaluation order
        assert fast.first_gate[i] == next(g for g in cheap if g in ref.failed[i])
        assert fast.failed[i] == [g for g in cheap if g in ref.failed[i]]
    for i in set(range(len(texts))) - set(removed_cheaply):
        assert fast.labels[i] == ref.labels[i]
        assert fast.scores[LANGUAGE_GATE][i] == ref.scores[LANGUAGE_GATE][i]
        assert fast.failed[i] == ref.failed[i]  # only the language gate, or none
    # somewhere the attribution differs from the reference's (language first)
    assert any(ref.first_gate[i] == LANGUAGE_GATE and fast.first_gate[i] != LANGUAGE_GATE
               for i in removed_cheaply)


def test_diagnose_all_gates_gives_the_full_diagnosis(texts: list[str]) -> None:
    ref, _ = _decide(_plan("reference"), texts)
    fast, _ = _decide(_plan("cheapest_first"), texts)
    full, model = _decide(_plan("cheapest_first", diagnose=True), texts)
    assert model.seen == texts
    assert full.kept.tolist() == ref.kept.tolist()
    assert full.unscored is None
    assert full.first_gate == fast.first_gate  # the same attribution as without it
    assert full.labels == ref.labels
    for i in range(len(texts)):
        assert sorted(full.failed[i]) == sorted(ref.failed[i])  # every gate it fails


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("order")
    records = corpus_records(400, seed=5) + multilingual_records()
    inp = write_shards(root / "in", records, shards=3)
    policy = approve(profile_candidate(inp, root), root / "approved_policy.yaml", THRESHOLDS)
    outs = {}
    for name, quality in [("reference", {}),
                          ("cheapest", {"gate_order": "cheapest_first"}),
                          ("diagnose", {"gate_order": "cheapest_first",
                                        "diagnose_all_gates": True})]:
        outs[name] = root / name
        run(inp, outs[name], policy, quality_filters=quality)
    return {"root": root, "inp": inp, "policy": policy, "outs": outs}


def test_the_step_keeps_the_same_bytes_and_accounts_in_evaluation_order(
        world: dict[str, Any]) -> None:
    outs = world["outs"]
    ref_bytes = [p.read_bytes() for p in shard_files(outs["reference"])]
    rejected_by = {}
    for name, out in outs.items():
        assert [p.read_bytes() for p in shard_files(out)] == ref_bytes
        ledger = load_ledger(out / "curation_ledger.json")  # balanced, re-derived
        rows = [r for r in rejected(out) if r.get("failed") is None]
        assert ledger["filtered_by_reason"] == dict(Counter(r["removed_by"] for r in rows))
        assert manifest(out)["declared"]["filtered"] == ledger["filtered_by_reason"]
        gates = manifest(out)["gates"]
        for r in rows:  # removed_by is the first listed gate, in evaluation order
            assert r["removed_by"] == r["gates"][0]
            assert r["gates"] == [g for g in gates if g in r["gates"]]
        rejected_by[name] = {r["id"]: r for r in rows}
        if name == "reference":
            assert gates[0] == LANGUAGE_GATE and "gate_order" not in ledger["notes"]
        else:
            assert gates[-1] == LANGUAGE_GATE
            assert ledger["notes"]["gate_order"] == "cheapest_first"
    ref, fast, full = rejected_by["reference"], rejected_by["cheapest"], rejected_by["diagnose"]
    assert set(ref) == set(fast) == set(full)
    skipped = [i for i, r in fast.items() if r.get("not_evaluated")]
    assert skipped, "no record was removed before the language gate"
    moved = 0
    for i in skipped:
        assert fast[i]["not_evaluated"] == [LANGUAGE_GATE] and fast[i]["language"] is None
        assert LANGUAGE_GATE not in fast[i]["gates"]
        moved += ref[i]["removed_by"] == LANGUAGE_GATE
        # the full diagnosis: every gate the reference lists, the same attribution
        assert sorted(full[i]["gates"]) == sorted(ref[i]["gates"])
        assert full[i]["removed_by"] == fast[i]["removed_by"]
        assert full[i]["language"] == ref[i]["language"] and "not_evaluated" not in full[i]
    assert moved, "no language-failing record was attributed to a cheaper gate"


@pytest.mark.parametrize("name", ["cheapest", "diagnose"])
def test_the_audit_passes_on_a_cheapest_first_run(world: dict[str, Any], tmp_path: Path,
                                                  name: str) -> None:
    target = world["outs"][name]
    cfg = AuditConfig(target_glob=str(target), output_dir=str(tmp_path / "audit"),
                      declared_manifest=str(target / "run_manifest.json"),
                      ledger_glob=str(target / "curation_ledger.json"),
                      reference_glob=str(world["inp"]), approved_policy=str(world["policy"]),
                      digest_root=str(target), mode="all", comparison_fields=["id", "text"],
                      execution={"executor": "inline"})
    run_audit(cfg)  # raises audit_findings if anything disagrees
    report = json.loads((tmp_path / "audit" / "audit_report.json").read_text())
    assert report["attribution"]["available"] is True
    assert report["attribution"]["filtered_by_reason"] == manifest(target)["declared"]["filtered"]
