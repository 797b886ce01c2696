"""The warnings a report lists reach the command line (``warning: [id] message`` lines on
stderr, after the step's summary line) and the markdown published as the Prefect artifact,
not only the JSON (#29 item 12)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from curator.steps.registry import BY_KEY
from flows.cli import app

TEXTS = [
    "The council met on Tuesday evening to discuss the new budget for the public library.",
    "To bake the bread, mix the flour with warm water and a little salt, then let it rest.",
    "Our team spent the weekend hiking along the river; the weather was cold but clear.",
    "He said that the results of the study were published in a journal in the spring.",
]


def _write(path: Path, docs: list[dict[str, Any]], extra: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs) + extra)
    return path


def _curate(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [*args, "--set", "execution.executor=inline"])
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def _decontaminate(tmp_path: Path, train: Path, holdout: Path) -> tuple[int, str, str]:
    return _curate("decontaminate", "--set", f"train_glob={train}", "--set",
                   f"holdout_glob={holdout}", "--set", "id_field=id",
                   "--set", f"output_dir={tmp_path / 'out'}")


def _report(tmp_path: Path, name: str) -> dict[str, Any]:
    return json.loads((tmp_path / "out" / name).read_text())


def test_a_holdout_with_unparsable_lines_warns(tmp_path: Path) -> None:
    train = _write(tmp_path / "train" / "part_0.jsonl",
                   [{"id": f"t{i}", "text": t} for i, t in enumerate(TEXTS)])
    holdout = _write(tmp_path / "holdout" / "h.jsonl", [{"id": "h0", "text": "unrelated words"}],
                     extra='{"id": "h1", "text": "cut off\n[1, 2]\n')
    code, out, err = _decontaminate(tmp_path, train, holdout)
    assert code == 0, err
    assert out.strip().splitlines()[-1].startswith("decontamination: 0 of 4")
    assert "warning: [holdout_lines_skipped] 2 holdout lines were skipped (1 not_an_object, " \
           "1 unparsable_line)" in err
    report = _report(tmp_path, "decontamination_report.json")
    assert report["splits"]["holdout"]["unparsable_lines"] == 1
    markdown = BY_KEY["decontamination"].rendered(report).markdown  # the Prefect artifact
    assert "holdout_lines_skipped" in markdown


def test_a_holdout_equal_to_the_training_corpus_warns(tmp_path: Path) -> None:
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)]
    train = _write(tmp_path / "train" / "part_0.jsonl", docs)
    holdout = _write(tmp_path / "holdout" / "copy.jsonl", docs)
    code, out, err = _decontaminate(tmp_path, train, holdout)
    assert out.strip().splitlines()[-1].startswith("decontamination: 4 of 4 training "
                                                   "documents removed"), (code, out, err)
    assert "warning: [everything_removed] every training document (4)" in err
    report = _report(tmp_path, "decontamination_report.json")
    assert [w["id"] for w in report["warnings"]] == ["everything_removed"]
    assert "everything_removed" in BY_KEY["decontamination"].rendered(report).markdown


def test_subset_shortfall_and_starved_strata_reach_the_command_line(tmp_path: Path) -> None:
    docs = [{"id": f"d{i}", "text": " ".join(["word"] * (5 + 40 * (i % 2))),
             "source": "a" if i % 2 else "b"} for i in range(10)]
    inp = _write(tmp_path / "in" / "part_0.jsonl", docs)
    code, out, err = _curate("subset", "--set", f"input_glob={inp}", "--set", "id_field=id",
                             "--set", "source_field=source", "--set", "token_budgets=[6, 10000]",
                             "--set", f"output_dir={tmp_path / 'out'}")
    assert code == 0, err
    report = _report(tmp_path, "subset_report.json")
    ids = {w["id"] for w in report["warnings"]}
    assert {"starved_strata", "token_shortfall"} <= ids, ids
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("subset")
    printed = [line for line in err.splitlines() if line.startswith("warning: [")]
    assert {line.split("]")[0][len("warning: ["):] for line in printed} == ids
    markdown = BY_KEY["subset"].rendered(report).markdown
    assert all(w in markdown for w in ids)


def test_curate_flow_prints_the_warnings_of_the_steps_it_ran(
        tmp_path: Path, monkeypatch: Any) -> None:
    import yaml

    monkeypatch.setenv("CURATE_PREFECT", "never")
    raw = _write(tmp_path / "raw" / "a.jsonl",
                 [{"id": f"t{i}", "text": t} for i, t in enumerate(TEXTS)])
    holdout = _write(tmp_path / "holdout" / "h.jsonl", [{"id": "h0", "text": "other words"}],
                     extra="not json\n")
    config = tmp_path / "flow.yaml"
    config.write_text(yaml.safe_dump({
        "corpus": {"input": str(raw), "id_field": "id"},
        "output_root": str(tmp_path / "root"),
        "steps": {"ingest": {"enabled": True},
                  "decontamination": {"enabled": True, "holdout": str(holdout)}},
        "execution": {"executor": "inline"}}))
    result = CliRunner().invoke(app, ["flow", "--config", str(config)])
    assert result.exit_code == 0, result.stderr
    assert "warning: curate/decontamination: [holdout_lines_skipped] 1 holdout line was " \
           "skipped (1 unparsable_line)" in result.stderr
