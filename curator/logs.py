"""Logs a person sees without setting anything up.

A plain script that runs a pipeline (no ``logging.basicConfig``) would see none of the
engine's INFO lines: Python's last-resort handler shows WARNING and above only. So
while :meth:`curator.pipeline.Pipeline.run` runs, and only when nobody has configured
logging, the ``curator`` logger gets a handler that prints INFO and above on stderr.

This breaks the library convention (a library adds only a ``NullHandler``) on
purpose, and as narrowly as possible:

- Any configuration of logging wins, and then nothing is added: a handler on the root
  logger (``logging.basicConfig``, ``logging.config``, Prefect's logging setup, pytest)
  or a handler on ``curator`` or one of its children (``flows.prefect_logging`` routes
  the engine's records to the Prefect run logger that way). To silence the engine in a
  script that configures nothing, add ``logging.NullHandler()`` to ``curator``.
- The handler exists only for the duration of the run (concurrent or nested runs share
  one), so configuring logging after a run never prints a line twice.
- It stays silent for a record emitted after logging was configured during the run
  (a handler appeared on the root or on ``curator``), so that cannot double a line
  either.
- The ``curator`` logger's level is set to INFO for the run only if it has none
  (``NOTSET``); a level set by the user is kept.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

LOGGER = "curator"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATEFMT = "%H:%M:%S"

_lock = threading.Lock()
_active: _DefaultHandler | None = None
_users = 0
_set_level = False


class _DefaultHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """INFO and above to the current ``sys.stderr``, while logging is unconfigured."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.INFO)
        self.setFormatter(logging.Formatter(FORMAT, DATEFMT))

    @property  # type: ignore[override]
    def stream(self) -> TextIO:  # whatever sys.stderr is now (a redirect, pytest's capture)
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass

    def filter(self, record: logging.LogRecord) -> bool:  # type: ignore[override]
        if logging.getLogger().handlers or any(
            h is not self for h in logging.getLogger(LOGGER).handlers
        ):
            return False  # configured since the run began: that configuration prints it
        return bool(super().filter(record))


def logging_configured() -> bool:
    """True if the root logger or ``curator`` (or a child of it) has a handler."""
    if logging.getLogger().handlers:
        return True
    loggers = dict(logging.Logger.manager.loggerDict)  # one copy: other threads may add
    return any(
        isinstance(lg, logging.Logger) and bool(lg.handlers)
        for name, lg in loggers.items()
        if name == LOGGER or name.startswith(LOGGER + ".")
    )


@contextmanager
def default_stderr_logging() -> Iterator[bool]:
    """For one run: show the engine's INFO lines on stderr if logging is unconfigured.

    Yields whether the default handler is active for this run.
    """
    global _active, _users, _set_level
    engine = logging.getLogger(LOGGER)
    with _lock:
        if _active is None:
            if logging_configured():
                joined = False
            else:
                _active = _DefaultHandler()
                engine.addHandler(_active)
                _set_level = engine.level == logging.NOTSET
                if _set_level:
                    engine.setLevel(logging.INFO)
                joined = True
        else:
            joined = True
        if joined:
            _users += 1
    try:
        yield joined
    finally:
        if joined:
            with _lock:
                _users -= 1
                if _users == 0 and _active is not None:
                    engine.removeHandler(_active)
                    if _set_level and engine.level == logging.INFO:
                        engine.setLevel(logging.NOTSET)
                    _active, _set_level = None, False
