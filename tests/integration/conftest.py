"""Fixtures shared by the integration tests (real subprocesses, LMDB files and Ray)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration._support import FILES, outputs_by_input, rmtree_quiet, run_demo, short_tmp


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The demo's output of one uninterrupted run (local pool), keyed by input file name."""
    workdir = tmp_path_factory.mktemp("reference") / "wd"
    code, log = run_demo(workdir, executor="local", tag="reference")
    assert code == 0, log
    out = outputs_by_input(workdir)
    assert len(out) == FILES
    return out


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    """A short temp root for the Ray instances that subprocesses start (RAY_TMPDIR)."""
    path = short_tmp()
    try:
        yield path
    finally:
        rmtree_quiet(path)


@pytest.fixture(scope="session")
def ray_address(ray_local: None) -> str:
    """The GCS address of the session's Ray, for subprocesses that join it (RAY_ADDRESS)."""
    import ray

    return ray.get_runtime_context().gcs_address
