"""A run on Ray without an address starts a Ray of its own (``ray.init(address="local")``):
a ``ray_current_cluster`` that an earlier ``ray start`` left behind never breaks it
(issue #29, item 13). And the cluster a process is connected to is recognised however
its address is spelt (issue #26: ``127.0.0.1:port`` against Ray's ``<node ip>:port``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.steps.registry import STEPS
from executors.ray import same_address
from tests.chaos._harness import Case

INGEST = next(spec for spec in STEPS if spec.key == "ingest")


@pytest.mark.parametrize(("wanted", "connected"), [
    ("127.0.0.1:6379", "10.1.2.3:6379"),  # joined at loopback, reported at the node's IP
    ("localhost:6379", "10.1.2.3:6379"),
    ("[::1]:6379", "10.1.2.3:6379"),
    ("localhost:6379", "127.0.0.1:6379"),
    ("10.1.2.3:6379", "10.1.2.3:6379"),
])
def test_one_cluster_spelt_two_ways_is_the_same(wanted: str, connected: str) -> None:
    assert same_address(wanted, connected, node_ip="10.1.2.3")


@pytest.mark.parametrize(("wanted", "connected"), [
    ("127.0.0.1:6380", "10.1.2.3:6379"),  # another port
    ("198.51.100.7:6379", "10.1.2.3:6379"),  # another host
    ("127.0.0.1:6379", "198.51.100.7:6379"),  # loopback is this node, not that one
])
def test_another_cluster_is_not_the_same(wanted: str, connected: str) -> None:
    assert not same_address(wanted, connected, node_ip="10.1.2.3")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_stale_ray_current_cluster_does_not_break_a_local_run(tmp_path: Path) -> None:
    """``ray start`` records its head in ``<RAY_TMPDIR>/ray/ray_current_cluster``; Ray's
    ``ray.init()`` joins it, so with the head gone every ``executor: ray`` command used to
    fail: ``ValueError: When connecting to an existing cluster, object_store_memory must
    not be provided``. The file is the test's own (RAY_TMPDIR of the run), not the
    machine's."""
    case = Case(INGEST, "ray", tmp_path, workers=1)
    try:
        assert case.ray_tmp is not None
        address_file = case.ray_tmp / "ray" / "ray_current_cluster"
        address_file.parent.mkdir(parents=True)
        address_file.write_text("198.51.100.7:59519\n")  # TEST-NET-2: no head there
        with case.proc("stale") as proc:
            code = proc.wait(600)
        assert code == 0, proc.stderr()[-3000:]
        assert "Traceback" not in proc.stderr()
        assert INGEST.is_complete(case.cfg)
        assert address_file.read_text() == "198.51.100.7:59519\n"  # left as it was
    finally:
        case.close()
