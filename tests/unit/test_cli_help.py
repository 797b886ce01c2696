"""``curate <command> --help`` lists every config key with its default, and shell
completion installs (issue 16).

The expected keys are walked here from the models independently of
``curator.steps.help``, and each must appear on one line of the rendered help with its
default (or ``required``): a field added to a step's model is checked without an edit
here, and a field the help dropped fails the test (``test_a_missing_key_is_caught``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.rich_utils
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from curator.config import ConfigBlock
from curator.steps.help import config_keys
from curator.steps.registry import STEPS
from flows.cli import _keys_help, app

CURATE = str(Path(sys.executable).parent / "curate")
WIDE = 400  # one row per line: nothing wraps


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = [a for a in typing.get_args(annotation)
                 if isinstance(a, type) and issubclass(a, BaseModel)]
        return found[0] if found else None
    return None


def _spelled(value: Any) -> str:
    """A default as the YAML config would hold it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if value == "":
        return '""'
    if isinstance(value, list):
        return "[" + ", ".join(_spelled(v) for v in value) + "]"
    return str(value)


def expected_keys(model: type[BaseModel], prefix: str = "") -> dict[str, str]:
    """``{dotted key: default}`` of every field, nested models' fields included."""
    out: dict[str, str] = {}
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        sub = _model_in(field.annotation)
        if field.is_required():
            default = "required"
        else:
            value = field.get_default(call_default_factory=True)
            default = "null" if value is None else _spelled(value)
        if sub is None or default in ("null", "required"):
            out[key] = default
        if sub is not None:
            out.update(expected_keys(sub, key + "."))
    return out


def missing_keys(model: type[BaseModel], help_text: str) -> list[str]:
    """The keys of ``model`` with no line ``key  default`` in ``help_text``."""
    lines = help_text.splitlines()
    missing = []
    for key, default in expected_keys(model).items():
        row = re.compile(rf"(^|[\s│]){re.escape(key)}\s+{re.escape(default)}(\s|$)")
        if not any(row.search(line) for line in lines):
            missing.append(f"{key} (default {default})")
    return missing


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", WIDE)


def _help(*argv: str) -> str:
    result = CliRunner().invoke(app, [*argv, "--help"], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("spec", STEPS, ids=lambda s: s.command_name)
def test_each_step_help_lists_every_config_key_with_its_default(spec: Any, wide: None) -> None:
    text = _help(spec.command_name)
    assert "Config keys" in text
    assert expected_keys(spec.config), spec.key
    assert missing_keys(spec.config, text) == []
    assert "execution.executor" in text  # nested keys as dotted names


def test_flow_help_lists_its_keys_and_one_block_per_step(wide: None) -> None:
    from curator.flow.plan import FlowConfig

    text = _help("flow")
    keys = expected_keys(FlowConfig)
    assert keys.pop("steps") == "{}"  # spelled out below, one block per registered step
    assert "approve.timeout_seconds" in keys and "corpus.input" in keys
    for key, default in keys.items():
        assert re.search(rf"{re.escape(key)}\s+{re.escape(default)}\s", text), key
    for spec in STEPS:
        assert re.search(rf"steps\.{spec.key}\s+\{{enabled: false\}}\s.*curate "
                         rf"{spec.command_name} --help", text), spec.key


def test_descriptions_come_from_the_fields_descriptions(wide: None) -> None:
    text = _help("filter")
    # Field(description=...) of FilterConfig.rejected_dir, ExecutionConfig.checkpoint_path
    assert re.search(r"rejected_dir\s+null\s+str \| null\s+default: <output_dir>/rejected",
                     text)
    assert re.search(r"execution\.checkpoint_path\s+null\s.*so a rerun resumes", text)


class _Nested(BaseModel):
    depth: int = 3


class _NewModel(ConfigBlock):
    """A model with a field the help has never seen."""

    brand_new_key: str = Field("fresh", description="its description")
    block: _Nested = Field(_Nested(), description="a block")
    must: list[str]


def test_a_new_field_shows_up_and_a_missing_key_is_caught(wide: None) -> None:
    demo = typer.Typer()
    demo.command("demo", cls=_keys_help(lambda: config_keys(_NewModel)))(lambda: None)
    demo.command("other")(lambda: None)
    text = CliRunner().invoke(demo, ["demo", "--help"], env={"NO_COLOR": "1"}).output
    assert missing_keys(_NewModel, text) == []
    assert re.search(r"brand_new_key\s+fresh\s+str\s+its description", text)
    assert re.search(r"must\s+required\s", text) and re.search(r"block\.depth\s+3\s", text)
    # the check fails when a key is absent (here: its line removed from the help)
    dropped = "\n".join(line for line in text.splitlines() if "brand_new_key" not in line)
    assert missing_keys(_NewModel, dropped) == ["brand_new_key (default fresh)"]
    wrong = text.replace("fresh", "stale")
    assert missing_keys(_NewModel, wrong) == ["brand_new_key (default fresh)"]


def test_top_level_help_points_to_the_keys_status_and_completion() -> None:
    text = " ".join(_help().split())
    assert "lists its config keys with their defaults" in text
    assert "curate status OUTPUT_ROOT" in text
    assert "--install-completion" in text and "--show-completion" in text
    assert "status" in text


def test_show_completion_prints_a_bash_script_in_a_real_process(tmp_path: Path) -> None:
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = subprocess.run([CURATE, "--show-completion", "bash"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "complete -o default -F _curate_completion curate" in done.stdout
    assert "_CURATE_COMPLETE=complete_bash" in done.stdout


def test_the_completion_script_completes_commands_and_options() -> None:
    """What the installed script asks ``curate`` (``_CURATE_COMPLETE=complete_bash``)."""
    def complete(words: str) -> list[str]:
        env = {"_CURATE_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - 1)}
        result = CliRunner().invoke(app, [], env=env, prog_name="curate")
        assert result.exit_code == 0, result.output
        return result.output.split()

    assert complete("curate st") == ["status"]
    assert complete("curate decon") == ["decontaminate"]
    assert {"--config", "--set"} <= set(complete("curate filter --"))
