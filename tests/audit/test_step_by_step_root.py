"""The README's whole-root audit command on a root built one step at a time (issue 29):
no ``flow_plan.json``, so the reference containment needs is derived from the filter's
``run_manifest.json`` (``input.glob``, its fields, its rejected dir), not refused as
``containment_needs_a_reference``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.audit._roots import build_root


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_root(tmp_path_factory.mktemp("steps") / "demo-run")


def test_the_readmes_audit_command_passes(root: Path) -> None:
    from flows.cli import app

    assert not (root / "flow_plan.json").exists()
    out = root / "audit-all"
    # the README's command (and the Makefile's demo target), on this root
    result = CliRunner().invoke(app, [
        "audit", "--set", f"output_root={root}", "--set", f"output_dir={out}",
        "--set", "mode=all", "--set", "comparison_fields=[id, text]"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "audit_report.json").read_text())
    assert report["passed"]
    # the reference is what the filter read, found through its manifest
    assert report["containment"]["contained"] and report["containment"]["verifiable"]
    assert report["containment"]["reference"]["rows"] == 300
    assert report["accounting"]["available"] and report["accounting"]["by_id"]
    assert report["policy"]["checked"] and report["policy"]["agrees"]
    assert {"decontamination", "subset", "parquet:subset"} <= set(report["steps"])


def test_a_key_the_command_sets_wins_over_the_manifest(root: Path, tmp_path: Path) -> None:
    from flows.cli import app

    result = CliRunner().invoke(app, [
        "audit", "--set", f"output_root={root}", "--set", f"output_dir={tmp_path / 'a'}",
        "--set", f"reference_glob={root / 'filtered_jsonl'}", "--set", "mode=all",
        "--set", "comparison_fields=[id, text]"])
    report = json.loads((tmp_path / "a" / "audit_report.json").read_text())
    # the filter's output as the reference: its input is not what it read
    assert report["containment"]["reference"]["rows"] == report["target"]["row_count"]
    assert result.exit_code == 1  # the record accounting no longer balances
