"""``curate evaluate --report`` never writes over an input nor into a directory (#29 item 3),
and a language gate that removes every labelled document is refused as the filter refuses
it (#29 item 12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.evaluate._support import LANGPACKS, approved_policy, known_set, write_labelled


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    return {"policy": approved_policy(tmp_path / "policy"),
            "labelled": write_labelled(tmp_path / "set.jsonl", known_set())}


def _evaluate(world: dict[str, Path], *more: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [
        "evaluate", "--policy", str(world["policy"]), "--labelled", str(world["labelled"]),
        "--langpack-dir", str(LANGPACKS), *more])
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def _bytes(*paths: Path) -> list[bytes]:
    return [p.read_bytes() for p in paths]


@pytest.mark.parametrize("which", ["labelled", "policy"])
def test_a_report_over_an_input_is_refused_and_the_input_kept(
        world: dict[str, Path], which: str) -> None:
    before = _bytes(world["labelled"], world["policy"])
    code, _, err = _evaluate(world, "--report", str(world[which]))
    assert code == 2
    assert err.startswith("error: [report_overwrites_input]")
    assert str(world[which]) in err
    assert _bytes(world["labelled"], world["policy"]) == before


def test_an_input_under_another_name_is_refused(world: dict[str, Path], tmp_path: Path) -> None:
    link = tmp_path / "alias.json"
    os.link(world["labelled"], link)  # a hard link: the same file
    before = world["labelled"].read_bytes()
    code, _, err = _evaluate(world, "--report", str(link))
    assert code == 2 and "[report_overwrites_input]" in err
    dotted = tmp_path / "sub" / ".." / "set.jsonl"  # the same path spelled otherwise
    (tmp_path / "sub").mkdir()
    code, _, err = _evaluate(world, "--report", str(dotted))
    assert code == 2 and "[report_overwrites_input]" in err
    assert world["labelled"].read_bytes() == before


def test_a_report_inside_the_pack_directory_is_refused(world: dict[str, Path]) -> None:
    code, _, err = _evaluate(world, "--report", str(LANGPACKS / "evaluation.json"))
    assert code == 2 and "[report_overwrites_input]" in err
    assert not (LANGPACKS / "evaluation.json").exists()


def test_a_directory_is_refused_with_an_error_id(world: dict[str, Path], tmp_path: Path) -> None:
    existing = tmp_path / "reports"
    existing.mkdir()
    code, _, err = _evaluate(world, "--report", str(existing))
    assert code == 2 and err.startswith("error: [report_is_a_directory]")
    assert list(existing.iterdir()) == []
    code, _, err = _evaluate(world, "--report", f"{tmp_path / 'new'}/")
    assert code == 2 and "[report_is_a_directory]" in err
    assert not (tmp_path / "new").exists()


def test_a_report_under_a_file_is_an_error_id(world: dict[str, Path]) -> None:
    code, _, err = _evaluate(world, "--report", str(world["labelled"] / "evaluation.json"))
    assert code == 2 and "[report_unwritable]" in err


def test_a_fresh_report_path_is_written(world: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out" / "evaluation.json"
    code, stdout, _ = _evaluate(world, "--report", str(out))
    assert code == 0 and out.is_file() and f"report {out}" in stdout


@pytest.mark.parametrize("options", [["--language", "xx"],
                                     ["--language", "en", "--min-langid-score", "2"]])
def test_a_language_gate_that_removes_everything_is_refused(
        world: dict[str, Path], tmp_path: Path, options: list[str]) -> None:
    out = tmp_path / "evaluation.json"
    code, _, err = _evaluate(world, *options, "--report", str(out))
    assert code == 2
    assert err.startswith("error: [language_filter_removed_everything]")  # the filter's id
    assert not out.exists()


@pytest.mark.parametrize("score", ["nan", "inf"])
def test_a_score_floor_the_filter_refuses_is_refused(world: dict[str, Path], score: str) -> None:
    code, _, err = _evaluate(world, "--language", "en", "--min-langid-score", score)
    assert code == 2 and err.startswith("error: [config_error] --min-langid-score"), err
