"""The shared-nothing cluster (``_harness.py``) as pytest fixtures.

``shared_nothing_cluster``: one for the package's tests (per test process under
pytest-xdist), started on first use and ended after the package's last test (its process
groups killed, never ``ray stop``). ``cluster``: the same, with
any worker node a test killed restarted first. Where a private mount namespace cannot
be made (not root), the tests that use them skip, saying why.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.cluster._harness import SharedNothingCluster, namespace_refusal, short_root

pytest.importorskip("moto", reason="moto[server] (the test extra) runs the local S3 server")
pytest.importorskip("s3fs", reason="s3fs reads and writes s3:// URLs")


@pytest.fixture(scope="package")
def shared_nothing_cluster() -> Iterator[SharedNothingCluster]:
    why = namespace_refusal()
    if why is not None:
        pytest.skip(f"the shared-nothing cluster needs a private mount namespace: {why}")
    cluster = SharedNothingCluster(short_root())
    try:
        cluster.start()
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in cluster.timings.items())
        print(f"\nshared-nothing cluster up in {cluster.started_in:.1f} s ({parts}; "
              f"{cluster.address}, S3 {cluster.endpoint})")
        yield cluster
    finally:
        t0 = time.monotonic()
        cluster.close()
        print(f"\nshared-nothing cluster down in {time.monotonic() - t0:.1f} s")


@pytest.fixture
def cluster(shared_nothing_cluster: SharedNothingCluster) -> SharedNothingCluster:
    """The session's cluster with all its worker nodes up."""
    shared_nothing_cluster.heal()
    return shared_nothing_cluster
