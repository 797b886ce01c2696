"""``--config`` naming a directory or a missing file: the message names the path as a path
and says what is wrong with it (#29: "config file in does not exist")."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app


def test_a_directory_is_named_and_called_a_directory(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "in").mkdir()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["ingest", "--config", "in"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: [config_not_found] config file 'in' is a "
                                    "directory, not a YAML file"), result.stderr


def test_a_missing_file_is_named_with_where_it_was_looked_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["subset", "--config", "nope.yaml"])
    assert result.exit_code == 2
    assert f"config file 'nope.yaml' does not exist ({tmp_path / 'nope.yaml'})" \
        in result.stderr


@pytest.mark.parametrize(("name", "said"), [
    ("in", "flow config 'in' is a directory, not a YAML file"),
    ("nope.yaml", "flow config 'nope.yaml' does not exist"),
])
def test_curate_flow_names_its_config_path_too(name: str, said: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "in").mkdir()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["flow", "--config", name])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: [config_not_found] {said}"), result.stderr
