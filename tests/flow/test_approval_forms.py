"""``approve.thresholds`` in both forms: the mapping ``{signal: value | [lo, hi]}`` and
the approved policy's own list ``[{signal, min|max}]``. Equivalent choices give the
same approved policy bytes; the list form's mistakes give the mapping form's error ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.errors import CuratorError
from curator.flow.approval import approve_policy, thresholds_from
from curator.policy import write_candidate
from tests.profile.test_policy import IN_BAND, RATIO, make_candidate

MAPPING: dict[str, Any] = {
    "bullet_ratio": IN_BAND,            # one-sided, max
    "words_with_alphabets": RATIO[5],   # one-sided, min
    "boilerplate_hits": 3,              # one-sided, max, integral grid
    "word_count": [50, 5000],           # interval
}
ENTRIES: list[dict[str, Any]] = [
    {"signal": "bullet_ratio", "max": IN_BAND},
    {"signal": "words_with_alphabets", "min": RATIO[5]},
    {"signal": "boilerplate_hits", "max": 3},
    {"signal": "word_count", "min": 50, "max": 5000},
]


@pytest.fixture
def candidate(tmp_path: Path) -> Path:
    path = tmp_path / "candidate_policies.yaml"
    write_candidate(make_candidate(), path)
    return path


def approve(candidate: Path, out: Path, thresholds: Any) -> tuple[str, bytes]:
    digest, _ = approve_policy(candidate, out, thresholds, approver="Ada",
                               evidence="read 200 dropped docs", date="2024-05-01")
    return digest, out.read_bytes()


def test_both_forms_read_the_same() -> None:
    assert thresholds_from(ENTRIES) == thresholds_from(MAPPING) == {
        "bullet_ratio": IN_BAND, "words_with_alphabets": RATIO[5], "boilerplate_hits": 3,
        "word_count": (50, 5000)}
    assert thresholds_from(list(reversed(ENTRIES))) == thresholds_from(MAPPING)


def test_both_forms_write_the_same_policy_bytes(candidate: Path, tmp_path: Path) -> None:
    by_mapping = approve(candidate, tmp_path / "a.yaml", MAPPING)
    by_entries = approve(candidate, tmp_path / "b.yaml", ENTRIES)
    assert by_entries == by_mapping
    assert by_mapping[0].startswith("sha256:")


def test_the_written_policy_thresholds_are_accepted_as_they_are(
    candidate: Path, tmp_path: Path
) -> None:
    """The list form is exactly the approved policy's: its thresholds, pasted back."""
    digest, data = approve(candidate, tmp_path / "a.yaml", MAPPING)
    written = yaml.safe_load(data)["thresholds"]
    assert written == sorted(ENTRIES, key=lambda e: e["signal"])
    assert approve(candidate, tmp_path / "b.yaml", written) == (digest, data)


def test_integers_read_as_the_flow_config_reads_them(candidate: Path, tmp_path: Path) -> None:
    """The flow's config and approval form give the mapping form's numbers as floats
    (``1`` becomes ``1.0``); a list entry's ``max: 1`` writes the same bytes."""
    as_config = {"bullet_ratio": 1.0, "boilerplate_hits": 3.0, "word_count": [50.0, 5000.0]}
    as_written = [{"signal": "bullet_ratio", "max": 1}, {"signal": "boilerplate_hits", "max": 3},
                  {"signal": "word_count", "min": 50, "max": 5000}]
    as_call = {"bullet_ratio": 1, "boilerplate_hits": 3, "word_count": [50, 5000]}
    first = approve(candidate, tmp_path / "a.yaml", as_config)
    assert approve(candidate, tmp_path / "b.yaml", as_written) == first
    assert approve(candidate, tmp_path / "c.yaml", as_call) == first
    policy = yaml.safe_load(first[1])["thresholds"]
    assert policy[0] == {"signal": "boilerplate_hits", "max": 3}  # an integral grid: an int
    assert policy[1] == {"signal": "bullet_ratio", "max": 1.0}
    assert b"max: 1.0\n" in first[1]  # a ratio: a float, whichever form gave it


def error_id(candidate: Path, tmp_path: Path, thresholds: Any) -> str:
    with pytest.raises(CuratorError) as info:
        approve(candidate, tmp_path / "x.yaml", thresholds)
    assert not (tmp_path / "x.yaml").exists()
    return info.value.error_id


@pytest.mark.parametrize(("entries", "expected"), [
    # unknown keys
    ([{"signal": "bullet_ratio", "max": 0.5, "maximum": 0.6}], "invalid_threshold"),
    ([{"signal": "bullet_ratio", "value": 0.5}], "invalid_threshold"),
    # neither min nor max
    ([{"signal": "bullet_ratio"}], "invalid_threshold"),
    # a signal twice
    ([{"signal": "bullet_ratio", "max": 0.5}, {"signal": "bullet_ratio", "max": 0.6}],
     "duplicate_threshold"),
    # the bound the direction does not take (it would invert the gate)
    ([{"signal": "bullet_ratio", "min": 0.5}], "invalid_threshold"),
    ([{"signal": "words_with_alphabets", "max": 0.5}], "invalid_threshold"),
    ([{"signal": "bullet_ratio", "min": 0.1, "max": 0.5}], "invalid_threshold"),
    ([{"signal": "word_count", "min": 50}], "invalid_threshold"),
    # not an entry
    (["bullet_ratio"], "invalid_threshold"),
    ([{"max": 0.5}], "invalid_threshold"),
    ([{"signal": 7, "max": 0.5}], "invalid_threshold"),
    # what promote() refuses, for either form
    ([{"signal": "bullet_ratio", "max": "low"}], "invalid_threshold"),
    ([{"signal": "bullet_ratio", "max": True}], "invalid_threshold"),
    ([{"signal": "word_count", "min": 5000, "max": 50}], "invalid_threshold"),
    ([{"signal": "stopword_ratio", "min": 0.1}], "signal_not_profiled"),
    ([{"signal": "no_such_signal", "max": 1}], "signal_not_profiled"),
    ([], "policy_thresholds_empty"),
])
def test_list_form_refusals(candidate: Path, tmp_path: Path, entries: list[Any],
                            expected: str) -> None:
    assert error_id(candidate, tmp_path, entries) == expected


@pytest.mark.parametrize(("mapping", "entries"), [
    ({"bullet_ratio": [0.1, 0.5]}, [{"signal": "bullet_ratio", "min": 0.1, "max": 0.5}]),
    ({"word_count": 50}, [{"signal": "word_count", "min": 50}]),
    ({"bullet_ratio": "low"}, [{"signal": "bullet_ratio", "max": "low"}]),
    ({"word_count": [5000, 50]}, [{"signal": "word_count", "min": 5000, "max": 50}]),
    ({"stopword_ratio": 0.1}, [{"signal": "stopword_ratio", "min": 0.1}]),
    ({"no_such_signal": 1}, [{"signal": "no_such_signal", "max": 1}]),
    ({}, []),
])
def test_the_same_mistake_gives_the_same_id_in_either_form(
    candidate: Path, tmp_path: Path, mapping: dict[str, Any], entries: list[Any]
) -> None:
    assert error_id(candidate, tmp_path, mapping) == error_id(candidate, tmp_path, entries)


def test_a_message_names_the_entry() -> None:
    with pytest.raises(CuratorError) as info:
        thresholds_from([{"signal": "bullet_ratio", "max": 0.5},
                         {"signal": "word_count", "min": 50, "mx": 10}])
    assert "approve.thresholds[1] (word_count): unknown keys ['mx']" in str(info.value)


@pytest.mark.parametrize("raw", ["bullet_ratio=0.5", 0.5])
def test_neither_form_is_refused(raw: Any) -> None:
    with pytest.raises(CuratorError) as info:
        thresholds_from(raw)
    assert info.value.error_id == "invalid_threshold"
