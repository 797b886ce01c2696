"""The gates, alone and together, against an independent account of every record; the
ledger that attributes each removal to its gate; the rejected files that say why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from curator.corpus.langid import FastTextLangId
from curator.errors import CuratorError
from curator.filter.gates import GatePlan, LanguageGate, decide
from curator.filter.ledger import load_ledger
from curator.steps.filter import FilterConfig, run_filter
from tests.filter._support import (
    THRESHOLDS,
    ReferenceLangId,
    approve,
    corpus_records,
    expect,
    kept,
    ledger,
    manifest,
    multilingual_records,
    policy_gates,
    profile_candidate,
    rejected,
    run,
    write_shards,
)
from tests.ingest._support import read_jsonl, write_records

#: lines that are not documents: each must be a failed unit, never lost, under the
#: kernel's reason (curator/corpus/records.py), as ingest and profile count it
BROKEN = ['{"id": "cut-off", "text": "half a rec', "[1, 2, 3]",
          '{"id": "no-text", "source": "riverside-gazette.example"}',
          '{"id": "num-text", "text": 42, "source": "riverside-gazette.example"}',
          '{"id": "blank-text", "text": " \\n ", "source": "riverside-gazette.example"}']
FAILED = {"unparsable_line": 1, "not_an_object": 1, "missing_text": 1, "text_not_a_string": 1,
          "empty_text": 1}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("gates")
    records = corpus_records(500, seed=3)
    inp = write_shards(root / "in", records, shards=3)
    with open(inp / "part_1.jsonl", "a", encoding="utf-8") as f:
        f.write("\n".join(BROKEN) + "\n")
    candidate = profile_candidate(inp, root)
    return {"root": root, "records": records, "inp": inp, "candidate": candidate,
            "policy": approve(candidate, root / "approved_policy.yaml")}


def _check(out: Path, exp: Any, n_records: int, failed: dict[str, int]) -> None:
    """Output, rejections and ledger agree with the independent expectation ``exp``."""
    assert [r["id"] for r in kept(out)] == [r["id"] for r in exp.kept]
    rows = rejected(out)
    removed = {r["id"]: (r["removed_by"], r["gates"]) for r in rows if r.get("failed") is None}
    assert removed == exp.removed
    got_failed: dict[str, int] = {}
    for r in rows:
        if r.get("failed") is not None:
            got_failed[r["failed"]] = got_failed.get(r["failed"], 0) + 1
    assert got_failed == failed
    led = ledger(out)
    assert led["filtered_by_reason"] == exp.by_gate  # exact: no "unattributed"
    assert led["n_input"] == n_records + sum(failed.values())
    assert led["n_success"] == len(exp.kept)
    assert {u["reason"]: u["records"] for u in led["failed_units"]} == failed
    assert led["n_input"] == (led["n_success"] + led["n_filtered"] + led["n_failed"]
                              + led["n_quarantined"])
    assert led["balanced"] is True
    assert manifest(out)["declared"]["filtered"] == exp.by_gate


@pytest.mark.parametrize("gate", ["language", "word_count_bounds", *sorted(THRESHOLDS)])
def test_each_gate_alone(world: dict[str, Any], tmp_path: Path, gate: str) -> None:
    keys: dict[str, Any] = {"language_codes": [],
                            "quality_filters": {"min_words": None, "max_words": None}}
    policy = None
    if gate == "language":
        keys["language_codes"] = ["EN"]
    elif gate == "word_count_bounds":
        keys["quality_filters"] = {"min_words": 60, "max_words": 400}
    else:
        policy = approve(world["candidate"], tmp_path / "one.yaml", {gate: THRESHOLDS[gate]})
    out = tmp_path / "out"
    run(world["inp"], out, policy, **keys)
    exp = expect(world["records"], codes=keys["language_codes"],
                 words=(60, 400) if gate == "word_count_bounds" else None,
                 policy=policy_gates(policy) if policy else [])
    assert set(exp.by_gate) == {gate} and 0 < exp.by_gate[gate] < len(world["records"])
    _check(out, exp, len(world["records"]), FAILED)
    assert manifest(out)["gates"] == [gate]


def test_all_gates_together(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"])
    exp = expect(world["records"], policy=policy_gates(world["policy"]))
    # every gate removes something, and some records fail more than one gate
    assert set(exp.by_gate) == {"language", "word_count_bounds", *THRESHOLDS}
    assert any(len(g) > 1 for _, g in exp.removed.values())
    _check(out, exp, len(world["records"]), FAILED)
    assert manifest(out)["gates"] == ["language", "word_count_bounds",
                                      *[n for n, _, _ in policy_gates(world["policy"])]]


def test_one_grep_says_why_a_document_is_missing(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"])
    exp = expect(world["records"], policy=policy_gates(world["policy"]))
    by_id = {r["id"]: i for i, r in enumerate(world["records"])}
    for rec_id, (first, gates) in exp.removed.items():
        hits = subprocess.run(["grep", "-rhF", f'"id":"{rec_id}"', str(out)],
                              capture_output=True, text=True, check=True).stdout.splitlines()
        assert len(hits) == 1, (rec_id, hits)
        row = json.loads(hits[0])
        assert row["removed_by"] == first and row["gates"] == gates
        assert set(row["scores"]) == set(gates)
        for gate in gates:
            if gate in THRESHOLDS:
                want = exp.scores[gate][by_id[rec_id]]
                assert row["scores"][gate] == pytest.approx(want, abs=1e-12)
            elif gate == "word_count_bounds":
                assert row["scores"][gate] == exp.scores["word_count"][by_id[rec_id]]
            else:
                assert 0.0 <= row["scores"][gate] <= 1.0
        # the row points at the input line it came from
        src = Path(row["input"]["path"]).read_bytes()
        line = src[row["input"]["offset"]:].split(b"\n", 1)[0]
        assert json.loads(line)["id"] == rec_id


def test_broken_lines_are_failed_units_that_point_at_their_line(
    world: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"])
    rows = [r for r in rejected(out) if r.get("failed") is not None]
    lines = []
    for r in rows:
        src = Path(r["input"]["path"]).read_bytes()
        lines.append(src[r["input"]["offset"]:].split(b"\n", 1)[0].decode())
    assert sorted(lines) == sorted(BROKEN)
    assert manifest(out)["input"]["unparsable_rows"] == sum(FAILED.values())


def test_language_gate_on_six_languages(tmp_path: Path) -> None:
    records = multilingual_records()
    inp = write_shards(tmp_path / "in", records, shards=2)
    no_words = {"min_words": None, "max_words": None}
    for codes, langs in ((["EN"], {"en"}), (["EN", "RU"], {"en", "ru"}),
                         (["de", "Fr"], {"de", "fr"}), (["ZH", "hi"], {"zh", "hi"})):
        out = tmp_path / "-".join(codes)
        run(inp, out, language_codes=codes, quality_filters=no_words)
        assert [r["id"] for r in kept(out)] == [r["id"] for r in records if r["lang"] in langs]
        rows = rejected(out)
        assert sorted(r["id"] for r in rows) == sorted(
            r["id"] for r in records if r["lang"] not in langs)
        for row in rows:  # the model's label is the hand label, and is recorded
            assert row["removed_by"] == "language" and row["gates"] == ["language"]
            assert row["language"] == row["id"].split("-")[0]
        assert ledger(out)["filtered_by_reason"] == {
            "language": sum(r["lang"] not in langs for r in records)}


def test_language_gate_min_score(tmp_path: Path) -> None:
    """A record labelled English with low confidence passes only a low ``min_langid_score``."""
    records = [*multilingual_records(),
               {"text": "12345 67890", "id": "digits", "source": "x", "lang": "?"}]
    inp = write_shards(tmp_path / "in", records, shards=1)
    label, prob = ReferenceLangId().top("12345 67890")
    assert label == "en" and 0.05 < prob < 0.3
    for min_score, digits_kept in ((0.3, False), (0.05, True)):
        out = tmp_path / f"out-{min_score}"
        run(inp, out, language_codes=["EN"], quality_filters={
            "min_words": None, "max_words": None, "min_langid_score": min_score})
        ids = [r["id"] for r in kept(out)]
        assert ids == ["en-0", "en-1", "en-2"] + (["digits"] if digits_kept else [])
        exp = expect(records, codes=["EN"], min_langid=min_score, words=None)
        assert ids == [r["id"] for r in exp.kept]


_DIGITS = "12345 67890"  # labelled en by lid.176 with a low confidence
_PROSE = ("The city council met on Tuesday evening to discuss the new budget for the public "
          "library, and the mayor promised to review the proposal.")


def _digits_score() -> float:
    model = FastTextLangId.open(None, 500)
    labels, conf = model.predict([_DIGITS])
    assert labels == ["en"] and 0.05 < conf[0] < 0.3
    return float(conf[0])


def test_a_language_score_exactly_at_the_floor_is_kept() -> None:
    """The gate keeps a confidence of *at least* ``min_langid_score`` (docs/filter.md,
    docs/langid.md: ``score >= 0.3``): a score equal to the floor passes, one ulp more
    fails."""
    model = FastTextLangId.open(None, 500)
    score = _digits_score()
    texts = [_DIGITS, _PROSE]
    at = decide(GatePlan(language=LanguageGate(("EN",), score)), texts, model, lambda t, n: {})
    assert at.kept.tolist() == [True, True] and at.first_gate == [None, None]
    assert float(at.scores["language"][0]) == score
    above = float(np.nextafter(score, 1.0))
    over = decide(GatePlan(language=LanguageGate(("EN",), above)), texts, model,
                  lambda t, n: {})
    assert over.kept.tolist() == [False, True] and over.first_gate == ["language", None]


def test_the_filter_step_keeps_a_document_scored_exactly_at_min_langid_score(
    tmp_path: Path,
) -> None:
    """Through ``curate filter``: the configured floor equal to the document's score
    keeps it; one ulp above removes it, attributed to the language gate."""
    score = _digits_score()
    inp = tmp_path / "in" / "part_0.jsonl"
    write_records(inp, [{"id": "digits", "text": _DIGITS}, {"id": "prose", "text": _PROSE}])
    for floor, kept_ids in ((score, ["digits", "prose"]), (float(np.nextafter(score, 1.0)),
                                                       ["prose"])):
        out = tmp_path / f"out-{len(kept_ids)}"
        run_filter(FilterConfig(input_glob=str(inp.parent), output_dir=str(out), id_field="id",
                                language_codes=["EN"],
                                quality_filters={"min_langid_score": floor}))
        assert [r["id"] for r in read_jsonl(out / "part_0.jsonl")] == kept_ids
        written = ledger(out)
        assert written["filtered_by_reason"] == ({} if len(kept_ids) == 2 else {"language": 1})
        assert written["balanced"] is True


class _Stub:
    name = "stub"

    def __init__(self, labels: list[str], scores: list[float]) -> None:
        self.labels, self.scores = labels, np.array(scores)

    def predict(self, texts: list[str]) -> tuple[list[str], np.ndarray]:
        return self.labels, self.scores


def test_language_label_rules() -> None:
    """Case-insensitive, the part before ``_`` matches, a negative score never passes."""
    labels = ["__label__en_Latn", "EN", "eng_Latn", "ru_Cyrl", "en", "__label__en", "en"]
    scores = [0.9, 0.9, 0.9, 0.9, -0.5, 0.5, 0.1]
    for min_score, want in ((0.3, [1, 1, 0, 0, 0, 1, 0]), (-1.0, [1, 1, 0, 0, 0, 1, 1])):
        plan = GatePlan(language=LanguageGate(("En",), min_score))
        got = decide(plan, ["x"] * len(labels), _Stub(labels, scores), lambda t, n: {})
        assert got.kept.astype(int).tolist() == want
        assert got.first_gate == [None if w else "language" for w in want]
    plan = GatePlan(language=LanguageGate(("EN", "ru"), 0.3))
    got = decide(plan, ["x"] * 4, _Stub(labels[:4], scores[:4]), lambda t, n: {})
    assert got.kept.tolist() == [True, True, False, True]


def test_load_ledger_rederives_and_refuses_a_doctored_ledger(
    world: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"])
    path = out / "curation_ledger.json"
    good = load_ledger(path)
    assert good == json.loads(path.read_text())

    def doctored(change: Any) -> str:
        bad = json.loads(json.dumps(good))
        change(bad)
        target = tmp_path / "bad.json"
        target.write_text(json.dumps(bad))
        with pytest.raises(CuratorError) as err:
            load_ledger(target)
        return err.value.error_id

    def hide_removals(d: dict[str, Any]) -> None:  # a gate's count lowered, total kept
        gate = next(iter(d["filtered_by_reason"]))
        d["filtered_by_reason"][gate] -= 1

    def more_success(d: dict[str, Any]) -> None:
        d["n_success"] += 1

    def balanced_lie(d: dict[str, Any]) -> None:
        d["n_input"] += 1

    def drop_failed_unit(d: dict[str, Any]) -> None:
        d["failed_units"].pop()

    def unbalanced(d: dict[str, Any]) -> None:  # every derived field made to agree
        d["n_input"] += 1
        d["balanced"] = False

    for change in (hide_removals, more_success, balanced_lie, drop_failed_unit, unbalanced,
                   lambda d: d.pop("notes")):
        assert doctored(change) == "ledger_invalid"
