"""A lost worker or node does not end a pass (issue 26): on a real two-node Ray cluster
(``ray.cluster_utils.Cluster``, held by tests/chaos/_retry_cluster.py, one process for
the module), a unit whose Ray worker process dies, or whose node is removed, is run
again elsewhere, up to ``max_attempts`` attempts, and counted in the executor's
``describe()`` and the producer block; a unit's own exception is never retried.

Each scenario runs four one-file partitions (``a`` to ``d``); the victim is ``b``. The
attempts of each partition are counted by files its stage makes (``<file>.attempt-<n>``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from curator.errors import CuratorError
from curator.execution import InlineExecutor
from tests.chaos._retry_cluster import VICTIM, attempt_marks, make_inputs, pipeline
from tests.integration._support import ray_env, short_tmp

pytestmark = pytest.mark.timeout(300)
on_the_cluster = pytest.mark.slow

SCRIPT = Path(__file__).with_name("_retry_cluster.py")
NAMES = ("a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl")


class Holder:
    """The cluster process: a request a scenario, its result read from ``result.json``."""

    def __init__(self, proc: subprocess.Popen[str], log: Path) -> None:
        self.proc = proc
        self.log = log

    def run(self, scenario: str, workdir: Path, max_attempts: int = 3) -> dict[str, Any]:
        assert self.proc.stdin is not None
        make_inputs(workdir / "in")
        self.proc.stdin.write(json.dumps({"scenario": scenario, "workdir": str(workdir),
                                          "max_attempts": max_attempts}) + "\n")
        self.proc.stdin.flush()
        result = workdir / "result.json"
        deadline = time.monotonic() + 180
        while not result.exists():
            assert self.proc.poll() is None, f"the cluster process died\n{self.tail()}"
            assert time.monotonic() < deadline, f"{scenario}: no result\n{self.tail()}"
            time.sleep(0.1)
        return json.loads(result.read_text())

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Holder]:
    ray_tmp = short_tmp()
    log = ray_tmp / "holder.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen([sys.executable, str(SCRIPT), str(ray_tmp)],
                                stdin=subprocess.PIPE, stdout=sink, stderr=sink, text=True,
                                env={**os.environ, **ray_env(ray_tmp)},
                                start_new_session=True)
    holder = Holder(proc, log)
    try:
        deadline = time.monotonic() + 180
        while not (ray_tmp / "ready.json").exists():
            assert proc.poll() is None, f"the cluster did not start\n{holder.tail()}"
            assert time.monotonic() < deadline, f"the cluster did not start\n{holder.tail()}"
            time.sleep(0.1)
        yield holder
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # EOF: the holder shuts the cluster down
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(30)
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_lost_workers_and_nodes_are_retried_and_a_unit_s_own_errors_never() -> None:
    """The classification, on Ray's own exception classes (no cluster needed)."""
    import ray.exceptions as rx

    from executors.ray import is_lost_unit

    def raised_in_a_task(cause: BaseException) -> BaseException:
        return rx.RayTaskError("_ray_run", "Traceback ...", cause).as_instanceof_cause()

    assert is_lost_unit(rx.WorkerCrashedError())
    assert is_lost_unit(rx.NodeDiedError("node gone"))
    assert is_lost_unit(rx.LocalRayletDiedError())
    assert is_lost_unit(rx.OwnerDiedError("00" * 28, None, ""))
    assert is_lost_unit(rx.OutOfMemoryError("killed by the memory monitor"))
    assert not is_lost_unit(raised_in_a_task(ValueError("a stage's bug")))
    assert not is_lost_unit(raised_in_a_task(CuratorError("stage_refused", "no")))
    # a stage whose own Ray call lost a worker still raised: its unit is not retried
    assert not is_lost_unit(raised_in_a_task(rx.WorkerCrashedError()))
    assert not is_lost_unit(rx.TaskCancelledError())  # an abandoned run's cancel


def test_max_attempts_comes_from_the_execution_block() -> None:
    from curator.config import ExecutionConfig
    from executors import make_executor

    assert ExecutionConfig().max_attempts == 3
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        ExecutionConfig(max_attempts=0)
    executor = make_executor("ray", None, None, ExecutionConfig(max_attempts=5).max_attempts)
    assert executor.max_attempts == 5  # type: ignore[attr-defined]
    assert executor.describe()["retries"] == 0


def attempts(workdir: Path) -> dict[str, int]:
    return {name: len(attempt_marks(workdir / "marks", name)) for name in NAMES}


def outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def clean_outputs(work: Path, tmp_path: Path) -> dict[str, bytes]:
    """What the same pipeline writes from the same inputs without faults, inline here."""
    out = tmp_path / "clean" / "out"
    pipeline(work, "none", out=out).run(executor=InlineExecutor())
    return outputs(out)


@on_the_cluster
def test_a_unit_that_kills_its_worker_once_is_run_again_and_the_pass_completes(
        cluster: Holder, tmp_path: Path) -> None:
    work = tmp_path / "work"
    found = cluster.run("crash_once", work)
    assert "error_id" not in found, found
    assert found["completed"] == 4 and found["pending"] == [], found
    assert attempts(work) == {"a.jsonl": 1, VICTIM: 2, "c.jsonl": 1, "d.jsonl": 1}
    assert found["describe"]["retries"] == 1, found
    assert found["producer"]["execution"]["retries"] == 1, found  # the step's artifact
    assert outputs(work / "out") == clean_outputs(work, tmp_path)
    print(f"crash_once: {found['seconds']} s")


@on_the_cluster
def test_a_unit_s_own_exception_is_not_retried(cluster: Holder, tmp_path: Path) -> None:
    work = tmp_path / "work"
    found = cluster.run("raise", work)
    assert found.get("error_id") == "partition_failed", found
    assert "ValueError" in found["message"] and "deterministic failure" in found["message"]
    assert attempts(work)[VICTIM] == 1  # attempted once
    assert found["describe"]["retries"] == 0, found
    print(f"raise: {found['seconds']} s")


@on_the_cluster
def test_a_unit_that_kills_its_worker_every_time_fails_after_max_attempts(
        cluster: Holder, tmp_path: Path) -> None:
    work = tmp_path / "work"
    found = cluster.run("crash_always", work, max_attempts=3)
    assert found.get("error_id") == "partition_failed", found
    assert attempts(work)[VICTIM] == 3
    assert found["describe"]["retries"] == 2, found
    message = found["message"]
    assert found["cause"] == "UnitLost", found
    assert "lost on each of its 3 attempts (execution.max_attempts=3)" in message, message
    assert "WorkerCrashedError" in message, message
    print(f"crash_always: {found['seconds']} s")


@on_the_cluster
def test_a_removed_node_s_unit_completes_on_the_other_node(
        cluster: Holder, tmp_path: Path) -> None:
    work = tmp_path / "work"
    found = cluster.run("node", work)
    assert found["node_removed"], f"no unit ran on the worker node: {found}"
    assert "error_id" not in found, found
    assert found["completed"] == 4 and found["pending"] == [], found
    # the unit the node was running, and any Ray had queued there, ran again
    assert found["describe"]["retries"] >= 1, found
    assert outputs(work / "out") == clean_outputs(work, tmp_path)
    print(f"node removed at {found['removed_at']} s, the pass done at {found['seconds']} s, "
          f"{found['describe']['retries']} retries")


@pytest.mark.slow
def test_on_prefect_ray_a_lost_unit_is_a_new_task_run_of_the_flow_run(
        tmp_path: Path, prefect_api: str, ray_local: None) -> None:
    """``PrefectRayExecutor`` (``flows.ray_runner``): the retry is launched from a thread
    of the executor's, in the flow run's context, as a new task run of that flow run;
    on the session's one-node Ray (a new worker process takes it). ~95 s at load 15:
    each new Ray worker imports Prefect."""
    import uuid

    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    from flows.ray_runner import CurateRayTaskRunner, PrefectRayExecutor

    work = tmp_path / "work"
    make_inputs(work / "in")
    name = f"retry-prefect-{uuid.uuid4().hex[:8]}"
    job = pipeline(work, "crash_once", name=name)

    @flow(name="prefect-ray-retry", task_runner=CurateRayTaskRunner(), persist_result=False)
    def run() -> dict[str, Any]:
        with PrefectRayExecutor("retry", workers=2) as executor:
            result = job.run(executor=executor, checkpoint_path=work / "ckpt")
            return {"completed": result.sources_completed, **executor.describe()}

    found = run()
    assert found["completed"] == 4 and found["retries"] == 1, found
    assert attempts(work) == {"a.jsonl": 1, VICTIM: 2, "c.jsonl": 1, "d.jsonl": 1}
    assert outputs(work / "out") == clean_outputs(work, tmp_path)
    # every partition's task run completed, the victim's too: its second attempt's (the
    # first's worker died before its events left it, so the server may never see it)
    completed: set[str] = set()
    deadline = time.monotonic() + 60  # the server records task runs from events
    with get_client(sync_client=True) as client:
        while len(completed) < 4 and time.monotonic() < deadline:
            completed = {t.name for t in client.read_task_runs(
                task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_=name)))
                if t.state is not None and t.state.type.value == "COMPLETED"}
            time.sleep(0.5)
    assert len(completed) == 4, completed
