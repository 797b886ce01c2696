"""Hermetic, quiet test session: one Prefect API server and one small Ray, both lazy,
per test process (``make test`` runs two, pytest-xdist: each has its own of both).

Environment is set before prefect or ray is imported (see
shared notes "A hermetic, quiet pytest setup"). Tests that need a server or Ray
ask for the ``prefect_api`` or ``ray_local`` fixture; everything else runs
without either.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from curator_testing import hermetic_env, small_ray_kwargs

REPO = Path(__file__).resolve().parents[1]
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="curate-tests-"))
_RAY_TMP = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))  # AF_UNIX paths must stay short

_ENV = {**hermetic_env(_SESSION_DIR), "CURATE_TEST_RAY_TMP": str(_RAY_TMP)}
os.environ.update(_ENV)
# Subprocesses started by tests import the project from this checkout.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)
    shutil.rmtree(_RAY_TMP, ignore_errors=True)


@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """One real Prefect API server (uvicorn on 127.0.0.1) for the whole session."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        temporary_settings,
    )

    server = SubprocessASGIServer()
    server.start(timeout=120)
    os.environ["PREFECT_API_URL"] = server.api_url  # inherited by spawned workers
    try:
        with temporary_settings(
            {PREFECT_API_URL: server.api_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
        ):
            yield server.api_url
    finally:
        _flush_prefect_clients()
        server.stop()
        os.environ.pop("PREFECT_API_URL", None)


def _flush_prefect_clients() -> None:
    try:
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=5)
        EventsWorker.drain_all(timeout=5)
    except Exception:
        pass


def ray_init_kwargs(num_cpus: int = 2) -> dict:
    """The small local Ray the notes recommend, bound to loopback, short temp dir."""
    return small_ray_kwargs(_RAY_TMP, num_cpus)


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    """One small local Ray for the session; RayExecutor reuses it and leaves it running."""
    import ray

    if not ray.is_initialized():
        ray.init(**ray_init_kwargs())
    yield
    ray.shutdown()


@pytest.fixture
def python() -> str:
    return sys.executable
