"""An ``output_dir`` that is the input directory (or contains every input file) is refused
as what it is, ``output_overlaps_input``, never as an input that "matches no files"
while the files are there (#29 item 11). The input is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app


def _write(folder: Path, prefix: str, n: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "part_0.jsonl").write_text("".join(
        json.dumps({"id": f"{prefix}{i}", "text": f"{prefix} document number {i} with words "
                    "enough to make a shingle or two of text"}) + "\n" for i in range(n)))
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _curate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--set", "execution.executor=inline"])
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result.exit_code, result.stderr


def _cases(tmp_path: Path) -> dict[str, tuple[Path, list[str]]]:
    train = _write(tmp_path / "train", "t")
    holdout = _write(tmp_path / "holdout", "h")
    return {
        "decontaminate-train": (train, [
            "decontaminate", "--set", f"train_glob={train}", "--set",
            f"holdout_glob={holdout}/*.jsonl", "--set", "id_field=id",
            "--set", f"output_dir={train}"]),
        "decontaminate-holdout": (holdout, [
            "decontaminate", "--set", f"train_glob={train}/*.jsonl", "--set",
            f"holdout_glob={holdout}/part_0.jsonl", "--set", "id_field=id",
            "--set", f"output_dir={holdout}"]),
        "subset": (train, [
            "subset", "--set", f"input_glob={train}/*.jsonl", "--set", "id_field=id",
            "--set", "token_budgets=[10]", "--set", f"output_dir={train}"]),
        "audit": (train, [
            "audit", "--set", f"target_glob={train}", "--set", "mode=digest",
            "--set", f"output_dir={train}"]),
    }


@pytest.mark.parametrize("case", ["decontaminate-train", "decontaminate-holdout", "subset",
                                  "audit"])
def test_an_output_dir_equal_to_the_input_directory_is_refused(tmp_path: Path,
                                                                case: str) -> None:
    folder, argv = _cases(tmp_path)[case]
    before = _snapshot(folder)
    code, err = _curate(*argv)
    assert code == 2, err
    assert err.startswith("error: [output_overlaps_input]"), err
    assert f"output_dir {folder} is the input directory" in err
    assert "matches no" not in err
    assert _snapshot(folder) == before, "a refusal changes nothing"


def test_an_output_dir_holding_the_input_is_refused(tmp_path: Path) -> None:
    train = _write(tmp_path / "root" / "in", "t")
    code, err = _curate("subset", "--set", f"input_glob={train}/*.jsonl", "--set",
                        "id_field=id", "--set", "token_budgets=[10]",
                        "--set", f"output_dir={tmp_path / 'root'}")
    assert code == 2 and "[output_overlaps_input]" in err
    assert f"output_dir {tmp_path / 'root'} contains the input" in err


def test_an_input_that_matches_nothing_keeps_its_own_id(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    holdout = _write(tmp_path / "holdout", "h")
    code, err = _curate("subset", "--set", f"input_glob={empty}/*.jsonl", "--set",
                        "id_field=id", "--set", "token_budgets=[10]",
                        "--set", f"output_dir={empty}")
    assert code == 2 and "[input_glob_no_matches]" in err
    # a holdout named outright that does not exist: the id docs/decontamination.md names
    code, err = _curate("decontaminate", "--set", f"train_glob={holdout}/*.jsonl",
                        "--set", f"holdout_glob={tmp_path / 'absent.jsonl'}",
                        "--set", "id_field=id", "--set", f"output_dir={tmp_path / 'out'}")
    assert code == 2 and err.startswith("error: [holdout_glob_no_matches]"), err
