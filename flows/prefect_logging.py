"""Route the engine's standard-library log records to the Prefect run logger."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from prefect import get_run_logger


class _RunLoggerHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.run_logger = get_run_logger()

    def emit(self, record: logging.LogRecord) -> None:
        self.run_logger.log(record.levelno, record.getMessage())


@contextmanager
def engine_logs_to_prefect(level: int = logging.INFO) -> Iterator[None]:
    """While active, ``curator.*`` log records also go to the current run's logger."""
    handler = _RunLoggerHandler()
    engine_log = logging.getLogger("curator")
    previous, propagate = engine_log.level, engine_log.propagate
    engine_log.addHandler(handler)
    engine_log.setLevel(min(previous or level, level))
    engine_log.propagate = False  # the run logger prints it already
    try:
        yield
    finally:
        engine_log.removeHandler(handler)
        engine_log.setLevel(previous)
        engine_log.propagate = propagate
