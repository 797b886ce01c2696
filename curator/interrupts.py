"""SIGTERM and SIGINT: one handler for a whole run, its engine passes included.

:class:`Interrupts` is installed for a step's run (and by the ``curate`` entry point for
the whole command, :mod:`flows.entry`). Where a signal lands it acts in one of three ways:

- by default it raises ``interrupted_sigterm`` / ``interrupted_sigint``
  (:class:`~curator.errors.CuratorError`), so the step writes its report with the error
  and exits 143 / 130, and the run resumes. (A SIGTERM used to kill the driver outright,
  exit -15 and no report; a SIGINT to surface as a bare ``KeyboardInterrupt``.)
- inside an engine pass (:meth:`Interrupts.draining`, :class:`curator.pipeline.Pipeline`)
  it only records the signal: the engine starts no new partition, waits for the running
  ones and raises the same error; a second signal abandons the running ones.
- while the artifacts are written (:meth:`Interrupts.deferred`) it only records the
  signal: a report is never left half-written by an interrupt. A run whose artifacts
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

# the loggers these lines have always been printed under (stderr shows the name)
_engine_log = logging.getLogger("curator.pipeline")
_step_log = logging.getLogger("curator.steps")

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def interrupted(signum: int) -> CuratorError:
    name = signal.Signals(signum).name
    return CuratorError(f"interrupted_{name.lower()}",
                        f"interrupted by {name}: run the same command again to resume")


class Interrupted(BaseException):
    """A signal outside a step's run (``Interrupts(command=True)``): a ``BaseException``,
    so no library's ``except Exception`` swallows or wraps it (pydantic building a
    model, Prefect loading its plugins) on its way to the entry point, which prints
    :attr:`error` in one line and exits with its code."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.error = interrupted(signum)


class Interrupts:
    """SIGINT and SIGTERM while installed (``with``), in the main thread only (elsewhere
    it does nothing: Python runs signal handlers in the main thread alone).

    A step's run raises :func:`interrupted` (its report records the error); a whole
    command (``command=True``, the entry point's) raises :class:`Interrupted`."""

    def __init__(self, *, command: bool = False) -> None:
        self.command = command
        #: the first signal received, and how many were
        self.received: int | None = None
        self.count = 0
        self._defer = 0
        self._drain = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            outer = Interrupts.installed()
            if outer is not None and outer.received is not None:
                # its raise was swallowed (see check()): this run does not begin
                raise Interrupted(outer.received) if self.command else interrupted(
                    outer.received)
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    @staticmethod
    def installed() -> Interrupts | None:
        """The :class:`Interrupts` whose handler is in place in this process, if any."""
        owner = getattr(signal.getsignal(signal.SIGINT), "__self__", None)
        return owner if isinstance(owner, Interrupts) else None

    def _handle(self, signum: int, frame: object) -> None:
        self.count += 1
        first = self.received is None
        self.received = self.received or signum
        name = signal.Signals(signum).name
        if self._drain:
            if first:
                _engine_log.warning("%s received: starting no new partitions, waiting for "
                                    "running ones (send it again to stop at once)", name)
            return
        if self._defer:
            _step_log.warning("%s received while the reports are written: they are "
                              "finished first", name)
            return
        if first:
            raise Interrupted(signum) if self.command else interrupted(signum)

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

    @classmethod
    @contextlib.contextmanager
    def draining(cls) -> Iterator[Interrupts]:
        """An engine pass: the handler in place (a step's), or one installed for the
        pass, records signals instead of raising; the engine reads :attr:`received`
        (stop starting partitions) and :attr:`count` (a second signal: abandon)."""
        with contextlib.ExitStack() as stack:
            interrupts = cls.installed() if _in_main_thread() else None
            if interrupts is None:
                interrupts = stack.enter_context(cls())
            interrupts._drain += 1
            try:
                yield interrupts
            finally:
                interrupts._drain -= 1


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


__all__ = ["SIGNALS", "Interrupted", "Interrupts", "interrupted"]
