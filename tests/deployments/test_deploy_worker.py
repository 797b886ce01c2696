"""deployments/: prefect.yaml deployed to a real local server, runs executed by a real worker.

One module-scoped setup does the slow part once: a ``process`` work pool, ``prefect
deploy --all`` from ``deployments/prefect.yaml`` (the CLI, as a user runs it), two runs
of ``curate-ingest/demo`` created, then ``prefect worker start --run-once`` executes
both and exits. The two runs cover the two ways the pull steps find the checkout and
the Ray variant's environment:

- run 1 takes the deployment's default parameters (``examples/demo/ingest.yaml``,
  relative) and ``CURATE_REPO`` pointing at a small stand-in checkout under tmp that
  holds a config at that path: relative paths resolve against ``$CURATE_REPO``;
- run 2 gives an absolute config that names no executor, with the ``demo-ray``
  deployment's ``job_variables.env``, and no ``CURATE_REPO``: the checkout defaults to
  the one deployed from, and the run executes on Ray.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator_demo import MIN_DOCS, generate_demo_corpus

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENTS = REPO / "deployments"
POOL = "curate-process"
ALL = ("curate-ingest/demo", "curate-ingest/nightly", "curate-profile/demo",
       "curate-filter/demo", "curate-filter/demo-ray", "curate-flow/demo",
       "curate-flow/ray-cluster")
WORKER_TIMEOUT = 180  # two small runs, one of them starting a local Ray: ~25 s here


def _prefect_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("prefect")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "prefect"]


def _prefect(*args: str, cwd: Path = REPO, timeout: float = 180) -> str:
    proc = subprocess.run([*_prefect_cmd(), "--no-prompt", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"prefect {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _reap(proc: subprocess.Popen[Any]) -> None:
    """Stop the worker's process group: TERM, TERM again (a worker needs two), KILL."""
    for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue
    if proc.poll() is None:
        proc.wait(timeout=10)


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _wait_final(flow_run_ids: list[Any], deadline_s: float = 30) -> dict[Any, Any]:
    deadline = time.monotonic() + deadline_s
    with _client() as client:
        while True:
            runs = {i: client.read_flow_run(i) for i in flow_run_ids}
            if all(r.state is not None and r.state.is_final() for r in runs.values()):
                return runs
            if time.monotonic() > deadline:
                return runs
            time.sleep(0.5)


@pytest.fixture(scope="module")
def deployed(prefect_api: str) -> dict[str, Any]:
    _prefect("work-pool", "create", POOL, "--type", "process", "--overwrite")
    out = _prefect("deploy", "--prefect-file", "deployments/prefect.yaml", "--all")
    with _client() as client:
        found = {name: client.read_deployment_by_name(name) for name in ALL}
    assert all(f"Deployment '{name}' successfully" in out for name in ALL), out
    return found


@pytest.fixture(scope="module")
def runs(deployed: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    from prefect.deployments import run_deployment

    tmp = tmp_path_factory.mktemp("deploy")
    # run 1: a stand-in checkout with a config at the deployment's default (relative) path
    checkout = tmp / "checkout"
    generate_demo_corpus(checkout / "raw", docs=MIN_DOCS)
    default_config = deployed["curate-ingest/demo"].parameters["config"]
    (checkout / default_config).parent.mkdir(parents=True)
    (checkout / default_config).write_text(yaml.safe_dump({
        "input": "raw", "output_dir": "out/ingested", "on_duplicate": "drop",
        "source_from": "source", "shard_size": 20,
        "execution": {"executor": "local", "workers": 1, "checkpoint_path": "out/checkpoints"},
    }))
    # run 2: absolute paths, no execution.executor (the env default decides), on Ray
    ray_out = tmp / "ray"
    ray_config = tmp / "ray-ingest.yaml"
    ray_config.write_text(yaml.safe_dump({
        "input": str(checkout / "raw"), "output_dir": str(ray_out / "ingested"),
        "on_duplicate": "drop", "source_from": "source",
        "execution": {"workers": 1, "checkpoint_path": str(ray_out / "checkpoints")},
    }))
    ray_tmp = Path(tempfile.mkdtemp(prefix="rtw-", dir="/tmp"))  # AF_UNIX paths stay short
    ray_env = {**deployed["curate-filter/demo-ray"].job_variables["env"],
               "RAY_TMPDIR": str(ray_tmp)}
    env = {k: v for k, v in os.environ.items() if k != "CURATE_REPO"}

    local_run = run_deployment("curate-ingest/demo", timeout=0,
                               job_variables={"env": {"CURATE_REPO": str(checkout)}})
    ray_run = run_deployment("curate-ingest/demo", timeout=0,
                             parameters={"config": str(ray_config)},
                             job_variables={"env": ray_env})

    log_path = tmp / "worker.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [*_prefect_cmd(), "worker", "start", "--pool", POOL, "--run-once"],
            cwd=tmp, env={**env, "PREFECT_LOGGING_LEVEL": "INFO"},
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            worker.wait(timeout=WORKER_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        finally:
            _reap(worker)
    final = _wait_final([local_run.id, ray_run.id])
    try:
        yield {
            "local": final[local_run.id], "ray": final[ray_run.id],
            "checkout": checkout, "ray_out": ray_out,
            "log": log_path.read_text(errors="replace"),
            "seconds": time.monotonic() - started,
        }
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _explain(runs: dict, key: str) -> str:
    state = runs[key].state
    ended = f"{state and state.type}: {state and state.message}"
    return f"{key} run ended {ended}\n{runs['log'][-6000:]}"


@pytest.mark.slow
def test_deployment_run_completes_in_the_checkout_with_its_artifacts(runs: dict) -> None:
    assert runs["local"].state.is_completed(), _explain(runs, "local")
    out = runs["checkout"] / "out" / "ingested"  # relative to $CURATE_REPO: the pull steps
    report = json.loads((out / "ingest_report.json").read_text())
    assert report["completed_normally"] is True
    shards = sorted(p.name for p in out.glob("part_*.jsonl"))
    assert len(shards) >= 2  # shard_size 20 on ~50 documents
    assert sum(len(p.read_text().splitlines()) for p in out.glob("part_*.jsonl")) == \
        report["documents_accepted"] > 0

    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
    )

    with _client() as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["ingest-report"])),
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[runs["local"].id])),
        )
    assert [a.type for a in artifacts] == ["markdown"]
    assert "Ingest report (complete)" in artifacts[0].data


@pytest.mark.slow
def test_ray_variant_env_runs_the_step_on_ray(runs: dict) -> None:
    assert runs["ray"].state.is_completed(), _explain(runs, "ray")
    report = json.loads((runs["ray_out"] / "ingested" / "ingest_report.json").read_text())
    assert report["completed_normally"] is True
    # the flow logs its executor; this run's config names none, the job env says ray
    assert f"Flow run '{runs['ray'].name}' - ingest of" in runs["log"]
    line = next(s for s in runs["log"].splitlines()
                if f"Flow run '{runs['ray'].name}' - ingest of" in s)
    assert "'executor': 'ray'" in line
    assert runs["seconds"] < WORKER_TIMEOUT


@pytest.mark.slow
def test_every_deployment_is_on_the_pool_with_a_demo_config_and_local_pull_steps(
    deployed: dict[str, Any],
) -> None:
    for name, dep in deployed.items():
        assert dep.work_pool_name == POOL, name
        assert (REPO / dep.parameters["config"]).is_file(), name
        assert dep.entrypoint.startswith("flows."), name  # module paths (see serve.py)
        script = next(s["prefect.deployments.steps.run_shell_script"]["script"]
                      for s in dep.pull_steps if "prefect.deployments.steps.run_shell_script" in s)
        assert "${CURATE_REPO:-" + str(REPO) + "}" in script, name  # default: deployed from
        assert {"prefect.deployments.steps.set_working_directory": {
            "directory": "{{ repo.stdout }}"}} in dep.pull_steps, name
    assert deployed["curate-flow/demo"].parameters == {
        "config": "examples/demo/flow-measure.yaml", "plan": False}
    ray_flow = deployed["curate-flow/ray-cluster"]
    assert ray_flow.entrypoint == "flows.ray_runner:curate_flow"
    assert ray_flow.parameters == {"config": "examples/demo/flow-measure.yaml", "plan": False,
                                   "overrides": ["execution.executor=ray"]}


@pytest.mark.slow
def test_nightly_ingest_has_an_inactive_cron_schedule_and_runs_one_at_a_time(
    deployed: dict[str, Any],
) -> None:
    nightly = deployed["curate-ingest/nightly"]
    [schedule] = nightly.schedules
    assert schedule.schedule.cron == "0 2 * * *"
    assert schedule.schedule.timezone == "UTC"
    assert schedule.active is False
    assert nightly.global_concurrency_limit.limit == 1
    assert nightly.parameters["config"] == "examples/demo/ingest.yaml"
    assert not deployed["curate-ingest/demo"].schedules


@pytest.mark.slow
def test_ray_variant_reaches_a_config_that_names_another_executor(
    deployed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from curator.steps.filter import FilterConfig
    from flows.step_config import step_config

    dep = deployed["curate-filter/demo-ray"]
    for key, value in dep.job_variables["env"].items():
        monkeypatch.setenv(key, value)
    config = str(REPO / dep.parameters["config"])
    assert step_config(FilterConfig, config, dep.parameters["overrides"]).execution.executor \
        == "ray"
    # the env alone is only a default: the demo config's `executor: local` wins over it
    assert step_config(FilterConfig, config, None).execution.executor == "local"
    assert deployed["curate-filter/demo"].job_variables.get("env") is None


def _serve_module() -> Any:
    spec = importlib.util.spec_from_file_location("curate_serve", DEPLOYMENTS / "serve.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_serve_builds_module_entrypoint_deployments_of_the_step_flows() -> None:
    deployments = _serve_module().build_deployments()
    names = {(d.flow_name, d.name) for d in deployments}
    from curator.steps.registry import STEPS

    assert names == {(spec.flow_name, "serve") for spec in STEPS} | \
        {("curate-ingest", "nightly-serve")}
    for dep in deployments:
        assert dep.entrypoint.startswith("flows."), dep.entrypoint
        assert (REPO / dep.parameters["config"]).is_file()
    [nightly] = [d for d in deployments if d.name == "nightly-serve"]
    assert [s.active for s in nightly.schedules] == [False]
    assert nightly.schedules[0].schedule.cron == "0 2 * * *"

