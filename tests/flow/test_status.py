"""``curate status PATH`` (issue 16) on real output roots made by ``curate flow``.

A flow that finished (ingest), one interrupted mid-run (ingest refused the corpus's
duplicates after parsing it: its report has an error and no ``completed_at``, its
checkpoint holds the parsed partitions), one step's output dir, and a directory that
is no output root. The flows run in-process without Prefect (the same plan, report
and artifacts as ``curate flow``: flows/direct.py); ``curate status`` runs as a real
process once, and through the click app otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from curator.errors import CuratorError
from curator.flow.status import root_status
from flows.cli import app
from flows.direct import run_flow_direct
from tests.flow._support import base_config, demo_corpus

CURATE = str(Path(sys.executable).parent / "curate")

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_corpus(tmp_path_factory.mktemp("status") / "raw", docs=60)


def _ingest_only(raw: Path, root: Path, **ingest: Any) -> dict[str, Any]:
    config = base_config(raw, root, profile=False)
    config["steps"]["ingest"].update(ingest)
    return config


@pytest.fixture(scope="module")
def finished(raw: Path) -> Path:
    root = raw.parent / "finished"
    assert run_flow_direct(_ingest_only(raw, root))["status"] == "ok"
    return root


@pytest.fixture(scope="module")
def interrupted(raw: Path) -> tuple[Path, Path]:
    """A flow whose ingest failed after its parse phase: the demo corpus has planted
    duplicates, and ``on_duplicate: refuse`` refuses them once every line is parsed."""
    root = raw.parent / "interrupted"
    config = _ingest_only(raw, root, on_duplicate="refuse")
    config_file = raw.parent / "interrupted.yaml"
    config_file.write_text(yaml.safe_dump(config))
    with pytest.raises(CuratorError) as info:
        run_flow_direct(str(config_file))
    assert info.value.error_id == "duplicate_documents"
    return root, config_file


def _states(status: Any) -> dict[str, str]:
    return {s.key: s.state for s in status.steps}


def _status(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["status", *argv])
    return result.exit_code, result.output


def test_a_finished_flow(finished: Path) -> None:
    status = root_status(finished)
    assert status.kind == "flow" and status.flow_status == "ok"
    states = _states(status)
    assert states["ingest"] == "finished"
    assert set(states.values()) == {"finished", "not_run"}
    ingest = status.steps[0]
    report = json.loads((finished / "ingested" / "ingest_report.json").read_text())
    assert ingest.completed_at == report["producer"]["completed_at"]
    assert ingest.enabled is True and status.steps[1].enabled is False
    assert not status.waiting_for_approval
    assert any("every enabled step is done" in n for n in status.notes)
    # what is left: enable later steps and run the flow again
    assert status.next_commands == [
        "curate flow --config FLOW.yaml  (after enabling any of: profile, filter, audit, "
        "dedup, decontamination, subset)"]
    code, out = _status(str(finished), "--config", "flow.yaml")
    assert code == 0
    assert "ingest           finished   completed " + ingest.completed_at in out
    assert "next: curate flow --config flow.yaml" in out


def test_a_flow_interrupted_mid_step_is_resumable_from_its_checkpoint(
        interrupted: tuple[Path, Path]) -> None:
    root, config_file = interrupted
    report = json.loads((root / "ingested" / "ingest_report.json").read_text())
    assert not report["producer"].get("completed_at")  # started, not finished
    plan = json.loads((root / "flow_plan.json").read_text())
    assert plan["config_file"] == str(config_file.resolve())
    status = root_status(root)  # the next command names the config the plan records
    ingest = status.steps[0]
    assert ingest.state == "resumable"
    assert ingest.checkpoint == str(root / "checkpoints" / "ingest")
    assert ingest.checkpoint_files > 0
    assert ingest.error and ingest.error["error_id"] == "duplicate_documents"
    assert status.flow_status == "failed"
    assert status.next_commands == [
        f"curate flow --config {config_file}  (finished steps are skipped; ingest resumes "
        "from the checkpoint)"]
    # the same from a real process: exit 0, the states and the next command
    done = subprocess.run([CURATE, "status", str(root)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"ingest           resumable  checkpoint {root / 'checkpoints' / 'ingest'}; " \
           "[duplicate_documents]" in done.stdout
    assert "profile          not_run      (disabled in the plan)" in done.stdout
    assert f"next: curate flow --config {config_file}  (finished steps are skipped; " \
           "ingest resumes from the checkpoint)" in done.stdout


def test_without_the_checkpoint_the_failed_step_starts_afresh(
        interrupted: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(interrupted[0], root)
    shutil.rmtree(root / "checkpoints")
    status = root_status(root)
    assert _states(status)["ingest"] == "failed"
    assert status.next_commands == [f"curate flow --config {interrupted[1]}  (finished "
                                    "steps are skipped; ingest runs)"]


def test_one_steps_output_dir(finished: Path, interrupted: tuple[Path, Path]) -> None:
    status = root_status(finished / "ingested")
    assert status.kind == "step" and _states(status) == {"ingest": "finished"}
    assert status.next_commands == []
    code, out = _status(str(interrupted[0] / "ingested"))
    assert code == 0
    assert "output dir of curate ingest" in out and "failed" in out
    assert "next: curate ingest --config CONFIG.yaml" in out


def test_json_output(finished: Path) -> None:
    code, out = _status(str(finished), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["kind"] == "flow" and data["steps"][0]["state"] == "finished"


def test_an_empty_dir_or_a_missing_path_is_not_an_output_root(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "absent"):
        with pytest.raises(CuratorError) as info:
            root_status(path)
        assert info.value.error_id == "not_an_output_root"
        code, out = _status(str(path))
        assert code == 2
        assert "not_an_output_root" in out
    assert list(tmp_path.iterdir()) == []  # status writes nothing


def test_a_step_whose_output_dir_is_locked_by_a_live_run_is_running(
        interrupted: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    from curator.locking import output_lock

    root = tmp_path / "copy"
    shutil.copytree(interrupted[0], root)
    lock = output_lock(root / "ingested")  # what a run holds from start to end
    lock.acquire()
    try:
        status = root_status(root)
        assert _states(status)["ingest"] == "running"
        assert status.next_commands[0].startswith("none yet: a step is running")
    finally:
        lock.release()
    assert _states(root_status(root))["ingest"] == "resumable"


def test_after_the_measure_run_the_next_command_is_the_approval(raw: Path) -> None:
    """Run 1 of the two-run flow (profile; ingest off to keep it small): the candidate
    policy is there, no approved policy: approve, then run the flow with the filter."""
    root = raw.parent / "measured"
    config = base_config(raw, root, ingest=False)
    config["steps"]["profile"].update(signals=["word_count", "stopword_ratio"],
                                      max_total_docs=40)
    assert run_flow_direct(config)["status"] == "ok"
    status = root_status(root, flow_config="measure.yaml")
    assert _states(status)["profile"] == "finished"
    assert status.waiting_for_approval
    candidate = root / "profile" / "candidate_policies.yaml"
    policy = root / "policy" / "approved_policy.yaml"
    assert candidate.is_file() and not policy.exists()
    assert status.next_commands[0] == (
        f"curate approve --candidate {candidate} --out {policy} --approver NAME "
        "--evidence TEXT --set SIGNAL=VALUE ...")
    assert status.next_commands[1].startswith("curate flow --config measure.yaml  (profile "
                                              "off, steps.filter.enabled: true")
    assert any(str(root / "profile" / "profile_summary.md") in n for n in status.notes)


def test_a_root_with_only_a_dry_run_plan(raw: Path) -> None:
    root = raw.parent / "planned"
    config_file = raw.parent / "planned.yaml"
    config_file.write_text(yaml.safe_dump(_ingest_only(raw, root)))
    run_flow_direct(str(config_file), plan=True)
    status = root_status(root)
    assert set(_states(status).values()) == {"not_run"}
    assert not status.run_unfinished
    assert any("--plan (a dry run)" in n for n in status.notes)
    assert status.next_commands == [f"curate flow --config {config_file.resolve()}  "
                                    "(finished steps are skipped; ingest runs)"]
