"""What ``curate decontaminate`` tells a person: the rule counts overlap and say so, and
a refusal's advice names only a setting that would change something (#29, docs)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app

TEXT = ("The council met on Tuesday evening to discuss the new budget for the public "
        "library, and the mayor promised a review by the end of the month.")


def _write(path: Path, docs: list[dict[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def _run(tmp_path: Path, train: list[dict[str, str]], holdout: list[dict[str, str]],
         *more: str) -> tuple[int, str, str]:
    t = _write(tmp_path / "train" / "part_0.jsonl", train)
    h = _write(tmp_path / "holdout" / "h.jsonl", holdout)
    result = CliRunner().invoke(app, [
        "decontaminate", "--set", f"train_glob={t}", "--set", f"holdout_glob={h}",
        "--set", "id_field=id", "--set", f"output_dir={tmp_path / 'out'}",
        "--set", "execution.executor=inline", *more])
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def test_the_summary_says_the_rules_overlap(tmp_path: Path) -> None:
    # one copied document: removed once, matched by jaccard and by containment
    train = [{"id": "t0", "text": TEXT}, {"id": "t1", "text": "Something else entirely, "
                                                            "about baking bread at home."}]
    code, out, err = _run(tmp_path, train, [{"id": "h0", "text": TEXT}])
    assert code == 0, err
    line = out.strip().splitlines()[-1]
    assert line.startswith("decontamination: 1 of 2 training documents removed; 1 kept")
    assert "rules matched: identity 0, jaccard 1, containment 1" in line
    assert "a document may match several" in line


def test_disjoint_key_spaces_advice_names_only_what_would_help(tmp_path: Path) -> None:
    train = [{"id": "t0", "text": TEXT, "url": "https://a.example/x"}]
    code, _, err = _run(tmp_path, train, [{"id": "h0", "text": TEXT}])
    assert code == 2 and "[identity_key_spaces_disjoint]" in err
    assert "shared_id_space" not in err  # already true, the default
    code, _, err = _run(tmp_path / "b", [{"id": "t0", "text": TEXT}],
                        [{"id": "h0", "text": TEXT}], "--set", "shared_id_space=false")
    assert code == 2 and "[identity_key_spaces_disjoint]" in err
    assert "shared_id_space: true (it is false" in err
