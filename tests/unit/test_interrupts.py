"""One signal handler for a whole run (:class:`curator.interrupts.Interrupts`): it raises
where a signal lands, records it while the reports are written, and lets an engine pass
drain; the pass uses the run's handler instead of nesting one of its own."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

from curator.errors import CuratorError
from curator.interrupts import Interrupted, Interrupts


def send(sig: int) -> None:
    os.kill(os.getpid(), sig)
    for _ in range(1000):  # the handler runs at the next bytecode, in here
        pass


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_raises_its_interruption_where_it_lands(sig: int) -> None:
    with Interrupts() as interrupts, pytest.raises(CuratorError) as err:
        send(sig)
    assert err.value.error_id == f"interrupted_{signal.Signals(sig).name.lower()}"
    assert err.value.exit_code == 128 + sig
    assert interrupts.received == sig


def test_the_previous_handlers_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with Interrupts():
        assert Interrupts.installed() is not None
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert Interrupts.installed() is None


def test_a_pass_drains_on_the_runs_handler_and_a_second_signal_counts() -> None:
    with Interrupts() as run:
        handler = signal.getsignal(signal.SIGTERM)
        with Interrupts.draining() as interrupts:
            assert interrupts is run  # no second handler nested in the first
            assert signal.getsignal(signal.SIGTERM) == handler
            send(signal.SIGTERM)  # recorded: the engine starts no new partition
            assert (interrupts.received, interrupts.count) == (signal.SIGTERM, 1)
            send(signal.SIGINT)  # the second: the engine abandons
            assert (interrupts.received, interrupts.count) == (signal.SIGTERM, 2)
        with pytest.raises(CuratorError) as err:
            run.check()  # between two passes, the run ends as the first signal asked
    assert err.value.error_id == "interrupted_sigterm"


def test_a_pass_outside_a_run_installs_a_handler_for_itself() -> None:
    before = signal.getsignal(signal.SIGINT)
    with Interrupts.draining() as interrupts:
        assert Interrupts.installed() is interrupts
        send(signal.SIGINT)
        assert interrupts.received == signal.SIGINT
    assert signal.getsignal(signal.SIGINT) == before


def test_while_reports_are_written_a_signal_is_recorded_not_raised() -> None:
    with Interrupts() as interrupts:
        with interrupts.deferred():
            send(signal.SIGINT)
            interrupts.check()  # deferred: nothing raised
        assert interrupts.received == signal.SIGINT
        with pytest.raises(CuratorError):
            interrupts.check()


def test_a_commands_signal_is_not_an_exception_a_library_could_swallow() -> None:
    """The entry point's handler (outside a step's run) raises a ``BaseException``:
    ``except Exception`` in a library (pydantic, Prefect's plugin loading) lets it pass."""
    with pytest.raises(Interrupted) as caught, Interrupts(command=True):
        try:
            send(signal.SIGTERM)
        except Exception:  # what a library does around its own work
            pytest.fail("swallowed")
    assert caught.value.error.error_id == "interrupted_sigterm"
    assert caught.value.error.exit_code == 128 + signal.SIGTERM


def test_a_run_does_not_begin_after_a_signal_its_command_swallowed() -> None:
    """A signal whose raise a library swallowed before the step began (its command's
    handler recorded it) ends the step's run as it enters, not after the whole run."""
    with Interrupts(command=True):
        with contextlib.suppress(BaseException):  # as a careless finalizer or library
            send(signal.SIGINT)
        with pytest.raises(CuratorError) as err, Interrupts():
            pytest.fail("the run began")
    assert err.value.error_id == "interrupted_sigint"
