"""A two-node Ray cluster (head + one worker node) writes the same bytes as the process pool."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.integration._support import Proc, make_inputs, ray_env, script

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_two_node_cluster_matches_local_executor(tmp_path: Path, ray_tmp: Path) -> None:
    make_inputs(tmp_path / "input", 8)
    argv = [sys.executable, script("cluster_run.py"), "--workdir", str(tmp_path),
            "--ray-tmp", str(ray_tmp)]
    with Proc(argv, tmp_path / "logs", "cluster", env=ray_env(ray_tmp)) as proc:
        code = proc.wait(120)
        assert code == 0, proc.stderr()[-5000:]
        summary = json.loads(proc.stdout().strip().splitlines()[-1])

    assert summary["ray_completed"] == summary["local_completed"] == 8
    nodes = summary["nodes"]
    assert len(set(nodes)) == 2
    # Every partition ran on a node of the cluster, and both nodes took some.
    assert set(summary["ran_on"]) == set(nodes), summary
    assert summary["local_ran_on"] == [""] * 8

    ray_out, local_out = tmp_path / "ray-out", tmp_path / "local-out"
    names = sorted(os.listdir(local_out))
    assert len(names) == 8 and sorted(os.listdir(ray_out)) == names
    for name in names:
        assert (ray_out / name).read_bytes() == (local_out / name).read_bytes(), name
