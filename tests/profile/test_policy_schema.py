"""The approved policy's schema model: what it catches beyond the old hand-written check,
that every unmet rule is still listed (in the documented order), and that the model can be
used on its own."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from curator.errors import CuratorError
from curator.policy import ApprovedPolicy, load_policy, promote, validate_policy
from tests.profile.test_policy import IN_BAND, make_candidate, valid_policy

HUGE = 10**400  # an int past float's range: float(HUGE) raises OverflowError


def _with_bound(value: Any) -> dict[str, Any]:
    doc = valid_policy()
    doc["thresholds"][0]["max"] = value  # bullet_ratio, a max signal
    return doc


def _huge_policy_file(path: Path) -> Path:
    """A policy file whose bullet_ratio bound is a 401-digit YAML integer."""
    text = yaml.safe_dump(valid_policy(), sort_keys=False)
    old = f"max: {IN_BAND}"
    assert old in text
    path.write_text(text.replace(old, "max: 1" + "0" * 400))
    assert yaml.safe_load(path.read_text())["thresholds"][0]["max"] == HUGE
    return path


# -- what the model catches ------------------------------------------------------------------


@pytest.mark.parametrize("value", [HUGE, -HUGE], ids=["huge", "minus-huge"])
def test_a_bound_past_floats_range_is_a_problem_not_a_crash(value: int) -> None:
    assert validate_policy(_with_bound(value)) == [
        f"thresholds[0] (bullet_ratio).max: must be a finite number, got {value!r}"]


def test_loading_a_bound_past_floats_range_is_refused_as_invalid(tmp_path: Path) -> None:
    path = _huge_policy_file(tmp_path / "p.yaml")
    with pytest.raises(CuratorError) as exc:
        load_policy(path)
    assert exc.value.error_id == "policy_invalid"
    assert exc.value.details["problems"][0].startswith(
        "thresholds[0] (bullet_ratio).max: must be a finite number")


def test_the_override_skips_a_bound_past_floats_range(tmp_path: Path) -> None:
    policy = load_policy(_huge_policy_file(tmp_path / "p.yaml"), allow_unvalidated=True)
    assert policy.status == "override_unvalidated"
    assert "bullet_ratio" not in policy.thresholds
    assert "thresholds[0] (bullet_ratio): skipped under the override (no bound)" in (
        policy.problems)


def test_promote_refuses_a_value_past_floats_range() -> None:
    with pytest.raises(CuratorError) as exc:
        promote(make_candidate(), {"bullet_ratio": HUGE}, approver="A", evidence="E")
    assert exc.value.error_id == "invalid_threshold"


@pytest.mark.parametrize("field", ["profile_digest", "fingerprint"])
def test_a_digest_with_a_trailing_newline_is_refused(field: str) -> None:
    """``re``'s ``$`` matched before a final newline; the model's pattern does not."""
    doc = valid_policy()
    holder = doc["corpus"] if field == "fingerprint" else doc
    holder[field] += "\n"
    [problem] = validate_policy(doc)
    assert problem.startswith(f"{'corpus.' if field == 'fingerprint' else ''}{field}: must be "
                              "sha256: and 64 hex characters")


@pytest.mark.parametrize("value", [True, False, math.nan, -math.inf, None, "0.2", [0.2]])
def test_a_bound_must_be_a_finite_number(value: object) -> None:
    assert validate_policy(_with_bound(value)) == [
        f"thresholds[0] (bullet_ratio).max: must be a finite number, got {value!r}"]


def test_thresholds_must_be_a_list_not_another_sequence() -> None:
    doc = valid_policy()
    doc["thresholds"] = tuple(doc["thresholds"])
    assert validate_policy(doc) == [
        "thresholds: must be a non-empty list (there is no fallback to Curator defaults)"]


# -- every unmet rule, in order --------------------------------------------------------------


def test_an_entry_lists_its_key_rules_even_when_a_field_fails() -> None:
    """Pydantic skips a model's own checks once a field fails; the policy's rules do not."""
    doc = valid_policy()
    doc["thresholds"][0] = {"signal": "bullet_ratio", "min": "x", "typo": 1}
    doc["thresholds"].append({"signal": "bullet_ratio", "max": math.nan})
    assert validate_policy(doc) == [
        "thresholds[0] (bullet_ratio): unknown keys ['typo'] (a bound is min or max)",
        "thresholds[0] (bullet_ratio).min: must be a finite number, got 'x'",
        "thresholds[0] (bullet_ratio): a max signal takes max, got min (anything else would "
        "invert the gate)",
        "thresholds[3] (bullet_ratio): duplicate signal",
        "thresholds[3] (bullet_ratio).max: must be a finite number, got nan",
    ]


def test_problems_come_in_the_documented_order() -> None:
    """Missing keys first, then the fields in the order docs/policy.md lists their rules."""
    doc = valid_policy()
    del doc["thresholds"], doc["corpus"]
    doc["approved"] = "yes"
    doc["schema_version"] = 2
    doc["langpack"] = []
    doc["approval"] = {"approver": " ", "method": "vibes", "date": "2024-02-30"}
    doc["profile_digest"] = "nope"
    doc["signals_impl_version"] = ""
    assert validate_policy(doc) == [
        "corpus: required key missing",
        "thresholds: required key missing",
        "schema_version: must be 1, got 2",
        "approved: must be the boolean true, got 'yes'",
        "signals_impl_version: must be a non-empty string",
        "profile_digest: must be sha256: and 64 hex characters, got 'nope'",
        "langpack: must be a mapping",
        "approval.approver: must be a non-empty string",
        "approval.evidence: must be a non-empty string",
        "approval.method: must be one of manual, ablation, got 'vibes'",
        "approval.date: must be YYYY-MM-DD when given, got '2024-02-30'",
    ]


# -- the model on its own --------------------------------------------------------------------


def test_the_model_reads_a_valid_policy() -> None:
    policy = ApprovedPolicy.model_validate(valid_policy())
    assert policy.approved is True and policy.approval.method == "manual"
    assert [(t.signal, t.min, t.max) for t in policy.thresholds] == [
        ("bullet_ratio", None, IN_BAND), ("word_count", 50.0, 5000.0),
        ("words_with_alphabets", valid_policy()["thresholds"][2]["min"], None)]


@pytest.mark.parametrize("approved", [1, "true"])
def test_the_model_refuses_what_is_not_the_boolean_true(approved: object) -> None:
    """``Literal[True]`` would take ``1`` (``1 == True``); the model does not."""
    doc = valid_policy()
    doc["approved"] = approved
    with pytest.raises(ValidationError):
        ApprovedPolicy.model_validate(doc)


def test_the_model_refuses_a_duplicate_signal() -> None:
    doc = valid_policy()
    doc["thresholds"].append(dict(doc["thresholds"][0]))
    with pytest.raises(ValidationError) as exc:
        ApprovedPolicy.model_validate(doc)
    assert [e["type"] for e in exc.value.errors()] == ["duplicate_signal"]
