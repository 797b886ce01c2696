"""prefect-ray's RayTaskRunner on a two-node local Ray cluster, through a deployment.

One module-scoped setup: a two-node cluster (``ray.cluster_utils.Cluster``, a process
of its own: ``_ray_cluster.py``), the ``curate-ingest/ray-cluster`` deployment of
``deployments/prefect.yaml`` deployed to the session's real Prefect server with the
CLI (by test_deploy_worker's ``deploy --all`` when it ran first), one run of it
created with ``RAY_ADDRESS`` pointing at the cluster, and a real worker (``prefect
worker start --run-once``) executing it. The same ingest config is also run on the
process pool. Checked: the run completed; every partition's Prefect task run ran as a
Ray task on a node of *that* cluster (the node ids and the GCS address the tasks saw,
from the run's ``ingest-ray-nodes`` artifact), on both nodes; one completed task run
per partition and pass; the data files equal the process pool's byte for byte.

The whole flow on the same cluster (``curate-flow/ray-cluster``, ingest and profile as
subflows, each joining the cluster the flow's runner connected) takes minutes: behind
``CURATE_CHAOS_FULL=1``.

Also, without the cluster: a failed partition on the session's Ray (its task run FAILED,
its error id in the engine's error), the refusals, and the served variants.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.stages import ProcessingStage
from curator_demo import generate_demo_corpus
from curator_testing.jsonl import DocumentBatch
from tests.deployments.test_deploy_worker import (
    POOL,
    _client,
    _prefect,
    _prefect_cmd,
    _reap,
    _wait_final,
)
from tests.steps._worlds import data_files

DEPLOYMENT = "curate-ingest/ray-cluster"
FLOW_DEPLOYMENT = "curate-flow/ray-cluster"
FULL = os.environ.get("CURATE_CHAOS_FULL") == "1"
WORKER_TIMEOUT = 240  # one run: 58 s on this machine at load 15 (Ray workers import Prefect)


def _ingest_config(raw: Path, out: Path, executor: str) -> dict[str, Any]:
    # 64KB partitions of the 240-document demo corpus: several partitions per pass
    return {"input": str(raw), "output_dir": str(out / "ingested"), "on_duplicate": "drop",
            "source_from": "source", "partition_size": "64KB", "shard_size": 100,
            "execution": {"executor": executor, "workers": 2,
                          "checkpoint_path": str(out / "checkpoints")}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``{"address", "nodes", "env"}`` of a two-node Ray cluster held by a subprocess."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="rpr-", dir="/tmp"))  # AF_UNIX paths stay short
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    log = (tmp_path_factory.mktemp("cluster") / "cluster.log").open("wb")
    since = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_ray_cluster.py")), str(ray_tmp / "ray")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
        start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline()
        assert line, f"the cluster did not start: {Path(log.name).read_text()[-3000:]}"
        print(f"two-node cluster up in {time.monotonic() - since:.1f} s")
        yield {**json.loads(line), "env": {k: env[k] for k in ("RAY_TMPDIR",)}}
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # the holder shuts the cluster down
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _reap(proc)
        log.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_run(prefect_api: str, cluster: dict[str, Any],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:

    seconds: dict[str, float] = {}
    since = time.monotonic()
    tmp = tmp_path_factory.mktemp("prefect-ray")
    raw = tmp / "raw"
    generate_demo_corpus(raw, docs=240, seed=7)
    config = tmp / "ingest.yaml"
    # the demo deployment's override makes it ray; the file says local, as the demo's does
    config.write_text(yaml.safe_dump(_ingest_config(raw, tmp / "ray", "local")))

    # test_deploy_worker's `prefect deploy --all` of the same file, earlier in the session
    # (an in-memory server), deployed it already; run alone, this module deploys it
    deployment = _deployed(DEPLOYMENT, "ingest_flow/ray-cluster")
    seconds["corpus, pool and deploy"], since = time.monotonic() - since, time.monotonic()
    flow_run, log_path = _run_on_cluster(DEPLOYMENT, deployment, config, cluster, tmp,
                                         WORKER_TIMEOUT)
    final = _wait_final([flow_run.id])[flow_run.id]
    seconds["worker run on the cluster"], since = time.monotonic() - since, time.monotonic()

    # the same config on the process pool, in this process
    from curator.config import validate_config
    from curator.steps.registry import STEPS

    spec = next(s for s in STEPS if s.key == "ingest")
    pool_out = tmp / "pool"
    spec.run(validate_config(spec.config, _ingest_config(raw, pool_out, "local")))
    seconds["process-pool run"] = time.monotonic() - since
    yield {"seconds": seconds, "run": final, "deployment": deployment, "ray_out": tmp / "ray",
           "pool_out": pool_out, "log": log_path.read_text(errors="replace")}


def _deployed(name: str, entry: str) -> Any:
    """The deployment ``name``, deployed from ``deployments/prefect.yaml``'s ``entry``
    when the server does not have it yet."""
    from prefect.exceptions import ObjectNotFound

    with _client() as client:
        try:
            return client.read_deployment_by_name(name)
        except ObjectNotFound:
            _prefect("work-pool", "create", POOL, "--type", "process", "--overwrite")
            out = _prefect("deploy", "--prefect-file", "deployments/prefect.yaml",
                           "--name", entry)
            assert f"Deployment '{name}' successfully" in out, out
            return client.read_deployment_by_name(name)


def _run_on_cluster(name: str, deployment: Any, config: Path, cluster: dict[str, Any],
                    tmp: Path, timeout: float) -> tuple[Any, Path]:
    """Run deployment ``name`` on ``config`` through a one-shot process worker whose run
    joins the cluster (``RAY_ADDRESS``): ``(the flow run, the worker's log)``."""
    from prefect.deployments import run_deployment

    env = {**deployment.job_variables["env"], **cluster["env"],
           "RAY_ADDRESS": cluster["address"]}
    flow_run = run_deployment(name, timeout=0, parameters={"config": str(config)},
                              job_variables={"env": env})
    log_path = tmp / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [*_prefect_cmd(), "worker", "start", "--pool", POOL, "--run-once"],
            cwd=tmp, env={**os.environ, "PREFECT_LOGGING_LEVEL": "INFO",
                          "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            worker.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _reap(worker)
    return flow_run, log_path


def _explain(ray_run: dict[str, Any]) -> str:
    state = ray_run["run"].state
    return f"run ended {state and state.type}: {state and state.message}\n{ray_run['log'][-8000:]}"


def _of_run(flow_run_id: Any) -> tuple[list[Any], list[Any]]:
    """The run's ``ingest-ray-nodes`` artifacts and its task runs."""
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
    )

    runs = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    with _client() as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["ingest-ray-nodes"])),
            flow_run_filter=runs)
        task_runs = client.read_task_runs(flow_run_filter=runs)
    return artifacts, task_runs


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_ray_runner_deployment_runs_the_step_on_the_clusters_two_nodes(
    ray_run: dict[str, Any], cluster: dict[str, Any]
) -> None:
    print("prefect-ray setup (s):", {k: round(v, 1) for k, v in ray_run["seconds"].items()})
    assert ray_run["run"].state.is_completed(), _explain(ray_run)
    assert ray_run["deployment"].entrypoint == "flows.ray_runner:ingest_flow"

    [artifact], task_runs = _of_run(ray_run["run"].id)
    data = artifact.data
    rows = json.loads(data) if isinstance(data, str) else data
    # task runs reach the API through Prefect's event pipeline, after the flow run is
    # Completed: wait (bounded) for all of them before counting (seen at load ~10: 8 of 11)
    expected = sum(r["partition_runs"] for r in rows)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and \
            sum(t.name.startswith("ingest-") for t in task_runs) < expected:
        time.sleep(1)
        task_runs = _of_run(ray_run["run"].id)[1]
    # the tasks saw the GCS address of the cluster the runner was given: no other Ray
    assert {r["gcs_address"] for r in rows} == {cluster["address"]}, rows
    # ...and ran on both of its nodes (two 1-CPU nodes, two partitions at a time: the
    # second unit of a pass cannot fit the node that holds the first)
    assert {r["node_id"] for r in rows} == set(cluster["nodes"]), (rows, cluster["nodes"])

    # one Prefect task run per partition and pass, each reported Completed by the Ray
    # worker that ran it, named after its pass
    partition_runs = [t for t in task_runs if t.name.startswith("ingest-")]
    assert len(partition_runs) == sum(r["partition_runs"] for r in rows) > 2
    assert all(t.state.is_completed() for t in partition_runs), \
        [(t.name, t.state.type) for t in partition_runs]

    report = json.loads((ray_run["ray_out"] / "ingested" / "ingest_report.json").read_text())
    assert report["completed_normally"] is True
    assert report["producer"]["execution"]["executor"] == "ray"


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_ray_runner_writes_the_process_pools_bytes(ray_run: dict[str, Any]) -> None:
    assert ray_run["run"].state.is_completed(), _explain(ray_run)
    ray_files = data_files(ray_run["ray_out"] / "ingested")
    pool_files = data_files(ray_run["pool_out"] / "ingested")
    assert ray_files and len(ray_files) >= 3, sorted(ray_files)
    assert ray_files == pool_files


# --- the refusals (no cluster, no server) -------------------------------------------


def test_a_ray_runner_flow_refuses_a_config_that_names_another_executor() -> None:
    from curator.errors import CuratorError
    from curator.steps.registry import STEPS
    from flows.ray_runner import PrefectRayExecutor, ray_step_executor

    spec = next(s for s in STEPS if s.key == "ingest")
    cfg = spec.config(input="raw", output_dir="out", execution={"executor": "local"})
    with pytest.raises(CuratorError) as err:
        ray_step_executor(spec, cfg)
    assert err.value.error_id == "task_runner_mismatch"
    assert "execution.executor=ray" in err.value.message
    cfg = spec.config(input="raw", output_dir="out",
                      execution={"executor": "ray", "workers": 3})
    executor = ray_step_executor(spec, cfg)
    assert isinstance(executor, PrefectRayExecutor) and executor.workers == 3


def test_prefect_ray_executor_refuses_to_run_without_a_ray_task_runner() -> None:
    from curator.errors import CuratorError
    from curator.execution import WorkerChain
    from flows.ray_runner import PrefectRayExecutor

    # outside any flow run: there is no RayTaskRunner to submit through (it would
    # otherwise start a Ray of its own)
    with pytest.raises(CuratorError) as err:
        PrefectRayExecutor("ingest").start(WorkerChain(token="t", blob=b""))
    assert err.value.error_id == "ray_task_runner_required"


def test_ray_executor_refuses_a_cluster_other_than_the_connected_one(ray_local: None) -> None:
    import ray

    from curator.errors import CuratorError
    from executors.ray import RayExecutor, same_address

    connected = ray.get_runtime_context().gcs_address
    host, port = connected.rsplit(":", 1)
    with pytest.raises(CuratorError) as err:
        RayExecutor(address=f"{host}:{int(port) + 1}")._refuse_another_cluster()
    assert err.value.error_id == "ray_cluster_mismatch"
    assert connected in err.value.message
    # the connected cluster itself, by name or number, and auto / ray:// are accepted
    for address in (connected, f"localhost:{port}" if host == "127.0.0.1" else connected,
                    "auto", "ray://head:10001"):
        RayExecutor(address=address)._refuse_another_cluster()
    assert same_address(f"localhost:{port}", f"127.0.0.1:{port}")


# --- a failed partition, on the session's Ray and server ----------------------------


@dataclass
class FailOnFileOne(ProcessingStage[DocumentBatch, DocumentBatch]):
    """Raise for the documents of input file 1 (ids ``1-...``), pass the others."""

    name: str = "fail_on_file_one"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        from curator.errors import CuratorError

        if any(str(i).startswith("1-") for i in task.to_polars()["id"].to_list()):
            raise CuratorError("planted_failure", "file 1 is refused by the test")
        return task


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_failed_partition_fails_its_task_run_and_the_run_with_its_error(
    tmp_path: Path, prefect_api: str, ray_local: None
) -> None:
    """The failing unit's Prefect task run is Failed (reported by its Ray worker), the
    others Completed, and the unit's own exception, error id included, reaches the
    engine through the task run's state (partition_failed names it)."""
    from prefect import flow
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    from curator.errors import CuratorError
    from curator.pipeline import Pipeline
    from curator_testing.jsonl import JsonlWriter, jsonl_reader
    from flows.ray_runner import CurateRayTaskRunner, PrefectRayExecutor

    folder = tmp_path / "input"
    folder.mkdir()
    for f in range(3):
        (folder / f"part-{f}.jsonl").write_text(
            "".join(json.dumps({"id": f"{f}-{d}", "text": f"doc {d}"}) + "\n" for d in range(4)))
    name = f"ray-fail-{uuid.uuid4().hex[:8]}"
    pipeline = Pipeline(name, [*jsonl_reader(str(folder), files_per_partition=1),
                               FailOnFileOne(), JsonlWriter(path=str(tmp_path / "out"))])

    @flow(name="prefect-ray-failure", task_runner=CurateRayTaskRunner(), persist_result=False)
    def run() -> Any:
        with PrefectRayExecutor("failure", workers=2) as executor:
            return pipeline.run(executor=executor, checkpoint_path=tmp_path / "ck")

    with pytest.raises(CuratorError) as err:
        run()
    assert err.value.error_id == "partition_failed"
    assert "CuratorError: [planted_failure] file 1 is refused" in err.value.message

    # one task run per input file (files_per_partition=1); only file 1's failed. The
    # server records task runs from events, a little after they happen: wait for them.
    states: list[str] = []
    deadline = time.monotonic() + 120
    with _client() as client:
        while time.monotonic() < deadline:
            task_runs = client.read_task_runs(
                task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_=name)))
            states = sorted(t.state.type.value for t in task_runs if t.state)
            if len(states) == 3 and "RUNNING" not in states and "PENDING" not in states:
                break
            time.sleep(0.5)
    assert states == ["COMPLETED", "COMPLETED", "FAILED"], states


def test_served_ray_runner_deployments_load_the_ray_runner_flows() -> None:
    """``serve.py --ray-runner``: each step's flow of ``flows.ray_runner``, whose entrypoint
    loads a flow on a RayTaskRunner (not the thread-pool flow of ``flows.steps``)."""
    import importlib

    from prefect_ray.task_runners import RayTaskRunner

    from curator.steps.registry import STEPS
    from tests.deployments.test_deploy_worker import _serve_module

    deployments = _serve_module().build_deployments(ray_runner=True)
    assert {(d.flow_name, d.name) for d in deployments} == {
        (spec.flow_name, "serve-ray") for spec in STEPS}
    for dep in deployments:
        module, _, name = dep.entrypoint.rpartition(".")
        assert module == "flows.ray_runner", dep.entrypoint
        assert isinstance(getattr(importlib.import_module(module), name).task_runner,
                          RayTaskRunner)
        assert dep.parameters["overrides"] == ["execution.executor=ray"]


# --- the whole flow (curate flow) on the RayTaskRunner --------------------------------


def _flow_plan(tmp_path: Path, executor: dict[str, Any]) -> Any:
    from curator.flow.plan import load_flow_config, plan_flow
    from tests.flow._support import base_config

    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    (raw / "a.jsonl").write_text('{"text": "one document", "source": "s"}\n')
    cfg = base_config(raw, tmp_path / "out", executor=executor)
    cfg["steps"]["ingest"]["execution"] = {"workers": 1}  # a step block of its own
    return plan_flow(load_flow_config(cfg))


def test_the_ray_flow_refuses_a_step_not_on_ray_before_any_step_runs(tmp_path: Path) -> None:
    from curator.errors import CuratorError
    from flows.ray_runner import apply_execution_overrides, refuse_other_executors

    fplan = _flow_plan(tmp_path, {"executor": "local", "workers": 2})
    with pytest.raises(CuratorError) as err:
        refuse_other_executors(fplan)
    assert err.value.error_id == "task_runner_mismatch"
    assert "ingest: local" in err.value.message and "profile: local" in err.value.message

    # overrides are execution keys only: anything else would change what a step writes
    # without changing the hash that decides whether a finished step is skipped
    with pytest.raises(CuratorError) as err:
        apply_execution_overrides(fplan, ["execution.executor=ray", "output_root=/x"])
    assert err.value.error_id == "config_error" and "output_root" in err.value.message

    apply_execution_overrides(fplan, ["execution.executor=ray"])
    refuse_other_executors(fplan)  # every enabled step on ray now
    enabled = [s for s in fplan.steps if s.enabled]
    assert [s.key for s in enabled] == ["ingest", "profile"]
    assert all(s.config["execution"]["executor"] == "ray" for s in enabled)
    # merged into each step's execution block, not replacing it
    assert fplan.step("ingest").config["execution"]["workers"] == 1
    assert fplan.step("profile").config["execution"]["workers"] == 2


def test_served_ray_runner_flow_is_the_whole_flow_on_a_ray_task_runner() -> None:
    from prefect_ray.task_runners import RayTaskRunner

    import flows.ray_runner
    from tests.deployments.test_deploy_worker import _serve_module

    [dep] = _serve_module().build_deployments(only=["curate-flow"], ray_runner=True)
    assert (dep.flow_name, dep.name) == ("curate-flow", "serve-ray")
    assert dep.entrypoint == "flows.ray_runner.curate_flow"
    assert isinstance(flows.ray_runner.curate_flow.task_runner, RayTaskRunner)
    assert dep.parameters == {"config": "examples/demo/flow-measure.yaml", "plan": False,
                              "overrides": ["execution.executor=ray"]}


@pytest.fixture(scope="module")
def flow_on_cluster(prefect_api: str, cluster: dict[str, Any],
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``curate-flow/ray-cluster`` (ingest, profile) through a worker on the cluster, and
    the same flow config on the process pool, without Prefect."""

    from flows.direct import run_flow_direct
    from tests.flow._support import base_config, demo_corpus

    seconds: dict[str, float] = {}
    since = time.monotonic()
    tmp = tmp_path_factory.mktemp("flow-ray")
    raw = demo_corpus(tmp / "raw")
    config = tmp / "flow.yaml"
    # the file says local, as the demo's does: the deployment's override makes it ray
    # both runs write under the same root (then renamed): the profile's digest covers
    # its input glob, so the same bytes need the same paths
    root = tmp / "root"
    config.write_text(yaml.safe_dump(
        base_config(raw, root, executor={"executor": "local", "workers": 2})))
    deployment = _deployed(FLOW_DEPLOYMENT, "curate_flow/ray-cluster")
    seconds["corpus and deploy"], since = time.monotonic() - since, time.monotonic()
    flow_run, log_path = _run_on_cluster(FLOW_DEPLOYMENT, deployment, config, cluster,
                                         tmp, 2 * WORKER_TIMEOUT)
    final = _wait_final([flow_run.id])[flow_run.id]
    seconds["worker run of the flow on the cluster"], since = \
        time.monotonic() - since, time.monotonic()
    if root.is_dir():
        root.rename(tmp / "ray")
    run_flow_direct(base_config(raw, root, executor={"executor": "local", "workers": 2}))
    root.rename(tmp / "pool")
    seconds["the same flow on the process pool"] = time.monotonic() - since
    yield {"seconds": seconds, "run": final, "ray_root": tmp / "ray",
           "pool_root": tmp / "pool", "log": log_path.read_text(errors="replace")}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(not FULL, reason="the whole flow on a two-node cluster, minutes: "
                                     "CURATE_CHAOS_FULL=1")
def test_the_whole_flow_runs_every_step_on_the_one_cluster(
        flow_on_cluster: dict[str, Any], cluster: dict[str, Any]) -> None:
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
    )

    run = flow_on_cluster
    print("whole flow on prefect-ray (s):",
          {k: round(v, 1) for k, v in run["seconds"].items()})
    assert run["run"].state.is_completed(), _explain(run)
    report = json.loads((run["ray_root"] / "flow_report.json").read_text())
    assert report["status"] == "ok"
    assert [(s["step_id"], s["status"]) for s in report["steps"]
            if s["status"] != "disabled"] == [("curate/ingest", "ok"), ("curate/profile", "ok")]

    with _client() as client:
        subflows = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run["run"].id])))
        assert sorted(client.read_flow(f.flow_id).name for f in subflows) == \
            ["curate-ingest", "curate-profile"]
        assert all(f.state.is_completed() for f in subflows)
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
                any_=["ingest-ray-nodes", "profile-ray-nodes"])),
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[f.id for f in subflows])))
    assert sorted(a.key for a in artifacts) == ["ingest-ray-nodes", "profile-ray-nodes"]
    for artifact in artifacts:
        rows = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        # every step's partitions ran on the one cluster the flow's runner joined
        assert {r["gcs_address"] for r in rows} == {cluster["address"]}, (artifact.key, rows)
        assert {r["node_id"] for r in rows} <= set(cluster["nodes"]), (artifact.key, rows)
    assert {r["node_id"] for a in artifacts for r in (
        json.loads(a.data) if isinstance(a.data, str) else a.data)} == set(cluster["nodes"])
    for sub, name in (("ingested", "ingest_report.json"), ("profile", "profile_report.json")):
        produced = json.loads((run["ray_root"] / sub / name).read_text())
        assert produced["producer"]["execution"]["executor"] == "ray"
        ray_files = data_files(run["ray_root"] / sub)
        assert ray_files and ray_files == data_files(run["pool_root"] / sub), sub
