"""`curate evaluate` on hand-made labelled sets: known answers, the report's identities."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from curator.artifacts import file_digest
from curator.evaluate import PHENOMENA, evaluate_policy
from curator.evaluate.report import render_text
from curator.langpack.loader import load_langpack
from tests.evaluate._support import (
    LANGPACKS,
    approved_policy,
    known_set,
    write_labelled,
)


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return approved_policy(tmp_path / "policy")


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    return write_labelled(tmp_path / "set.jsonl", known_set())


def _row(report: dict, phenomenon: str) -> dict:
    return next(r for r in report["phenomena"] if r["phenomenon"] == phenomenon)


def test_known_answers_without_a_language_gate(policy: Path, labelled: Path) -> None:
    report = evaluate_policy(policy, [labelled], langpack_dir=LANGPACKS)

    assert report["gates"] == ["stopword_ratio", "word_count"]
    assert report["totals"] == {
        "documents": 10, "keep": 6, "drop": 4, "keep_dropped": 1, "drop_dropped": 3,
        "false_rejection_rate": pytest.approx(1 / 6), "noise_removal_rate": 0.75}
    assert [r["phenomenon"] for r in report["phenomena"]] == list(PHENOMENA)
    clean = _row(report, "clean")
    assert (clean["keep"], clean["keep_dropped"], clean["drop"], clean["drop_dropped"]) == \
        (5, 1, 2, 1)
    assert clean["false_rejection_rate"] == pytest.approx(0.2)
    assert clean["noise_removal_rate"] == 0.5
    nfd = _row(report, "nfd")
    assert (nfd["keep"], nfd["keep_dropped"], nfd["false_rejection_rate"]) == (1, 0, 0.0)
    assert nfd["noise_removal_rate"] is None and nfd["exercised"]
    soup = _row(report, "ocr_noise")
    assert (soup["drop"], soup["drop_dropped"], soup["noise_removal_rate"]) == (1, 1, 1.0)
    for absent in ("local_digits", "code_mixing"):
        row = _row(report, absent)
        assert row["keep"] == row["drop"] == 0 and not row["exercised"]
        assert row["note"] == "absent from the labelled set"
    # no language gate: the Russian page is measured (removed by the stopword gate) but
    # the phenomenon the language gate exists for is marked not exercised
    langid = _row(report, "langid_error")
    assert (langid["drop"], langid["drop_dropped"]) == (1, 1)
    assert langid["exercised"] is False and "no language gate" in langid["note"]

    assert report["attribution"] == [
        {"gate": "stopword_ratio", "removed_keep": 1, "removed_drop": 3,
         "failed_keep": 1, "failed_drop": 3},
        {"gate": "word_count", "removed_keep": 0, "removed_drop": 0,
         "failed_keep": 1, "failed_drop": 1},
    ]
    assert [(f["id"], f["removed_by"], f["gates"]) for f in report["false_rejections"]] == \
        [("k-short", "stopword_ratio", ["stopword_ratio", "word_count"])]
    assert report["false_rejections"][0]["line"] == 6
    assert [m["id"] for m in report["missed_noise"]] == ["d-spam"]
    assert report["warnings"] == [] and report["not_scored"] == []
    assert report["language_gate"] is None and report["word_bounds"] is None

    text = render_text(report)
    assert "false rejection (keep dropped): 1/6 = 16.7%" in text
    assert "noise removal (drop dropped):   3/4 = 75.0%" in text
    assert "langid_error (not exercised)" in text


def test_the_language_gate_exercises_langid_error(policy: Path, labelled: Path) -> None:
    report = evaluate_policy(policy, [labelled], langpack_dir=LANGPACKS,
                             language_codes=["en"])
    assert report["gates"] == ["language", "stopword_ratio", "word_count"]
    langid = _row(report, "langid_error")
    assert langid["exercised"] is True and langid["note"] == ""
    assert langid["drop_dropped"] == 1
    by_gate = {a["gate"]: a for a in report["attribution"]}
    assert by_gate["language"]["removed_drop"] >= 1  # the Russian page, first
    ru = {"d-ru"}
    assert ru.isdisjoint(m["id"] for m in report["missed_noise"])
    assert report["language_gate"]["codes"] == ["en"]
    assert report["language_gate"]["model"]["sha256"].startswith("sha256:")
    # the prose and the NFD text are English; only "Home" (too short to identify) is lost
    # to the language gate, which now comes first
    assert [(f["id"], f["removed_by"]) for f in report["false_rejections"]] == \
        [("k-short", "language")]
    assert by_gate["language"]["removed_keep"] == 1


def test_word_bounds_come_before_the_policy(policy: Path, labelled: Path) -> None:
    report = evaluate_policy(policy, [labelled], langpack_dir=LANGPACKS, words=(5, 100))
    assert report["gates"] == ["word_count_bounds", "stopword_ratio", "word_count"]
    by_gate = {a["gate"]: a for a in report["attribution"]}
    # "Home" and "Loading..." have one word: the word bounds remove them first now
    assert (by_gate["word_count_bounds"]["removed_keep"],
            by_gate["word_count_bounds"]["removed_drop"]) == (1, 1)
    assert by_gate["stopword_ratio"]["removed_drop"] == 2
    assert report["word_bounds"] == {"min_words": 5, "max_words": 100}
    assert report["totals"]["keep_dropped"] == 1 and report["totals"]["drop_dropped"] == 3


def test_the_report_records_the_policy_files_and_pack(policy: Path, labelled: Path,
                                                      tmp_path: Path) -> None:
    docs = known_set()
    first = write_labelled(tmp_path / "a.jsonl", docs[:6])
    second = write_labelled(tmp_path / "b.jsonl", docs[6:])
    report = evaluate_policy(policy, [first, second], langpack_dir=LANGPACKS)
    pack = load_langpack(LANGPACKS, "en")
    assert report["schema_version"] == 1 and report["tool"] == "curate/evaluate"
    assert report["policy"]["policy_digest"] == file_digest(policy)
    assert report["policy"]["status"] == "approved"
    assert report["policy"]["thresholds"] == [
        {"signal": "stopword_ratio", "min": 0.2, "max": None},
        {"signal": "word_count", "min": 3.0, "max": 1000.0}]
    assert report["labelled_files"] == [
        {"path": str(first), "sha256": file_digest(first), "records": 6, "keep": 6, "drop": 0},
        {"path": str(second), "sha256": file_digest(second), "records": 4, "keep": 0,
         "drop": 4}]
    assert report["langpack"] == {
        "pack_id": pack.pack_id, "language_tag": "en", "version": pack.version,
        "content_hash": pack.content_hash, "policy_content_hash": pack.content_hash,
        "matches_policy": True}
    # two files give the same measurement as one
    whole = evaluate_policy(policy, [labelled], langpack_dir=LANGPACKS)
    for key in ("totals", "phenomena", "attribution"):
        assert report[key] == whole[key], key


def test_another_pack_is_measured_and_said(policy: Path, labelled: Path,
                                           tmp_path: Path) -> None:
    root = tmp_path / "packs"
    shutil.copytree(LANGPACKS / "en", root / "en")
    stop = next(p for p in (root / "en").iterdir() if "stop" in p.name)
    stop.write_text(stop.read_text(encoding="utf-8") + "zzzextra\n", encoding="utf-8")
    report = evaluate_policy(policy, [labelled], langpack_dir=root)
    assert report["langpack"]["matches_policy"] is False
    assert report["langpack"]["content_hash"] != report["langpack"]["policy_content_hash"]
    assert any(w.startswith("[policy_langpack_mismatch]") for w in report["warnings"])
    assert "NOT the policy's pack" in render_text(report)


def test_a_signal_the_pack_cannot_score_is_not_scored(tmp_path: Path, labelled: Path) -> None:
    policy = approved_policy(tmp_path / "p", {"stopword_ratio": 0.2,
                                              "token_count": (1, 100000)})
    report = evaluate_policy(policy, [labelled], langpack_dir=LANGPACKS)
    assert report["gates"] == ["stopword_ratio"]
    assert [n["signal"] for n in report["not_scored"]] == ["token_count"]
    assert any(w.startswith("[not_scored] token_count") for w in report["warnings"])
    assert {"signal": "token_count", "min": 1.0, "max": 100000.0} in \
        report["policy"]["thresholds"]


def test_fingerprint_and_signals_version_are_not_checked(policy: Path, labelled: Path,
                                                         tmp_path: Path) -> None:
    """The policy's corpus is not the labelled set (its fingerprint is made up): measuring
    is not applying. Another signals version is measured too, with a warning."""
    doc = yaml.safe_load(policy.read_text())
    doc["signals_impl_version"] = "corpus-curator-signals-0.9"
    other = tmp_path / "older.yaml"
    other.write_text(yaml.safe_dump(doc, sort_keys=False))
    report = evaluate_policy(other, [labelled], langpack_dir=LANGPACKS)
    assert report["signals_impl_version"]["policy"] == "corpus-curator-signals-0.9"
    assert any(w.startswith("[signals_impl_version_differs]") for w in report["warnings"])
    assert report["totals"]["documents"] == 10
