"""Tests for gaps found by mutating the code: each fails under a change that left the rest
of the suite green. Real components throughout: real files, real LMDB files, the bundled
language model; the only stand-in is a second host's name (gap 11), which one machine
cannot have otherwise.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from curator.corpus.langid import FastTextLangId
from curator.errors import CuratorError
from curator.filter.gates import GatePlan, LanguageGate, decide
from curator.io.writers import JsonlWriter, atomic_file, clear_stale_temps
from curator.pipeline import Pipeline
from curator.policy import (
    build_candidate,
    load_policy,
    parse_threshold_assignments,
    promote,
    validate_policy,
    write_approved,
    write_candidate,
)
from curator.profile import stats
from curator.signals.registry import IMPL_VERSION, REGISTRY
from curator.steps.filter import FilterConfig, run_filter
from tests.ingest._support import read_jsonl, write_records
from tests.unit._support import (
    Emit,
)

# -- gaps 6 and 7: policies ----------------------------------------------------------------------

_RATIO = [float(v) for v in REGISTRY["bullet_ratio"].grid.values()]
_MIN_AXIS, _MAX_AXIS = [0, 50, 100], [1000, 5000, 20000]


def _report() -> dict[str, Any]:
    """A small profile report: one max signal with a band, one interval signal."""
    return {
        "corpus": {"glob": "in/*.jsonl", "document_count": 100,
                   "fingerprint": "sha256:" + "a" * 64},
        "langpack": {"pack_id": "en-basic", "language_tag": "en", "version": "1",
                     "content_hash": "sha256:" + "c" * 64},
        "signals_impl_version": IMPL_VERSION,
        "profile_digest": "sha256:" + "e" * 64,
        "signals": [
            {"signal": "bullet_ratio", "direction": "max", "units": "ratio",
             "retention": [{"threshold": t, "retained": 0.9} for t in _RATIO],
             "retention_stable_bands": [
                 {"threshold_low": _RATIO[10], "threshold_high": _RATIO[63],
                  "retained_at_threshold_low": 0.81, "retained_at_threshold_high": 1.0}]},
            {"signal": "word_count", "direction": "interval", "units": "words",
             "retention": {"kind": "surface", "min_axis": _MIN_AXIS, "max_axis": _MAX_AXIS,
                           "retained": [[1.0] * 3] * 3}},
        ],
    }


def _promote(thresholds: dict[str, Any]) -> dict[str, Any]:
    doc, _ = promote(build_candidate(_report()), thresholds, approver="Ada",
                     evidence="read the dropped documents", date="2024-05-01")
    return doc


def _bounds_doc(lo: Any, hi: Any) -> dict[str, Any]:
    """A valid approved policy, then word_count's bounds set by hand."""
    doc = _promote({"bullet_ratio": _RATIO[20], "word_count": (50, 5000)})
    doc["thresholds"] = [t if t["signal"] != "word_count" else
                         {"signal": "word_count", "min": lo, "max": hi}
                         for t in doc["thresholds"]]
    return doc


def test_an_interval_with_min_equal_to_max_is_accepted_by_validation_and_promote(
    tmp_path: Path,
) -> None:
    """Gap 6: ``min == max`` is one admissible value (``lo <= s <= hi``): validation,
    loading, ``promote`` and ``curate approve``'s ``--set LO:HI`` all accept it."""
    doc = _bounds_doc(50, 50)
    assert validate_policy(doc) == []
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    loaded = load_policy(path)
    assert loaded.status == "approved" and loaded.problems == ()
    assert loaded.thresholds["word_count"] == (50.0, 50.0)

    promoted = _promote(parse_threshold_assignments(["word_count=50:50"]))
    assert promoted["thresholds"] == [{"signal": "word_count", "min": 50, "max": 50}]
    assert validate_policy(promoted) == []
    write_approved(promoted, tmp_path / "approved.yaml")
    assert load_policy(tmp_path / "approved.yaml").thresholds == {"word_count": (50.0, 50.0)}
    keep = REGISTRY["word_count"].keep(np.array([49.0, 50.0, 51.0]), 50.0, 50.0)
    assert keep.tolist() == [False, True, False]


def test_an_interval_with_min_above_max_is_refused_by_both(tmp_path: Path) -> None:
    """Gap 6, the other side of the boundary: ``min > max`` is refused by both paths."""
    problems = validate_policy(_bounds_doc(51, 50))
    assert problems == ["thresholds[1] (word_count): min 51 > max 50"]
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(_bounds_doc(51, 50), sort_keys=False))
    with pytest.raises(CuratorError) as loaded:
        load_policy(path)
    assert loaded.value.error_id == "policy_invalid"
    assert loaded.value.details["problems"] == problems
    with pytest.raises(CuratorError) as promoted:
        _promote({"word_count": (51, 50)})
    assert promoted.value.error_id == "invalid_threshold"


def test_override_keeps_the_first_of_duplicate_thresholds(tmp_path: Path) -> None:
    """Gap 7: under allow_unvalidated_policy, the first entry of a repeated signal is the
    one applied (docs/policy.md: "any repeat of a signal [is] skipped"), at its place in
    the policy's order; the repeat is recorded in ``problems``."""
    doc = _promote({"bullet_ratio": _RATIO[20], "word_count": (50, 5000)})
    doc["thresholds"] = [
        {"signal": "bullet_ratio", "max": 0.25},
        {"signal": "word_count", "min": 50, "max": 5000},
        {"signal": "bullet_ratio", "max": 0.75},
    ]
    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(CuratorError) as refused:
        load_policy(path)
    assert "thresholds[2] (bullet_ratio): duplicate signal" in refused.value.details["problems"]
    policy = load_policy(path, allow_unvalidated=True)
    assert policy.status == "override_unvalidated"
    assert list(policy.thresholds.items()) == [("bullet_ratio", (None, 0.25)),
                                               ("word_count", (50.0, 5000.0))]
    assert "thresholds[2]: skipped under the override" in policy.problems
    assert [t for t in policy.resolved()["thresholds"] if t["signal"] == "bullet_ratio"] == [
        {"signal": "bullet_ratio", "min": None, "max": 0.25}]


# -- gap 8: a language score exactly at min_langid_score ---------------------------------------

_DIGITS = "12345 67890"  # labelled en by lid.176 with a low confidence
_PROSE = ("The city council met on Tuesday evening to discuss the new budget for the public "
          "library, and the mayor promised to review the proposal.")


def _digits_score() -> float:
    model = FastTextLangId.open(None, 500)
    labels, conf = model.predict([_DIGITS])
    assert labels == ["en"] and 0.05 < conf[0] < 0.3
    return float(conf[0])


def test_a_language_score_exactly_at_the_floor_is_kept() -> None:
    """Gap 8: the gate keeps a confidence of *at least* ``min_langid_score`` (docs/filter.md,
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
    """Gap 8 through ``curate filter``: the configured floor equal to the document's score
    keeps it; one ulp above removes it, attributed to the language gate."""
    score = _digits_score()
    inp = tmp_path / "in" / "part_0.jsonl"
    write_records(inp, [{"id": "digits", "text": _DIGITS}, {"id": "prose", "text": _PROSE}])
    for floor, kept in ((score, ["digits", "prose"]), (float(np.nextafter(score, 1.0)),
                                                       ["prose"])):
        out = tmp_path / f"out-{len(kept)}"
        run_filter(FilterConfig(input_glob=str(inp.parent), output_dir=str(out), id_field="id",
                                language_codes=["EN"],
                                quality_filters={"min_langid_score": floor}))
        assert [r["id"] for r in read_jsonl(out / "part_0.jsonl")] == kept
        ledger = json.loads((out / "curation_ledger.json").read_text())
        assert ledger["filtered_by_reason"] == ({} if len(kept) == 2 else {"language": 1})
        assert ledger["balanced"] is True


# -- gap 9: the upper end of a band --------------------------------------------------------------


def test_a_band_ends_at_its_last_grid_point_inclusive() -> None:
    """Gap 9: a band's ``threshold_high`` is its last in-range grid point: one that sits
    exactly on ``max_keep_rate`` (as float arithmetic gives it) is in; the first point
    beyond is out; a band running to the curve's end ends at the last grid point."""
    hi = 0.3 * 3  # 0.8999999999999999: the rounded share 0.9 is on it, within the slack
    curve = [{"threshold": t, "retained": r} for t, r in zip(
        [0, 2, 4, 6, 8, 10, 12, 14, 16],
        [0.4, 0.5, 0.7, 0.9, 0.900001, 0.6, 0.8, 0.85, 0.9], strict=True)]
    assert stats._bands(curve, 0.5, hi) == [
        {"threshold_low": 2, "threshold_high": 6,
         "retained_at_threshold_low": 0.5, "retained_at_threshold_high": 0.9},
        {"threshold_low": 10, "threshold_high": 16,
         "retained_at_threshold_low": 0.6, "retained_at_threshold_high": 0.9},
    ]
    # a band of the whole curve
    assert stats._bands(curve[:4], 0.3, 0.9) == [
        {"threshold_low": 0, "threshold_high": 6,
         "retained_at_threshold_low": 0.4, "retained_at_threshold_high": 0.9}]


def test_a_profiled_band_reaching_the_top_of_the_grid_includes_it() -> None:
    """Gap 9 through ``signal_block``: every score is at most 0.5, so a max signal keeps
    everything from 0.5 up; with max_keep_rate 1.0 the band ends at the grid's last point
    (1.0) with retained 1.0."""
    spec = REGISTRY["bullet_ratio"]
    rng = np.random.default_rng(9)
    s = rng.uniform(0.0, 0.5, 400)
    block = stats.signal_block(spec, s, np.ones(400), np.zeros(400, dtype=np.int64), ["a"],
                               scoring_failures=0,
                               band_search={"min_keep_rate": 0.5, "max_keep_rate": 1.0})
    grid = [float(t) for t in spec.grid.values()]
    bands = block["retention_stable_bands"]
    assert len(bands) == 1
    inside = [p["threshold"] for p in block["retention"] if 0.5 <= p["retained"] <= 1.0]
    assert bands[0]["threshold_low"] == inside[0]
    assert bands[0]["threshold_high"] == grid[-1] == 1.0
    assert bands[0]["retained_at_threshold_high"] == 1.0


# -- gap 10: integral thresholds are written as integers ----------------------------------------


def test_integral_signals_have_int_thresholds_in_report_candidate_and_policy(
    tmp_path: Path,
) -> None:
    """Gap 10: an integral signal's thresholds are ``int`` (``3``, never ``3.0``): in the
    report's curve and bands, the interval surface's axes, the candidate YAML and the
    approved YAML (``--set`` parses ``3`` as a float)."""
    rng = np.random.default_rng(10)
    n = 500
    ones, src = np.ones(n), np.zeros(n, dtype=np.int64)
    hits = REGISTRY["boilerplate_hits"]
    block = stats.signal_block(hits, rng.integers(0, 8, n).astype(float), ones, src, ["a"],
                               scoring_failures=0,
                               band_search={"min_keep_rate": 0.5, "max_keep_rate": 1.0})
    assert all(type(p["threshold"]) is int for p in block["retention"])
    bands = block["retention_stable_bands"]
    assert [(b["threshold_low"], b["threshold_high"]) for b in bands] == [(3, 20)]
    assert all(type(b[k]) is int for b in bands for k in ("threshold_low", "threshold_high"))
    words = REGISTRY["word_count"]
    surface = stats.signal_block(words, rng.integers(0, 400, n).astype(float), ones, src,
                                 ["a"], scoring_failures=0)["retention"]
    for axis in ("min_axis", "max_axis"):
        assert all(type(t) is int for t in surface[axis])
    for marginal in ("marginal_min", "marginal_max"):
        assert all(type(p["threshold"]) is int for p in surface[marginal])

    report = _report()
    report["signals"] = [block, {"signal": "word_count", "direction": "interval",
                                 "units": "words", "retention": surface}]
    cand_path = write_candidate(build_candidate(report), tmp_path / "candidate.yaml")
    text = cand_path.read_text()
    assert "threshold_low: 3\n" in text and "threshold_high: 20\n" in text
    assert "    - 13\n" in text and "    - 20000\n" in text  # the word_count axes
    assert not re.search(r"^ *-? *(threshold_(low|high): )?-?\d+\.0$", text, re.M), text
    cand = yaml.safe_load(text)
    assert all(type(t) is int for c in cand["candidates"] for b in c.get("bands", [])
               for t in (b["threshold_low"], b["threshold_high"]))
    assert all(type(t) is int for t in cand["candidates"][1]["surface_axes"]["min"])

    chosen = parse_threshold_assignments(["boilerplate_hits=3", "word_count=13:5290"])
    assert chosen == {"boilerplate_hits": 3.0, "word_count": (13.0, 5290.0)}
    doc, warnings = promote(cand, chosen, approver="Ada", evidence="read them",
                            date="2024-05-01")
    assert not [w for w in warnings if "not_on_grid" in w], warnings
    write_approved(doc, tmp_path / "approved.yaml")
    approved = (tmp_path / "approved.yaml").read_text()
    assert "max: 3\n" in approved
    assert "min: 13\n" in approved and "max: 5290\n" in approved
    assert not re.search(r"(min|max): -?\d+\.0$", approved, re.M), approved
    entries = yaml.safe_load(approved)["thresholds"]
    assert all(type(e[k]) is int for e in entries for k in ("min", "max") if k in e)
    # a ratio signal's integral value stays a float
    assert type(_promote({"bullet_ratio": 1.0})["thresholds"][0]["max"]) is float


# -- gap 11: another host's files on a shared filesystem ----------------------------------------


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(proc.stdout)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    return pid


def _this_host() -> str:
    host = socket.gethostname()
    assert host and all(c.isalnum() or c in ".-" for c in host), host
    return host


def test_a_temp_file_names_its_host_and_pid(tmp_path: Path) -> None:
    """Gap 11: the temp name carries the host, so a pid is never read on the wrong host."""
    target = tmp_path / "out" / "part_0.jsonl"
    with atomic_file(target) as f:
        f.write(b"x\n")
        assert [p.name for p in target.parent.iterdir()] == [
            f".part_0.jsonl.tmp-{_this_host()}-{os.getpid()}"]
    assert [p.name for p in target.parent.iterdir()] == ["part_0.jsonl"]


def test_stale_temp_cleanup_judges_only_this_hosts_pids(tmp_path: Path) -> None:
    """Gap 11: an output directory several hosts share (a network filesystem). A temp file
    of pid N on another host must not be judged by this host's pid N: it may be a live
    writer there. Only this host's temps of dead writers are removed."""
    dead, me, host = _dead_pid(), os.getpid(), _this_host()
    out = tmp_path / "out"
    (out / "rejected").mkdir(parents=True)
    names = {
        f".a.jsonl.tmp-{host}-{dead}": False,  # this host, writer dead: removed
        f".b.jsonl.tmp-{dead}": False,  # an older run's name (no host), writer dead: removed
        f".c.jsonl.tmp-{host}-{me}": True,  # this host, writer alive: kept
        f".d.jsonl.tmp-node-7.cluster-{dead}": True,  # another host: kept
        f".e.jsonl.tmp-node-7.cluster-{me}": True,  # another host, pid alive here by chance
        f"rejected/.f.jsonl.tmp-node-7-{dead}": True,  # a host named with a dash and digit
    }
    for name in names:
        (out / name).write_text("half a record")
    clear_stale_temps(out)
    assert {name: (out / name).exists() for name in names} == names

    # the writer sink clears its output directory with the same rule
    (out / f".a.jsonl.tmp-{host}-{dead}").write_text("half a record")
    Pipeline("w", [Emit(n=1), JsonlWriter(path=str(out))]).run()
    assert not (out / f".a.jsonl.tmp-{host}-{dead}").exists()
    assert (out / f".d.jsonl.tmp-node-7.cluster-{dead}").exists()
    assert (out / "0.jsonl").exists()


