"""``curate status`` on a root built one ``curate <step>`` at a time (no flow_plan.json,
no --config): the next commands are the steps' own, by their CLI verb, never
``curate flow --config FLOW.yaml`` (#29, docs and examples that disagree with the tool)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app

TEXT = "The council met on Tuesday evening to discuss the new budget for the public library."


def _write(path: Path, docs: list[dict[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def _curate(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def _next(root: Path) -> list[str]:
    code, out, err = _curate("status", str(root))
    assert code == 0, err
    return [line.removeprefix("next: ") for line in out.splitlines()
            if line.startswith("next: ")]


def test_the_next_commands_of_a_root_built_step_by_step(tmp_path: Path) -> None:
    root = tmp_path / "root"
    raw = _write(tmp_path / "raw" / "a.jsonl",
                 [{"id": f"r{i}", "text": f"{TEXT} Item {i}."} for i in range(5)])
    code, _, err = _curate("ingest", "--set", f"input={raw}", "--set",
                           f"output_dir={root / 'ingested'}",
                           "--set", "execution.executor=inline")
    assert code == 0, err
    nexts = _next(root)
    assert nexts and nexts[0].startswith("curate profile --config CONFIG.yaml"), nexts
    assert not any(n.startswith("curate flow") for n in nexts)
    # a decontamination that failed (duplicate training ids): rerun by its command's name
    train = _write(tmp_path / "train" / "part_0.jsonl",
                   [{"id": "t", "text": TEXT}, {"id": "t", "text": TEXT + " Again."}])
    holdout = _write(tmp_path / "holdout" / "h.jsonl", [{"id": "h", "text": "other words"}])
    code, _, err = _curate("decontaminate", "--set", f"train_glob={train}", "--set",
                           f"holdout_glob={holdout}", "--set", "id_field=id", "--set",
                           f"output_dir={root / 'decontaminated'}",
                           "--set", "execution.executor=inline")
    assert code == 2 and "[id_field_missing_or_duplicated]" in err
    nexts = _next(root)
    assert nexts == ["curate decontaminate --config CONFIG.yaml  (the config of its last "
                     "run: it starts afresh)"], nexts


def test_a_named_flow_config_still_gets_the_flow_command(tmp_path: Path) -> None:
    root = tmp_path / "root"
    raw = _write(tmp_path / "raw" / "a.jsonl", [{"id": "r", "text": TEXT}])
    code, _, err = _curate("ingest", "--set", f"input={raw}", "--set",
                           f"output_dir={root / 'ingested'}",
                           "--set", "execution.executor=inline")
    assert code == 0, err
    code, out, err = _curate("status", str(root), "--config", "flow.yaml")
    assert code == 0, err
    assert "next: curate flow --config flow.yaml" in out
