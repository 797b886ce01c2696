"""The step contract, tested once over every registered step (docs/architecture.md).

- a run that fails after its output is touched leaves the standard artifacts: the
  completion artifact with ``error`` and a producer block without ``completed_at``;
- a refusal leaves the output directory as it was;
- a run killed (SIGKILL) between two phases resumes to the same bytes;
- a changed config never resumes another configuration's partial results;
- a finished step is skipped by ``curate flow``, and rerun when its config changes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from curator.config import validate_config
from curator.errors import CuratorError
from curator.steps.base import StepRun
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec
from tests.steps._worlds import data_files, make_world

REPO = Path(__file__).resolve().parents[2]
PARAMS = [pytest.param(spec, id=spec.key) for spec in STEPS]


def run(spec: StepSpec, cfg: dict[str, Any]) -> dict[str, Any]:
    return spec.run(validate_config(spec.config, cfg))


def fail_after_first_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    original = StepRun.phase

    def phase(self: StepRun, *args: Any, **kwargs: Any) -> Any:
        original(self, *args, **kwargs)
        raise CuratorError("injected_failure", "a failure after the first phase")

    monkeypatch.setattr(StepRun, "phase", phase)


@pytest.mark.parametrize("spec", PARAMS)
def test_a_failed_run_leaves_its_artifacts_with_the_error(
    spec: StepSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(spec.key, spec.input_key, tmp_path)
    cfg = world.config(tmp_path / "out", tmp_path / "ckpt")
    fail_after_first_phase(monkeypatch)
    with pytest.raises(CuratorError) as info:
        run(spec, cfg)
    assert info.value.error_id == "injected_failure"
    found = spec.read_result(cfg)  # its model; the asserts read it as written
    assert found is not None, "the completion artifact is written on failure too"
    result = found.dump()
    assert result["error"]["error_id"] == "injected_failure"
    assert result["producer"]["step_id"] == spec.step_id
    assert "completed_at" not in result["producer"]
    assert result["producer"]["config_hash"].startswith("sha256:")
    assert isinstance(result["schema_version"], int)
    assert not spec.is_complete(cfg)
    assert list((tmp_path / "ckpt" / spec.key).rglob("*.mdb")), "kept for a resume"


@pytest.mark.parametrize("spec", PARAMS)
def test_a_completed_run_has_the_one_producer_block(spec: StepSpec, tmp_path: Path) -> None:
    world = make_world(spec.key, spec.input_key, tmp_path)
    cfg = world.config(tmp_path / "out", tmp_path / "ckpt")
    result = run(spec, cfg)
    written = spec.read_result(cfg)
    assert written is not None and result == written.dump()  # the model keeps every key
    assert written.is_complete
    producer = result["producer"]
    assert {"step_id", "tool_revision", "config_hash", "started_at", "completed_at",
            "execution", "resumed_partitions"} <= set(producer)
    assert producer["execution"]["executor"] == "inline"
    assert producer["execution"]["partitions"] > 0
    assert producer["resumed_partitions"] == 0
    assert spec.is_complete(cfg)
    assert "error" not in result or result["error"] is None
    assert not (tmp_path / "ckpt" / spec.key).exists(), "a completed run's checkpoint goes"
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(f".{spec.key}-")]


@pytest.mark.parametrize("spec", PARAMS)
def test_a_refusal_leaves_the_output_as_it_was(spec: StepSpec, tmp_path: Path) -> None:
    world = make_world(spec.key, spec.input_key, tmp_path)
    out = tmp_path / "out"
    run(spec, world.config(out))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    bad = world.config(out, **{spec.input_key: str(tmp_path / "nothing-here" / "*.jsonl")})
    with pytest.raises(CuratorError) as info:
        run(spec, bad)
    assert info.value.exit_code == 2
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


KILLER = """
import os, signal, sys, json
from curator.config import validate_config
from curator.steps.base import StepRun
from curator.steps.registry import BY_KEY
spec = BY_KEY[sys.argv[1]]
cfg = json.loads(sys.argv[2])
original = StepRun.phase
def phase(self, *args, **kwargs):
    result = original(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
StepRun.phase = phase
spec.run(validate_config(spec.config, cfg))
"""


@pytest.mark.parametrize("spec", PARAMS)
def test_a_killed_run_resumes_to_the_same_bytes(spec: StepSpec, tmp_path: Path) -> None:
    world = make_world(spec.key, spec.input_key, tmp_path)
    clean = world.config(tmp_path / "clean")
    run(spec, clean)
    cfg = world.config(tmp_path / "killed", tmp_path / "ckpt")
    proc = subprocess.run([sys.executable, "-c", KILLER, spec.key, json.dumps(cfg)],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert list((tmp_path / "ckpt" / spec.key).rglob("*.mdb"))
    result = run(spec, cfg)
    assert result["producer"]["resumed_partitions"] > 0
    assert spec.is_complete(cfg)
    assert data_files(tmp_path / "killed") == data_files(tmp_path / "clean")


@pytest.mark.parametrize("spec", PARAMS)
def test_a_changed_config_never_resumes(
    spec: StepSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(spec.key, spec.input_key, tmp_path)
    cfg = world.config(tmp_path / "out", tmp_path / "ckpt")
    with monkeypatch.context() as m:
        fail_after_first_phase(m)
        with pytest.raises(CuratorError):
            run(spec, cfg)
    changed = world.config(tmp_path / "out", tmp_path / "ckpt", **world.variant)
    try:
        result = run(spec, changed)
    except CuratorError as exc:  # a step that never overwrites another run's output
        assert exc.error_id.startswith("stale_") and exc.exit_code == 2, exc
        return
    assert result["producer"]["resumed_partitions"] == 0
    fresh = world.config(tmp_path / "fresh", **world.variant)
    run(spec, fresh)
    assert data_files(tmp_path / "out") == data_files(tmp_path / "fresh")
    assert data_files(tmp_path / "out") != {}


@pytest.mark.parametrize("spec", PARAMS)
def test_a_finished_step_is_skipped_by_the_flow(
    spec: StepSpec, tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    world = make_world(spec.key, spec.input_key, tmp_path)
    block = {k: v for k, v in world.config(tmp_path / "unused").items()
             if k not in ("output_dir", "execution")}
    config = {"corpus": {"input": str(world.raw)}, "output_root": str(tmp_path / "root"),
              "steps": {spec.key: {"enabled": True, **block}},
              "execution": {"executor": "inline"}}

    def status(report: dict[str, Any]) -> str:
        return next(s["status"] for s in report["steps"] if s["step_id"] == spec.step_id)

    assert status(curate_flow(config)) == "ok"
    assert status(curate_flow(config)) == "skipped"
    config["steps"][spec.key].update(world.variant)
    try:
        assert status(curate_flow(config)) == "ok"
    except CuratorError as exc:  # a step that never overwrites another run's output
        ids = {p["error_id"] for p in exc.details["problems"]}
        assert ids == {f"stale_{spec.key}_output"}, exc
