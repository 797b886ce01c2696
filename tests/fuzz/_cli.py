"""``curate`` in process for the command-line properties (tests/fuzz/test_config_values.py,
tests/fuzz/test_artifact_values.py): run it, and check what every run must show."""

from __future__ import annotations

import os
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

#: no Prefect (its temporary server costs seconds a command), no colour, nothing online
ENV = {"CURATE_PREFECT": "never", "NO_COLOR": "1", "HF_HUB_OFFLINE": "1",
       "TRANSFORMERS_OFFLINE": "1"}
ERROR_LINE = re.compile(r"error: \[([a-z0-9_]+)\]")


@dataclass
class Outcome:
    exit_code: int
    output: str  # stdout and stderr, as a terminal shows them
    exception: BaseException | None

    @property
    def error_ids(self) -> list[str]:
        return ERROR_LINE.findall(self.output)


def invoke(argv: list[str], cwd: Path) -> Outcome:
    """``curate ARGV`` in process, in ``cwd`` (relative paths stay in the sandbox)."""
    from flows.cli import app

    here = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, argv, env=ENV)
    finally:
        os.chdir(here)
    return Outcome(result.exit_code, result.output, result.exception)


def assert_refused_or_ran(outcome: Outcome, what: str) -> None:
    """Exit 0-3; an error id on a non-zero exit, never ``internal_error``; no traceback
    printed, no exception escaped (CliRunner catches what would be one)."""
    exc = outcome.exception
    if exc is not None and not isinstance(exc, SystemExit):
        tb = "".join(traceback.format_exception(exc))
        pytest.fail(f"{what}: an exception escaped the command:\n{tb}")
    assert outcome.exit_code in {0, 1, 2, 3}, (what, outcome.exit_code, outcome.output)
    assert "Traceback" not in outcome.output, (what, outcome.output)
    if outcome.exit_code:
        assert outcome.error_ids, (what, "a non-zero exit without an error id",
                                   outcome.output[-2000:])
        assert "internal_error" not in outcome.error_ids, (what, outcome.output[-2000:])
