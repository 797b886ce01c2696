"""The policy files: candidate → promote → approved, validation, loading, provenance."""

from __future__ import annotations

import copy
import datetime as dt
import logging
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from curator.artifacts import file_digest
from curator.errors import CuratorError
from curator.policy import (
    build_candidate,
    check_provenance,
    load_candidate,
    load_policy,
    parse_threshold_assignments,
    promote,
    validate_policy,
    write_approved,
    write_candidate,
)
from curator.profile import stats
from curator.signals.registry import IMPL_VERSION, REGISTRY

FINGERPRINT = "sha256:" + "a" * 64
PACK_HASH = "sha256:" + "c" * 64
PROFILE_DIGEST = "sha256:" + "e" * 64
RATIO = [float(v) for v in REGISTRY["bullet_ratio"].grid.values()]  # 64 points on [0, 1]
IN_BAND = RATIO[20]  # a grid point inside bullet_ratio's band [RATIO[10], RATIO[63]]
MIN_AXIS, MAX_AXIS = [0, 50, 100], [1000, 5000, 20000]


def make_report() -> dict[str, Any]:
    """A small profile report with the keys the candidate is built from."""
    return {
        "corpus": {"glob": "prepared/*.jsonl", "document_count": 1200,
                   "fingerprint": FINGERPRINT, "file_count": 3},
        "langpack": {"pack_id": "en-basic", "language_tag": "en", "version": "1.2",
                     "content_hash": PACK_HASH, "capabilities": ["word_segmentation"]},
        "signals_impl_version": IMPL_VERSION,
        "profile_digest": PROFILE_DIGEST,
        "signals": [
            {"signal": "bullet_ratio", "direction": "max", "units": "ratio",
             "retention": [{"threshold": t, "retained": 0.9} for t in RATIO],
             "retention_stable_bands": [
                 {"threshold_low": RATIO[10], "threshold_high": RATIO[63],
                  "retained_at_threshold_low": 0.81, "retained_at_threshold_high": 1.0}]},
            {"signal": "words_with_alphabets", "direction": "min", "units": "ratio",
             "retention": [{"threshold": t, "retained": 0.9} for t in RATIO],
             "retention_stable_bands": [
                 {"threshold_low": RATIO[0], "threshold_high": RATIO[40],
                  "retained_at_threshold_low": 1.0, "retained_at_threshold_high": 0.82}]},
            {"signal": "boilerplate_hits", "direction": "max", "units": "patterns",
             "retention": None},
            {"signal": "word_count", "direction": "interval", "units": "words",
             "retention": {"kind": "surface", "min_axis": MIN_AXIS, "max_axis": MAX_AXIS,
                           "retained": [[1.0] * 3] * 3}},
        ],
    }


def make_candidate() -> dict[str, Any]:
    return build_candidate(make_report())


def approve(thresholds: dict[str, Any] | None = None, **kw: Any) -> tuple[dict, list[str]]:
    args: dict[str, Any] = {"approver": "Ada", "evidence": "read 200 dropped docs",
                            "date": "2024-05-01", **kw}
    return promote(make_candidate(), thresholds or {"bullet_ratio": IN_BAND}, **args)


def valid_policy() -> dict[str, Any]:
    doc, _ = approve({"bullet_ratio": IN_BAND, "words_with_alphabets": RATIO[5],
                      "word_count": (50, 5000)})
    return doc


# -- the candidate ---------------------------------------------------------------------------


def test_candidate_has_exactly_the_spec_keys() -> None:
    cand = make_candidate()
    assert list(cand) == ["schema_version", "approved", "note", "corpus", "langpack",
                          "signals_impl_version", "profile_digest", "candidates"]
    assert cand["schema_version"] == 1 and cand["approved"] is False
    assert cand["corpus"] == {"glob": "prepared/*.jsonl", "document_count": 1200,
                              "fingerprint": FINGERPRINT}
    assert cand["langpack"] == {"id": "en-basic", "language_tag": "en", "version": "1.2",
                                "content_hash": PACK_HASH}
    assert cand["signals_impl_version"] == IMPL_VERSION
    assert cand["profile_digest"] == PROFILE_DIGEST
    by_name = {c["signal"]: c for c in cand["candidates"]}
    assert [c["signal"] for c in cand["candidates"]] == [
        "bullet_ratio", "words_with_alphabets", "boilerplate_hits", "word_count"]
    bullet = by_name["bullet_ratio"]
    assert list(bullet) == ["signal", "kind", "direction", "units", "bands", "note"]
    assert bullet["kind"] == "threshold" and bullet["direction"] == "max"
    assert bullet["bands"] == make_report()["signals"][0]["retention_stable_bands"]
    assert by_name["boilerplate_hits"]["bands"] == []
    assert "not computed" in by_name["boilerplate_hits"]["note"]
    wc = by_name["word_count"]
    assert list(wc) == ["signal", "kind", "surface_axes", "note"]
    assert wc["kind"] == "interval"
    assert wc["surface_axes"] == {"min": MIN_AXIS, "max": MAX_AXIS}


def test_write_candidate_round_trips_atomically(tmp_path: Path) -> None:
    path = tmp_path / "candidate_policies.yaml"
    write_candidate(make_candidate(), path)
    assert yaml.safe_load(path.read_text()) == make_candidate()
    assert load_candidate(path) == make_candidate()
    assert [p.name for p in tmp_path.iterdir()] == ["candidate_policies.yaml"]  # no temp left


@pytest.mark.parametrize("flag", [True, "yes", 1, "false", ["x"]])
def test_a_candidate_is_never_written_approved(tmp_path: Path, flag: object) -> None:
    doc = {**make_candidate(), "approved": flag}
    path = tmp_path / "c.yaml"
    with pytest.raises(CuratorError) as exc:
        write_candidate(doc, path)
    assert exc.value.error_id == "candidate_marked_approved"
    assert list(tmp_path.iterdir()) == []


def test_load_candidate_refuses_unreadable(tmp_path: Path) -> None:
    for name, text in [("missing.yaml", None), ("bad.yaml", "a: [1"), ("list.yaml", "- 1\n")]:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        with pytest.raises(CuratorError) as exc:
            load_candidate(path)
        assert exc.value.error_id == "candidate_unreadable", name


# -- validation ------------------------------------------------------------------------------


def test_the_valid_policy_has_no_problems() -> None:
    assert validate_policy(valid_policy()) == []


def _drop(key: str):
    return lambda d: d.pop(key)


def _set(value: Any, *path: Any):
    def apply(d: dict) -> None:
        target = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return apply


def _drop_in(*path: Any):
    def apply(d: dict) -> None:
        target = d
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return apply


def _append_threshold(entry: Any):
    return lambda d: d["thresholds"].append(entry)


# bullet_ratio is thresholds[0] (max), word_count [1] (interval), words_with_alphabets [2] (min)
BROKEN = [
    *[(f"missing-{k}", _drop(k), f"{k}: required key missing")
      for k in ("schema_version", "approved", "corpus", "signals_impl_version",
                "profile_digest", "thresholds")],
    ("schema-2", _set(2, "schema_version"), "schema_version: must be 1"),
    ("schema-bool", _set(True, "schema_version"), "schema_version: must be 1"),
    ("approved-false", _set(False, "approved"), "approved: must be the boolean true"),
    ("approved-yes-string", _set("yes", "approved"), "approved: must be the boolean true"),
    ("approved-one", _set(1, "approved"), "approved: must be the boolean true"),
    ("impl-empty", _set("", "signals_impl_version"), "signals_impl_version: must be a non-empty"),
    ("impl-number", _set(1.0, "signals_impl_version"), "signals_impl_version: must be a non-empty"),
    ("profile-short", _set("sha256:abc", "profile_digest"), "profile_digest: must be sha256:"),
    ("profile-upper", _set("sha256:" + "A" * 64, "profile_digest"), "profile_digest: must be"),
    ("profile-noprefix", _set("e" * 64, "profile_digest"), "profile_digest: must be"),
    ("corpus-not-mapping", _set("x", "corpus"), "corpus: must be a mapping"),
    ("fingerprint-missing", _drop_in("corpus", "fingerprint"), "corpus.fingerprint: must be"),
    ("fingerprint-bad", _set("md5:00", "corpus", "fingerprint"), "corpus.fingerprint: must be"),
    ("langpack-not-mapping", _set([], "langpack"), "langpack: must be a mapping"),
    ("approval-missing", _drop("approval"), "approval.approver: must be a non-empty"),
    ("approval-not-mapping", _set("Ada", "approval"), "approval: must be a mapping"),
    ("approver-empty", _set("  ", "approval", "approver"), "approval.approver: must be"),
    ("approver-missing", _drop_in("approval", "approver"), "approval.approver: must be"),
    ("evidence-empty", _set("", "approval", "evidence"), "approval.evidence: must be"),
    ("evidence-none", _set(None, "approval", "evidence"), "approval.evidence: must be"),
    ("method-unknown", _set("vibes", "approval", "method"), "approval.method: must be one of"),
    ("method-missing", _drop_in("approval", "method"), "approval.method: must be one of"),
    ("date-bad", _set("yesterday", "approval", "date"), "approval.date: must be YYYY-MM-DD"),
    ("date-impossible", _set("2024-02-30", "approval", "date"), "approval.date: must be"),
    ("thresholds-empty", _set([], "thresholds"), "thresholds: must be a non-empty list"),
    ("thresholds-null", _set(None, "thresholds"), "thresholds: must be a non-empty list"),
    ("thresholds-mapping", _set({"bullet_ratio": 0.1}, "thresholds"), "must be a non-empty list"),
    ("entry-not-mapping", _append_threshold("bullet_ratio"), "thresholds[3]: must be a mapping"),
    ("unknown-signal", _append_threshold({"signal": "nope", "max": 0.1}),
     "thresholds[3].signal: 'nope' is not a registered signal"),
    ("signal-missing", _append_threshold({"max": 0.1}), "thresholds[3].signal: None is not"),
    ("bound-nan", _set(math.nan, "thresholds", 0, "max"), "(bullet_ratio).max: must be a finite"),
    ("bound-inf", _set(math.inf, "thresholds", 0, "max"), "(bullet_ratio).max: must be a finite"),
    ("bound-string", _set("0.2", "thresholds", 0, "max"), "(bullet_ratio).max: must be a finite"),
    ("bound-bool", _set(True, "thresholds", 0, "max"), "(bullet_ratio).max: must be a finite"),
    ("bound-null", _set(None, "thresholds", 0, "max"), "(bullet_ratio).max: must be a finite"),
    ("min-above-max", _set(9000, "thresholds", 1, "min"), "(word_count): min 9000 > max 5000"),
    ("max-signal-given-min", lambda d: d["thresholds"].__setitem__(
        0, {"signal": "bullet_ratio", "min": 0.1}), "a max signal takes max, got min"),
    ("max-signal-given-both", _set(0.0, "thresholds", 0, "min"),
     "a max signal takes max, got min and max"),
    ("min-signal-given-max", lambda d: d["thresholds"].__setitem__(
        2, {"signal": "words_with_alphabets", "max": 0.5}), "a min signal takes min, got max"),
    ("interval-only-min", _drop_in("thresholds", 1, "max"),
     "an interval signal takes min and max, got min"),
    ("duplicate-signal", _append_threshold({"signal": "bullet_ratio", "max": 0.3}),
     "thresholds[3] (bullet_ratio): duplicate signal"),
    ("no-bound-no-default", _append_threshold({"signal": "ellipsis"}),
     "thresholds[3] (ellipsis): no bound (there is no fallback to Curator defaults)"),
    ("unknown-bound-key", _set(0.5, "thresholds", 0, "maximum"), "unknown keys ['maximum']"),
]


@pytest.mark.parametrize(("mutate", "problem"), [b[1:] for b in BROKEN],
                         ids=[b[0] for b in BROKEN])
def test_each_broken_rule_yields_its_problem(mutate, problem: str) -> None:
    doc = valid_policy()
    assert [t["signal"] for t in doc["thresholds"]] == [
        "bullet_ratio", "word_count", "words_with_alphabets"]
    mutate(doc)
    problems = validate_policy(doc)
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("doc", [None, [], "approved: true", 3])
def test_a_non_mapping_is_invalid(doc: object) -> None:
    assert validate_policy(doc) == [f"policy: must be a mapping, got {type(doc).__name__}"]


def test_every_unmet_rule_is_listed() -> None:
    doc = valid_policy()
    doc["approved"] = "yes"
    doc["profile_digest"] = "nope"
    doc["thresholds"][0]["max"] = math.nan
    problems = validate_policy(doc)
    assert len(problems) == 3, problems


# -- promote ---------------------------------------------------------------------------------


def test_promote_builds_the_approved_document() -> None:
    doc, warnings = approve({"words_with_alphabets": RATIO[5], "word_count": (50, 5000),
                             "bullet_ratio": IN_BAND}, method="ablation")
    assert warnings == []
    assert list(doc) == ["schema_version", "approved", "corpus", "langpack",
                         "signals_impl_version", "profile_digest", "approval", "thresholds"]
    cand = make_candidate()
    for key in ("schema_version", "corpus", "langpack", "signals_impl_version",
                "profile_digest"):
        assert doc[key] == cand[key]
    assert doc["approved"] is True
    assert doc["approval"] == {"approver": "Ada", "date": "2024-05-01", "method": "ablation",
                               "evidence": "read 200 dropped docs"}
    assert doc["thresholds"] == [  # sorted by signal; the bound named by the direction
        {"signal": "bullet_ratio", "max": IN_BAND},
        {"signal": "word_count", "min": 50, "max": 5000},
        {"signal": "words_with_alphabets", "min": RATIO[5]},
    ]
    assert validate_policy(doc) == []


def test_promote_defaults_date_to_today_utc() -> None:
    doc, _ = promote(make_candidate(), {"bullet_ratio": IN_BAND}, approver="A", evidence="E")
    assert doc["approval"]["date"] == dt.datetime.now(dt.UTC).date().isoformat()
    assert doc["approval"]["method"] == "manual"


def test_promote_does_not_mutate_the_candidate() -> None:
    cand = make_candidate()
    before = copy.deepcopy(cand)
    doc, _ = promote(cand, {"bullet_ratio": IN_BAND}, approver="A", evidence="E")
    doc["corpus"]["glob"] = "changed"
    assert cand == before


def _candidate_with(**changes: Any) -> dict[str, Any]:
    return {**make_candidate(), **changes}


REFUSALS = [
    ("approved-true", _candidate_with(approved=True), {}, "policy_already_approved"),
    ("approved-yes", _candidate_with(approved="yes"), {}, "policy_already_approved"),
    ("has-approval", _candidate_with(approval={"approver": "x"}), {}, "policy_already_approved"),
    ("has-thresholds", _candidate_with(thresholds=[]), {}, "policy_already_approved"),
    ("empty-thresholds", None, {"thresholds": {}}, "policy_thresholds_empty"),
    ("no-approver", None, {"approver": ""}, "approval_missing_approver"),
    ("blank-approver", None, {"approver": "  "}, "approval_missing_approver"),
    ("no-evidence", None, {"evidence": ""}, "approval_missing_evidence"),
    ("bad-method", None, {"method": "vibes"}, "invalid_approval_method"),
    ("bad-date", None, {"date": "01/05/2024"}, "invalid_approval_date"),
    ("impossible-date", None, {"date": "2024-13-01"}, "invalid_approval_date"),
    ("registered-not-profiled", None, {"thresholds": {"numbers_ratio": 0.1}},
     "signal_not_profiled"),
    ("unknown-not-profiled", None, {"thresholds": {"nope": 0.1}}, "signal_not_profiled"),
    ("nan", None, {"thresholds": {"bullet_ratio": math.nan}}, "invalid_threshold"),
    ("inf", None, {"thresholds": {"bullet_ratio": math.inf}}, "invalid_threshold"),
    ("-inf", None, {"thresholds": {"words_with_alphabets": -math.inf}}, "invalid_threshold"),
    ("string", None, {"thresholds": {"bullet_ratio": "0.2"}}, "invalid_threshold"),
    ("bool", None, {"thresholds": {"bullet_ratio": True}}, "invalid_threshold"),
    ("pair-for-one-sided", None, {"thresholds": {"bullet_ratio": (0.1, 0.2)}},
     "invalid_threshold"),
    ("one-for-interval", None, {"thresholds": {"word_count": 50}}, "invalid_threshold"),
    ("triple-for-interval", None, {"thresholds": {"word_count": (1, 2, 3)}},
     "invalid_threshold"),
    ("lo-above-hi", None, {"thresholds": {"word_count": (5000, 50)}}, "invalid_threshold"),
    ("nan-in-interval", None, {"thresholds": {"word_count": (50, math.nan)}},
     "invalid_threshold"),
    ("unregistered-but-profiled",
     _candidate_with(candidates=[{"signal": "nope", "kind": "threshold", "direction": "max"}]),
     {"thresholds": {"nope": 0.1}}, "unknown_signal"),
    ("candidate-bad-provenance", _candidate_with(profile_digest="sha256:short"), {},
     "policy_invalid"),
]


@pytest.mark.parametrize(("candidate", "kwargs", "error_id"), [r[1:] for r in REFUSALS],
                         ids=[r[0] for r in REFUSALS])
def test_promote_refusals(candidate: dict | None, kwargs: dict, error_id: str) -> None:
    args: dict[str, Any] = {"approver": "Ada", "evidence": "E", "date": "2024-05-01",
                            "thresholds": {"bullet_ratio": IN_BAND}, **kwargs}
    thresholds = args.pop("thresholds")
    with pytest.raises(CuratorError) as exc:
        promote(candidate or make_candidate(), thresholds, **args)
    assert exc.value.error_id == error_id


def _ids(warnings: list[str]) -> list[str]:
    return [w.split("]")[0].lstrip("[") for w in warnings]


@pytest.mark.parametrize(("thresholds", "expected"), [
    ({"bullet_ratio": IN_BAND}, []),
    ({"bullet_ratio": RATIO[10]}, []),  # a band end is inside its band
    ({"bullet_ratio": RATIO[3]}, ["threshold_outside_bands"]),
    ({"bullet_ratio": 0.5}, ["threshold_not_on_grid"]),  # inside the band, between points
    ({"bullet_ratio": 0.1}, ["threshold_outside_bands", "threshold_not_on_grid"]),
    ({"words_with_alphabets": RATIO[50]}, ["threshold_outside_bands"]),
    ({"boilerplate_hits": 3}, ["threshold_outside_bands"]),  # no band; 3 is an integral point
    ({"boilerplate_hits": 2.5}, ["threshold_outside_bands", "threshold_not_on_grid"]),
    ({"word_count": (50, 5000)}, []),
    ({"word_count": (60, 5000)}, ["threshold_not_on_grid"]),
    ({"word_count": (60, 6000)}, ["threshold_not_on_grid", "threshold_not_on_grid"]),
])
def test_promote_warnings(thresholds: dict, expected: list[str]) -> None:
    doc, warnings = approve(thresholds)
    assert _ids(warnings) == expected
    assert validate_policy(doc) == []  # a warning never stops the approval


def test_interval_grid_falls_back_to_the_registry_without_a_surface() -> None:
    cand = make_candidate()
    cand["candidates"][3]["surface_axes"] = {"min": [], "max": []}
    _, on_grid = promote(cand, {"word_count": (0, 1000)}, approver="A", evidence="E")
    _, off_grid = promote(cand, {"word_count": (1, 1000)}, approver="A", evidence="E")
    assert on_grid == [] and _ids(off_grid) == ["threshold_not_on_grid"]


def test_an_old_signals_impl_version_is_warned_about() -> None:
    cand = _candidate_with(signals_impl_version="old-signals-0.1")
    doc, warnings = promote(cand, {"bullet_ratio": IN_BAND}, approver="A", evidence="E")
    assert _ids(warnings) == ["signals_impl_version_differs"]
    assert doc["signals_impl_version"] == "old-signals-0.1"  # the measurement, not the install


def test_warnings_are_logged_unless_asked_not_to(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="curator.policy"):
        approve({"bullet_ratio": 0.1})
    assert sum("threshold_outside_bands" in r.getMessage() for r in caplog.records) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="curator.policy"):
        _, warnings = approve({"bullet_ratio": 0.1}, log_warnings=False)
    assert warnings and not caplog.records


def test_parse_threshold_assignments() -> None:
    assert parse_threshold_assignments(["bullet_ratio=0.25", "word_count=50:5000",
                                        " mean_word_length = 3 : 10"]) == {
        "bullet_ratio": 0.25, "word_count": (50.0, 5000.0), "mean_word_length": (3.0, 10.0)}
    for bad, error_id in [("bullet_ratio", "invalid_threshold"), ("=0.1", "invalid_threshold"),
                          ("bullet_ratio=abc", "invalid_threshold"),
                          ("word_count=:5000", "invalid_threshold"),
                          ("word_count=1:2:3", "invalid_threshold")]:
        with pytest.raises(CuratorError) as exc:
            parse_threshold_assignments([bad])
        assert exc.value.error_id == error_id, bad
    with pytest.raises(CuratorError) as exc:
        parse_threshold_assignments(["bullet_ratio=0.1", "bullet_ratio=0.2"])
    assert exc.value.error_id == "duplicate_threshold"


# -- write, load, override -------------------------------------------------------------------


def _round_trip(tmp_path: Path) -> tuple[Path, str]:
    cand_path = tmp_path / "candidate_policies.yaml"
    write_candidate(make_candidate(), cand_path)
    doc, _ = promote(load_candidate(cand_path),
                     {"bullet_ratio": IN_BAND, "word_count": (50, 5000),
                      "words_with_alphabets": RATIO[5]},
                     approver="Ada", evidence="read 200 dropped docs", date="2024-05-01")
    path = tmp_path / "approved_policy.yaml"
    return path, write_approved(doc, path)


def test_round_trip_candidate_promote_write_load(tmp_path: Path) -> None:
    path, digest = _round_trip(tmp_path)
    policy = load_policy(path)
    assert policy.status == "approved" and policy.problems == ()
    assert policy.thresholds == {"bullet_ratio": (None, IN_BAND), "word_count": (50, 5000),
                                 "words_with_alphabets": (RATIO[5], None)}
    assert policy.policy_digest == digest == file_digest(path)
    assert policy.profile_digest == PROFILE_DIGEST
    assert policy.signals_impl_version == IMPL_VERSION
    assert policy.corpus_fingerprint == FINGERPRINT
    assert policy.langpack_content_hash == PACK_HASH
    assert policy.approval_method == "manual"
    assert policy.doc["approved"] is True and validate_policy(policy.doc) == []
    assert policy.resolved() == {
        "policy_digest": digest, "profile_digest": PROFILE_DIGEST,
        "signals_impl_version": IMPL_VERSION, "corpus_fingerprint": FINGERPRINT,
        "approval_method": "manual", "langpack_content_hash": PACK_HASH,
        "thresholds": [{"signal": "bullet_ratio", "min": None, "max": IN_BAND},
                       {"signal": "word_count", "min": 50, "max": 5000},
                       {"signal": "words_with_alphabets", "min": RATIO[5], "max": None}]}


def test_no_fallback_to_curator_defaults(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    doc, _ = approve({"bullet_ratio": IN_BAND})
    write_approved(doc, path)
    # ellipsis, numbers_ratio, ... have Curator defaults; none is filled in
    assert load_policy(path).thresholds == {"bullet_ratio": (None, IN_BAND)}


def test_write_approved_refuses_an_invalid_policy(tmp_path: Path) -> None:
    doc = valid_policy()
    doc["approval"]["evidence"] = ""
    with pytest.raises(CuratorError) as exc:
        write_approved(doc, tmp_path / "p.yaml")
    assert exc.value.error_id == "policy_invalid"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("allow", [False, True])
@pytest.mark.parametrize(("name", "text"), [
    ("missing.yaml", None), ("bad.yaml", "approved: [true\n"), ("list.yaml", "- 1\n"),
    ("empty.yaml", ""),
])
def test_an_unloadable_policy_is_unresolved(tmp_path: Path, name: str, text: str | None,
                                            allow: bool) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(CuratorError) as exc:
        load_policy(path, allow_unvalidated=allow)  # the override cannot apply what it can't read
    assert exc.value.error_id == "policy_unresolved"
    assert exc.value.details["status"] == "unresolved"


def test_a_candidate_is_not_approved(tmp_path: Path) -> None:
    path = tmp_path / "candidate_policies.yaml"
    write_candidate(make_candidate(), path)
    with pytest.raises(CuratorError) as exc:
        load_policy(path)
    assert exc.value.error_id == "policy_not_approved"
    assert exc.value.details["status"] == "unapproved"
    assert "thresholds: required key missing" in exc.value.details["problems"]


def _write_raw(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_approved_yes_string_is_not_approved(tmp_path: Path) -> None:
    doc = valid_policy()
    doc["approved"] = "yes"
    with pytest.raises(CuratorError) as exc:
        load_policy(_write_raw(tmp_path / "p.yaml", doc))
    assert exc.value.error_id == "policy_not_approved"


def test_an_approved_but_invalid_policy_lists_every_problem(tmp_path: Path) -> None:
    doc = valid_policy()
    doc["thresholds"][0] = {"signal": "bullet_ratio", "min": 0.1}  # would invert the gate
    doc["approval"]["evidence"] = ""
    with pytest.raises(CuratorError) as exc:
        load_policy(_write_raw(tmp_path / "p.yaml", doc))
    assert exc.value.error_id == "policy_invalid"
    assert exc.value.details["status"] == "unapproved"
    problems = exc.value.details["problems"]
    assert len(problems) == 2 and "approval.evidence" in str(exc.value)
    assert "invert the gate" in str(exc.value)


def test_override_applies_an_invalid_policy_and_records_why(tmp_path: Path) -> None:
    doc = valid_policy()
    doc["approved"] = False
    doc["thresholds"].append({"signal": "ellipsis"})  # unusable: skipped, said so
    path = _write_raw(tmp_path / "p.yaml", doc)
    policy = load_policy(path, allow_unvalidated=True)
    assert policy.status == "override_unvalidated"
    assert any(p.startswith("approved:") for p in policy.problems)
    assert any("skipped under the override" in p for p in policy.problems)
    assert policy.thresholds == {"bullet_ratio": (None, IN_BAND), "word_count": (50, 5000),
                                 "words_with_alphabets": (RATIO[5], None)}


def test_override_status_only_when_validation_failed(tmp_path: Path) -> None:
    path, _ = _round_trip(tmp_path)
    policy = load_policy(path, allow_unvalidated=True)
    assert policy.status == "approved" and policy.problems == ()


# -- a two-signal policy: interval bounds, repeated signals, integral thresholds -------------

def _two_signal_report() -> dict[str, Any]:
    """A smaller profile report than ``make_report``'s: one max signal with a band, one
    interval signal."""
    return {
        "corpus": {"glob": "in/*.jsonl", "document_count": 100,
                   "fingerprint": FINGERPRINT},
        "langpack": {"pack_id": "en-basic", "language_tag": "en", "version": "1",
                     "content_hash": PACK_HASH},
        "signals_impl_version": IMPL_VERSION,
        "profile_digest": PROFILE_DIGEST,
        "signals": [
            {"signal": "bullet_ratio", "direction": "max", "units": "ratio",
             "retention": [{"threshold": t, "retained": 0.9} for t in RATIO],
             "retention_stable_bands": [
                 {"threshold_low": RATIO[10], "threshold_high": RATIO[63],
                  "retained_at_threshold_low": 0.81, "retained_at_threshold_high": 1.0}]},
            {"signal": "word_count", "direction": "interval", "units": "words",
             "retention": {"kind": "surface", "min_axis": MIN_AXIS, "max_axis": MAX_AXIS,
                           "retained": [[1.0] * 3] * 3}},
        ],
    }


def _promote_two(thresholds: dict[str, Any]) -> dict[str, Any]:
    doc, _ = promote(build_candidate(_two_signal_report()), thresholds, approver="Ada",
                     evidence="read the dropped documents", date="2024-05-01")
    return doc


def _bounds_doc(lo: Any, hi: Any) -> dict[str, Any]:
    """A valid approved policy, then word_count's bounds set by hand."""
    doc = _promote_two({"bullet_ratio": RATIO[20], "word_count": (50, 5000)})
    doc["thresholds"] = [t if t["signal"] != "word_count" else
                         {"signal": "word_count", "min": lo, "max": hi}
                         for t in doc["thresholds"]]
    return doc


def test_an_interval_with_min_equal_to_max_is_accepted_by_validation_and_promote(
    tmp_path: Path,
) -> None:
    """``min == max`` is one admissible value (``lo <= s <= hi``): validation,
    loading, ``promote`` and ``curate approve``'s ``--set LO:HI`` all accept it."""
    doc = _bounds_doc(50, 50)
    assert validate_policy(doc) == []
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    loaded = load_policy(path)
    assert loaded.status == "approved" and loaded.problems == ()
    assert loaded.thresholds["word_count"] == (50.0, 50.0)

    promoted = _promote_two(parse_threshold_assignments(["word_count=50:50"]))
    assert promoted["thresholds"] == [{"signal": "word_count", "min": 50, "max": 50}]
    assert validate_policy(promoted) == []
    write_approved(promoted, tmp_path / "approved.yaml")
    assert load_policy(tmp_path / "approved.yaml").thresholds == {"word_count": (50.0, 50.0)}
    keep = REGISTRY["word_count"].keep(np.array([49.0, 50.0, 51.0]), 50.0, 50.0)
    assert keep.tolist() == [False, True, False]


def test_an_interval_with_min_above_max_is_refused_by_both(tmp_path: Path) -> None:
    """The other side of the boundary: ``min > max`` is refused by both paths."""
    problems = validate_policy(_bounds_doc(51, 50))
    assert problems == ["thresholds[1] (word_count): min 51 > max 50"]
    path = tmp_path / "hand.yaml"
    path.write_text(yaml.safe_dump(_bounds_doc(51, 50), sort_keys=False))
    with pytest.raises(CuratorError) as loaded:
        load_policy(path)
    assert loaded.value.error_id == "policy_invalid"
    assert loaded.value.details["problems"] == problems
    with pytest.raises(CuratorError) as promoted:
        _promote_two({"word_count": (51, 50)})
    assert promoted.value.error_id == "invalid_threshold"


def test_override_keeps_the_first_of_duplicate_thresholds(tmp_path: Path) -> None:
    """Under allow_unvalidated_policy, the first entry of a repeated signal is the
    one applied (docs/policy.md: "any repeat of a signal [is] skipped"), at its place in
    the policy's order; the repeat is recorded in ``problems``."""
    doc = _promote_two({"bullet_ratio": RATIO[20], "word_count": (50, 5000)})
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


def test_integral_signals_have_int_thresholds_in_report_candidate_and_policy(
    tmp_path: Path,
) -> None:
    """An integral signal's thresholds are ``int`` (``3``, never ``3.0``): in the
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

    report = _two_signal_report()
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
    assert type(_promote_two({"bullet_ratio": 1.0})["thresholds"][0]["max"]) is float


# -- digests and tampering -------------------------------------------------------------------


def test_policy_digest_is_of_the_file_bytes(tmp_path: Path) -> None:
    path, digest = _round_trip(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"Ada", b"Adb"))  # one byte
    changed = load_policy(path)
    assert changed.status == "approved" and changed.policy_digest != digest
    path.write_bytes(data + b"\n")  # same YAML, one more byte
    assert load_policy(path).policy_digest not in (digest, changed.policy_digest)
    path.write_bytes(data)
    assert load_policy(path).policy_digest == digest


def test_what_catches_a_tampered_threshold(tmp_path: Path) -> None:
    """Validation cannot see a plausible edited value, and profile_digest covers the
    profile, not the policy: only policy_digest changes. The digest printed by
    `curate approve` and recorded in the run manifest is what exposes the edit."""
    path, digest = _round_trip(tmp_path)
    text = path.read_text()
    assert f"max: {IN_BAND}" in text
    path.write_text(text.replace(f"max: {IN_BAND}", "max: 0.9"))
    tampered = load_policy(path)
    assert tampered.status == "approved"  # still a valid policy
    assert tampered.thresholds["bullet_ratio"] == (None, 0.9)
    assert tampered.profile_digest == PROFILE_DIGEST  # unchanged: it does not catch this
    assert tampered.policy_digest != digest  # this does


# -- provenance ------------------------------------------------------------------------------


def test_provenance_matches(tmp_path: Path) -> None:
    policy = load_policy(_round_trip(tmp_path)[0])
    check_provenance(policy, corpus_fingerprint=FINGERPRINT, langpack_content_hash=PACK_HASH,
                     impl_version=IMPL_VERSION, configured_langpack_hash=PACK_HASH)
    check_provenance(policy, corpus_fingerprint=FINGERPRINT, langpack_content_hash=PACK_HASH)


OTHER = "sha256:" + "f" * 64


@pytest.mark.parametrize(("kwargs", "error_id"), [
    ({"impl_version": "corpus-curator-signals-0.9"}, "signals_impl_version_mismatch"),
    ({"corpus_fingerprint": OTHER}, "approval_corpus_mismatch"),
    ({"langpack_content_hash": OTHER}, "policy_langpack_mismatch"),
    ({"langpack_content_hash": None}, "policy_langpack_mismatch"),
    ({"configured_langpack_hash": OTHER}, "policy_langpack_mismatch"),
])
def test_provenance_mismatches(tmp_path: Path, kwargs: dict, error_id: str) -> None:
    policy = load_policy(_round_trip(tmp_path)[0])
    args: dict[str, Any] = {"corpus_fingerprint": FINGERPRINT,
                            "langpack_content_hash": PACK_HASH, "impl_version": IMPL_VERSION,
                            **kwargs}
    with pytest.raises(CuratorError) as exc:
        check_provenance(policy, **args)
    assert exc.value.error_id == error_id


@pytest.mark.parametrize("langpack", [None, {"id": "en"}, {"content_hash": ""}])
def test_a_policy_without_a_pack_hash_is_refused(tmp_path: Path, langpack: dict | None) -> None:
    doc = valid_policy()
    if langpack is None:
        del doc["langpack"]
    else:
        doc["langpack"] = langpack
    policy = load_policy(_write_raw(tmp_path / "p.yaml", doc))
    assert policy.status == "approved" and policy.langpack_content_hash is None
    with pytest.raises(CuratorError) as exc:
        check_provenance(policy, corpus_fingerprint=FINGERPRINT,
                         langpack_content_hash=PACK_HASH, impl_version=IMPL_VERSION)
    assert exc.value.error_id == "policy_langpack_mismatch"
