"""A SIGINT or SIGTERM whose raise lands inside a logging call is not lost.

The step's signal handler raises where the signal lands; ``logging`` catches every
``Exception`` a handler's ``emit`` raises (it prints "--- Logging error ---"), so a signal
arriving while the driver logs used to be swallowed and the run went on to exit 0
(seen once in CI: tests/chaos/test_signals.py, subset, SIGINT). The run base now checks
between phases and after the last (:meth:`curator.interrupts.Interrupts.check`)."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.interrupts import Interrupts
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo import generate_demo_corpus
from tests.steps._worlds import KEYS


class SignalWhileLogging(logging.StreamHandler):
    """Sends this process ``sig`` from inside its first ``emit`` (in ``flush``, which
    ``StreamHandler.emit`` calls inside its ``except Exception``)."""

    def __init__(self, sig: int) -> None:
        super().__init__()
        self.sig = sig
        self.sent = False

    def flush(self) -> None:
        super().flush()
        if not self.sent:
            self.sent = True
            os.kill(os.getpid(), self.sig)
            for _ in range(1000):  # the handler runs at the next bytecode, in here
                pass


def test_check_raises_the_interruption_a_logging_call_swallowed() -> None:
    log = logging.getLogger("tests.swallowed")
    handler = SignalWhileLogging(signal.SIGINT)
    log.addHandler(handler)
    try:
        with Interrupts() as interrupts:
            log.warning("a line the signal lands in")  # swallowed: logging prints it
            assert handler.sent and interrupts.received == signal.SIGINT
            with pytest.raises(CuratorError) as err:
                interrupts.check()
    finally:
        log.removeHandler(handler)
    assert err.value.error_id == "interrupted_sigint"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_step_whose_signal_landed_in_a_log_line_ends_interrupted(
        sig: int, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    generate_demo_corpus(raw, docs=60, seed=7)
    pipeline_log = logging.getLogger("curator.pipeline")
    handler = SignalWhileLogging(sig)
    pipeline_log.addHandler(handler)
    old_level = pipeline_log.level
    pipeline_log.setLevel(logging.INFO)
    try:
        with pytest.raises(CuratorError) as err:
            run_ingest(IngestConfig(**KEYS["ingest"][0], input=str(raw),
                                    output_dir=str(tmp_path / "out"),
                                    execution={"executor": "inline",
                                               "checkpoint_path": str(tmp_path / "ck")}))
    finally:
        pipeline_log.removeHandler(handler)
        pipeline_log.setLevel(old_level)
    assert handler.sent
    assert err.value.error_id == f"interrupted_{signal.Signals(sig).name.lower()}"
    report = (tmp_path / "out" / "ingest_report.json").read_text()
    assert '"completed_at"' not in report.split('"producer"', 1)[1].split("}", 1)[0]
