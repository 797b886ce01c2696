"""SIGTERM and SIGINT for every registered step, sent to the run's whole process group
(as a terminal's Ctrl+C or a scheduler's stop would): the run drains within a bounded
time, writes its report with the error and without ``completed_at``, exits 143 / 130,
and the same command resumes to the bytes of a clean run.

``make test`` runs a fixed sample (the first step with SIGTERM, the last with SIGINT);
``make chaos`` (``CURATE_CHAOS_FULL=1``) runs every step with both signals.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from curator.config import validate_config
from curator.steps.registry import STEPS
from tests.chaos._harness import Case, leftovers
from tests.integration._support import Proc
from tests.steps._worlds import data_files

FULL = os.environ.get("CURATE_CHAOS_FULL") == "1"
SAMPLE = {(STEPS[0].key, signal.SIGTERM), (STEPS[-1].key, signal.SIGINT)}
DRAIN_SECONDS = 60  # the bound: a drained run ends within this after the signal

pytestmark = pytest.mark.timeout(600)

CASES = [pytest.param(spec, sig, id=f"{spec.key}-{sig.name}",
                      marks=() if FULL or (spec.key, sig) in SAMPLE else pytest.mark.skip(
                          reason="the full matrix runs in make chaos (CURATE_CHAOS_FULL=1)"))
         for spec in STEPS for sig in (signal.SIGTERM, signal.SIGINT)]


def stop_when_started(proc: Proc, ckpt: Path, timeout: float = 120) -> None:
    """SIGSTOP the group once the run's checkpoint exists (its first pass has begun):
    the signal is then sent to a run that is surely inside its work."""
    deadline = time.monotonic() + timeout
    while not any(ckpt.rglob("*.mdb")):
        assert proc.poll() is None, f"ended before its first pass\n{proc.stderr()}"
        assert time.monotonic() < deadline, "no checkpoint"
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGSTOP)


@pytest.mark.parametrize(("spec", "sig"), CASES)
def test_a_signal_drains_reports_and_resumes(spec, sig, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    case = Case(spec, "local", tmp_path)
    clean = case.world.config(tmp_path / "clean")
    spec.run(validate_config(spec.config, clean))
    with case.proc("signalled") as proc:
        stop_when_started(proc, case.ckpt)
        os.killpg(proc.pid, sig)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGCONT)
        code = proc.wait(DRAIN_SECONDS + 60)
        drained = time.monotonic() - sent
    assert code == 128 + sig, proc.stderr()[-3000:]
    assert drained < DRAIN_SECONDS
    assert "Traceback" not in proc.stderr()
    found = spec.read_result(case.cfg)  # its model; the asserts read it as written
    result = found.dump() if found is not None else None
    assert result is not None, "the report is written on an interrupt"
    assert result["error"]["error_id"] == f"interrupted_{sig.name.lower()}"
    assert "completed_at" not in result["producer"]
    assert not spec.is_complete(case.cfg)
    with case.proc("resumed") as proc:
        assert proc.wait(300) == 0, proc.stderr()[-3000:]
    assert spec.is_complete(case.cfg)
    assert data_files(case.out) == data_files(tmp_path / "clean")
    assert leftovers(case.out) == []


BETWEEN_PHASES = """
import os, signal, sys
from flows.cli import main
from curator.steps.base import StepRun
original = StepRun.phase
def phase(self, *args, **kwargs):
    result = original(self, *args, **kwargs)
    os.kill(os.getpid(), int(os.environ["CHAOS_SIGNAL"]))  # outside the engine's pass
    return result
StepRun.phase = phase
sys.argv = ["curate", *sys.argv[1:]]
main()
"""


BETWEEN_SAMPLE = {(STEPS[0].key, signal.SIGTERM)}
BETWEEN_CASES = [
    pytest.param(spec, sig, id=f"{spec.key}-{sig.name}",
                 marks=() if FULL or (spec.key, sig) in BETWEEN_SAMPLE else pytest.mark.skip(
                     reason="the full matrix runs in make chaos (CURATE_CHAOS_FULL=1)"))
    for spec in STEPS for sig in (signal.SIGTERM, signal.SIGINT)]


@pytest.mark.parametrize(("spec", "sig"), BETWEEN_CASES)
def test_a_signal_between_two_passes_is_an_interrupt_with_a_report(  # type: ignore[no-untyped-def]
        spec, sig, tmp_path: Path) -> None:
    """Outside the engine's passes a SIGTERM used to kill the driver (exit -15, no
    report) and a SIGINT to end as click's ``Aborted!`` (exit 1)."""
    import sys

    case = Case(spec, "local", tmp_path)
    argv = [sys.executable, "-c", BETWEEN_PHASES, spec.command_name,
            "--config", str(case.config_path)]
    env = {"CURATE_PREFECT": "never", "CHAOS_SIGNAL": str(int(sig))}
    with Proc(argv, case.logs, "between", env=env) as proc:
        assert proc.wait(300) == 128 + sig, proc.stderr()[-3000:]
    found = spec.read_result(case.cfg)  # its model; the asserts read it as written
    result = found.dump() if found is not None else None
    assert result is not None and "completed_at" not in result["producer"]
    assert result["error"]["error_id"] == f"interrupted_{sig.name.lower()}"
    with case.proc("resumed") as proc:
        assert proc.wait(300) == 0, proc.stderr()[-3000:]
    assert spec.is_complete(case.cfg)
    done = spec.read_result(case.cfg)
    assert done is not None and done.producer is not None
    assert (done.producer.resumed_partitions or 0) > 0
