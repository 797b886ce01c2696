"""The loss of a Ray worker node mid-run: a two-node local cluster
(``ray.cluster_utils.Cluster``, tests/deployments/_ray_cluster.py), a step run by
``curate <command>`` joined to it, and the worker node removed (raylet and workers
killed, not gracefully) while it runs one of the step's partitions. Expected: the run
completes, or fails cleanly (``partition_failed``, its report without ``completed_at``)
and the same command on the remaining node resumes; either way the output is the clean
run's, byte for byte. About 2 minutes on the 2-core machine: behind
``CURATE_CHAOS_FULL=1`` (``make chaos``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from curator.steps.registry import BY_KEY
from tests.chaos._harness import Case, comparable_files, leftovers, record_ids, reports
from tests.integration._support import ray_env, short_tmp

pytestmark = [pytest.mark.timeout(900), pytest.mark.skipif(
    os.environ.get("CURATE_CHAOS_FULL") != "1",
    reason="two-node Ray cluster, ~2 min: CURATE_CHAOS_FULL=1 (make chaos)")]

SCRIPT = Path(__file__).parents[1] / "deployments" / "_ray_cluster.py"


def running_on(raylets: list[int]) -> int:
    """Ray workers of the node whose raylet is one of ``raylets`` (its children) that
    execute a partition now (a worker's title is its task's while it runs one)."""
    count = 0
    for p in psutil.process_iter(["cmdline", "ppid"]):
        cmd = p.info["cmdline"] or []
        count += bool(cmd and cmd[0].startswith("ray::_ray_run")
                      and p.info["ppid"] in raylets)
    return count


def without_execution(found: dict) -> dict:
    """Reports without the executor block: the rerun ran on one node, not two."""
    def strip(v):  # type: ignore[no-untyped-def]
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k != "execution"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(found)


@pytest.mark.parametrize("key", ["filter"])
def test_a_lost_ray_worker_node_completes_or_resumes_to_the_clean_bytes(
        key: str, tmp_path: Path) -> None:
    ray_tmp = short_tmp()
    env = {**os.environ, **ray_env(ray_tmp)}
    holder = subprocess.Popen([sys.executable, str(SCRIPT), str(ray_tmp / "ray")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=env, start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdin is not None
        info = json.loads(holder.stdout.readline())
        case = Case(BY_KEY[key], "ray", tmp_path)
        if case.ray_tmp is not None:
            shutil.rmtree(case.ray_tmp, ignore_errors=True)
        case.ray_tmp = ray_tmp  # join the cluster: its temp dir, its address
        case.cfg["execution"]["ray_address"] = info["address"]
        case.config_path.write_text(yaml.safe_dump(case.cfg), encoding="utf-8")

        with case.proc("clean") as proc:  # both nodes, uninterrupted
            assert proc.wait(600) == 0, proc.stderr()[-3000:]
        clean = tmp_path / "clean"
        case.out.rename(clean)
        shutil.rmtree(case.ckpt, ignore_errors=True)

        with case.proc("node-lost") as proc:
            deadline = time.monotonic() + 300
            while not running_on(info["worker_raylet_pids"]):  # a partition there
                assert proc.poll() is None, f"ended before the worker node ran\n{proc.stderr()}"
                assert time.monotonic() < deadline, "the worker node never ran a partition"
                time.sleep(0.01)
            holder.stdin.write("remove\n")
            holder.stdin.flush()
            assert holder.stdout.readline().strip() == "removed"
            code = proc.wait(600)
            err = proc.stderr()
        assert code in (0, 2), f"exit {code}\n{err[-3000:]}"
        print(f"worker node removed mid-run: exit {code}"  # the figure docs/reliability.md
              + (" (completed on the head node)" if code == 0 else " (rerun resumed)"))
        spec = case.spec
        if code == 2:  # failed cleanly: an error id, the report without completed_at
            assert "error: [partition_failed]" in err, err[-3000:]
            found = spec.read_result(case.cfg)  # its model, read as written below
            result = found.dump() if found is not None else None
            assert result is not None and "completed_at" not in result["producer"]
            with case.proc("rerun") as rerun:  # the head node alone
                assert rerun.wait(600) == 0, rerun.stderr()[-3000:]
        assert spec.is_complete(case.cfg)
        assert comparable_files(case.out) == comparable_files(clean)
        assert record_ids(case.out) == record_ids(clean)
        assert without_execution(reports(case.out)) == without_execution(reports(clean))
        assert leftovers(case.out) == []
    finally:
        if holder.stdin is not None:
            holder.stdin.close()
        try:
            holder.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(holder.pid, 9)
        shutil.rmtree(ray_tmp, ignore_errors=True)
