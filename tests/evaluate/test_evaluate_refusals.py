"""`curate evaluate` refuses invalid or empty labelled sets and unvalidated policies (exit 2),
before anything is scored; and its command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.errors import CuratorError
from curator.evaluate import evaluate_policy, read_labelled
from tests.evaluate._support import LANGPACKS, approved_policy, known_set, write_labelled

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return approved_policy(tmp_path / "policy")


def _doc(**over: Any) -> dict[str, Any]:
    doc = {"id": "a", "text": "The council met on Tuesday.", "label": "keep",
           "phenomenon": "clean"}
    doc.update(over)
    return {k: v for k, v in doc.items() if v is not ...}


def _refusal(paths: list[Path], policy: Path) -> CuratorError:
    with pytest.raises(CuratorError) as err:
        evaluate_policy(policy, paths, langpack_dir=LANGPACKS)
    assert err.value.exit_code == 2
    return err.value


@pytest.mark.parametrize(("lines", "error_id", "fragment"), [
    ([_doc(label=...)], "labelled_field_missing", "missing label"),
    ([_doc(id=...), _doc(id="b")], "labelled_field_missing", "missing id"),
    ([_doc(), _doc(text="Another text.")], "duplicate_labelled_id", "id 'a' already at"),
    ([_doc(phenomenon="typos")], "unknown_phenomenon", "phenomenon 'typos'"),
    ([_doc(label="maybe")], "unknown_label", "label 'maybe'"),
    ([_doc(label="KEEP")], "unknown_label", "label 'KEEP'"),
    ([_doc(text="   ")], "labelled_field_invalid", "text must be a non-empty string"),
    ([_doc(text=None)], "labelled_field_invalid", "text must be"),
    ([_doc(id=True)], "labelled_field_invalid", "id must be"),
    ([_doc(id="")], "labelled_field_invalid", "id must be"),
    (['{"id": "a", "text": "cut off'], "labelled_line_unparsable", "not JSON"),
    (["[1, 2]"], "labelled_line_unparsable", "not a JSON object"),
    ([], "labelled_set_empty", "no labelled record"),
    (["", "   "], "labelled_set_empty", "no labelled record"),
])
def test_invalid_sets_are_refused(tmp_path: Path, policy: Path, lines: list[Any],
                                  error_id: str, fragment: str) -> None:
    path = write_labelled(tmp_path / "set.jsonl", lines)
    err = _refusal([path], policy)
    assert err.error_id == error_id
    assert fragment in err.message
    assert f"{path}" in err.message


def test_every_problem_is_listed_with_its_line(tmp_path: Path) -> None:
    path = write_labelled(tmp_path / "set.jsonl", [
        _doc(), _doc(id="b", label="maybe"), _doc(id="c", phenomenon="x"), _doc()])
    with pytest.raises(CuratorError) as err:
        read_labelled([path])
    assert err.value.error_id == "unknown_label"  # the first problem's id
    assert err.value.details["problems"] == [
        f"{path}:2: label 'maybe' is not keep or drop",
        f"{path}:3: phenomenon 'x' is not one of clean, nfd, local_digits, ocr_noise, "
        "code_mixing, langid_error",
        f"{path}:4: id 'a' already at {path}:1",
    ]
    assert "3 problem(s)" in err.value.message


def test_a_duplicate_id_across_files_is_refused(tmp_path: Path, policy: Path) -> None:
    a = write_labelled(tmp_path / "a.jsonl", [_doc()])
    b = write_labelled(tmp_path / "b.jsonl", [_doc(label="drop")])
    err = _refusal([a, b], policy)
    assert err.error_id == "duplicate_labelled_id"
    assert f"{b}:1: id 'a' already at {a}:1" in err.message


def test_ids_compare_by_their_json_form(tmp_path: Path) -> None:
    path = write_labelled(tmp_path / "set.jsonl", [_doc(id=1), _doc(id="1")])
    docs, files = read_labelled([path])
    assert [d.id for d in docs] == [1, "1"] and files[0].records == 2


def test_a_missing_file_and_no_file(tmp_path: Path, policy: Path) -> None:
    err = _refusal([tmp_path / "nope.jsonl"], policy)
    assert err.error_id == "labelled_file_unreadable"
    assert _refusal([], policy).error_id == "labelled_set_empty"
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(json.dumps(_doc(text="café")).encode().replace(b"caf", b"caf\xe9"))
    assert _refusal([latin1], policy).error_id == "labelled_file_unreadable"


def test_an_empty_file_among_good_ones_is_refused(tmp_path: Path, policy: Path) -> None:
    good = write_labelled(tmp_path / "good.jsonl", known_set())
    empty = write_labelled(tmp_path / "empty.jsonl", [])
    err = _refusal([good, empty], policy)
    assert err.error_id == "labelled_set_empty" and str(empty) in err.message


def _edited(policy: Path, dst: Path, edit: Any) -> Path:
    doc = yaml.safe_load(policy.read_text())
    edit(doc)
    dst.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst


def test_unvalidated_policies_are_refused(tmp_path: Path, policy: Path) -> None:
    good = write_labelled(tmp_path / "set.jsonl", known_set())
    candidate = policy.with_name("candidate_policies.yaml")
    assert _refusal([good], candidate).error_id == "policy_not_approved"
    unapproved = _edited(policy, tmp_path / "u.yaml", lambda d: d.update(approved="yes"))
    assert _refusal([good], unapproved).error_id == "policy_not_approved"
    no_approver = _edited(policy, tmp_path / "n.yaml",
                          lambda d: d["approval"].update(approver=""))
    err = _refusal([good], no_approver)
    assert err.error_id == "policy_invalid" and "approver" in err.message
    inverted = _edited(policy, tmp_path / "i.yaml",
                       lambda d: d["thresholds"][0].update(max=0.5))
    assert _refusal([good], inverted).error_id == "policy_invalid"
    assert _refusal([good], tmp_path / "absent.yaml").error_id == "policy_unresolved"


def test_the_pack_must_load(tmp_path: Path, policy: Path) -> None:
    good = write_labelled(tmp_path / "set.jsonl", known_set())
    with pytest.raises(CuratorError) as err:
        evaluate_policy(policy, [good], langpack_dir=" ")
    assert err.value.error_id == "missing_langpack_dir"
    unset = evaluate_policy(policy, [good], langpack_dir=None)  # the packaged packs
    assert unset["langpack"]["matches_policy"] is True
    assert unset == {**evaluate_policy(policy, [good], langpack_dir=LANGPACKS),
                     "producer": unset["producer"]}
    with pytest.raises(CuratorError) as err:
        evaluate_policy(policy, [good], langpack_dir=tmp_path / "no-packs")
    assert err.value.exit_code == 2
    with pytest.raises(CuratorError) as err:
        evaluate_policy(policy, [good], langpack_dir=LANGPACKS, words=(10, 5))
    assert err.value.error_id == "config_error"


# -- the command line (a plain command: no Prefect flow) ----------------------------------------


def curate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_cli_measures_and_writes_the_report(tmp_path: Path, policy: Path) -> None:
    good = write_labelled(tmp_path / "set.jsonl", known_set())
    out = tmp_path / "reports" / "evaluation.json"
    done = curate("evaluate", "--policy", str(policy), "--labelled", str(good),
                  "--langpack-dir", str(LANGPACKS), "--words", "3:1000", "--report", str(out))
    assert done.returncode == 0, done.stderr
    assert "false rejection (keep dropped): 1/6 = 16.7%" in done.stdout
    assert "phenomenon" in done.stdout and "word_count_bounds" in done.stdout
    report = json.loads(out.read_text())
    assert report["totals"]["documents"] == 10
    assert report["word_bounds"] == {"min_words": 3, "max_words": 1000}
    assert f"report {out}" in done.stdout


def test_cli_refusals_exit_2_with_the_error_id(tmp_path: Path, policy: Path) -> None:
    dup = write_labelled(tmp_path / "dup.jsonl", [_doc(), _doc()])
    out = tmp_path / "evaluation.json"
    done = curate("evaluate", "--policy", str(policy), "--labelled", str(dup),
                  "--langpack-dir", str(LANGPACKS), "--report", str(out))
    assert done.returncode == 2
    assert done.stderr.startswith("error: [duplicate_labelled_id]")
    assert not out.exists()
    good = write_labelled(tmp_path / "good.jsonl", known_set())
    done = curate("evaluate", "--policy", str(policy.with_name("candidate_policies.yaml")),
                  "--labelled", str(good), "--langpack-dir", str(LANGPACKS))
    assert done.returncode == 2 and "[policy_not_approved]" in done.stderr
    done = curate("evaluate", "--policy", str(policy), "--labelled", str(good),
                  "--langpack-dir", str(LANGPACKS), "--words", "ten")
    assert done.returncode == 2 and "[config_error]" in done.stderr
