"""SIGTERM and SIGINT for the whole of a step's run, not only inside its engine passes.

Inside :meth:`curator.pipeline.Pipeline.run` the engine's own handler drains: it starts
no new partition, waits for the running ones and raises ``interrupted_sigterm`` /
``interrupted_sigint``. Outside it (the refusal checks, between two phases, merging
statistics) a SIGTERM used to kill the driver outright (exit -15, no report) and a SIGINT
surfaced as a bare ``KeyboardInterrupt`` (``Aborted!``, exit 1). :class:`StepInterrupts`
turns both into the same :class:`~curator.errors.CuratorError` there, so the step writes
its report with the error and exits 143 / 130, and the run resumes.

While the artifacts are written (:meth:`StepInterrupts.deferred`) a signal is only
recorded: a report is never left half-written by an interrupt. A run whose artifacts
are complete when the signal comes is complete; the signal is logged.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from typing import Any

from curator.errors import CuratorError

log = logging.getLogger("curator.steps")

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def interrupted(signum: int) -> CuratorError:
    name = signal.Signals(signum).name
    return CuratorError(f"interrupted_{name.lower()}",
                        f"interrupted by {name}: run the same command again to resume")


class StepInterrupts:
    """Installed for one step run, in the main thread only (elsewhere it does nothing)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._defer = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StepInterrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: object) -> None:
        first = self.received is None
        self.received = self.received or signum
        if self._defer:
            log.warning("%s received while the reports are written: they are finished "
                        "first", signal.Signals(signum).name)
            return
        if first:
            raise interrupted(signum)

    def check(self) -> None:
        """Raise the interruption a signal asked for, if it has not ended the run yet.

        The handler raises where the signal lands; when that is inside a call that
        catches every ``Exception`` (a ``logging`` handler's ``emit`` does, and prints
        "--- Logging error ---"), the raise is swallowed and the run would go on to
        complete. The run base calls this between phases and after the last one."""
        if self.received is not None and not self._defer:
            raise interrupted(self.received)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A section a signal does not interrupt (it is recorded in :attr:`received`)."""
        self._defer += 1
        try:
            yield
        finally:
            self._defer -= 1


__all__ = ["StepInterrupts", "interrupted"]
