"""deployments/prefect.yaml is generated from the step registry
(``python -m deployments.generate``): the committed file is current, it reads back as
the catalog's deployments, a step without a demo config still gets one, and
deployments/serve.py serves the same deployments."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from deployments import generate
from deployments.catalog import FLOW, Deployment, deployments

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "deployments" / "prefect.yaml"


def test_the_committed_prefect_yaml_is_what_the_registry_generates(tmp_path: Path) -> None:
    out = tmp_path / "prefect.yaml"
    assert generate.main(["--out", str(out)]) == 0
    assert out.read_text() == COMMITTED.read_text(), \
        "deployments/prefect.yaml is stale: run `python -m deployments.generate`"
    assert generate.main(["--check", "--out", str(COMMITTED)]) == 0


def test_check_fails_on_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "prefect.yaml"
    stale.write_text(COMMITTED.read_text().replace("name: demo\n", "name: old\n", 1))
    assert generate.main(["--check", "--out", str(stale)]) == 1
    assert "python -m deployments.generate" in capsys.readouterr().err
    assert generate.main(["--check", "--out", str(tmp_path / "missing.yaml")]) == 1


def _expected(dep: Deployment) -> dict[str, Any]:
    """What ``prefect deploy`` reads for ``dep`` (the YAML alias resolved)."""
    pool: dict[str, Any] = {"name": "curate-process", "work_queue_name": "default",
                            "job_variables": {"env": dep.env} if dep.env else {}}
    entry: dict[str, Any] = {"name": dep.name, "entrypoint": dep.entrypoint,
                             "description": dep.description, "tags": list(dep.tags),
                             "parameters": dep.parameters}
    if dep.cron:
        entry["schedules"] = [{"cron": dep.cron, "timezone": "UTC", "active": False}]
    if dep.one_at_a_time:
        entry["concurrency_limit"] = {"limit": 1, "collision_strategy": "ENQUEUE"}
    return {**entry, "work_pool": pool}


def test_prefect_yaml_reads_back_as_the_catalog() -> None:
    doc = yaml.safe_load(COMMITTED.read_text())
    assert doc["deployments"] == [_expected(d) for d in deployments()]
    assert [s for s in doc["pull"] if "prefect.deployments.steps.set_working_directory" in s]
    assert doc["definitions"]["work_pool"]["name"] == "curate-process"


def test_a_step_without_a_demo_config_gets_a_deployment_without_one(tmp_path: Path) -> None:
    # steps as the registry holds them; help lines that need quoting in YAML
    steps = [SimpleNamespace(key=key, flow_name=f"curate-{key}", help=help_,
                             command_name=key)
             for key, help_ in (("ingest", "Ingest: shards."), ("toy", "no"),
                                ("other", "A step # with a hash, 'quotes' and \"more\"."))]
    (tmp_path / "examples" / "demo").mkdir(parents=True)
    (tmp_path / "examples" / "demo" / "ingest.yaml").write_text("{}\n")
    doc = yaml.safe_load(generate.render(steps, repo=tmp_path))
    demos = {d["entrypoint"]: d for d in doc["deployments"] if d["name"] == "demo"}
    assert demos["flows.steps:toy_flow"]["parameters"] == {"overrides": []}
    assert demos["flows.steps:toy_flow"]["description"] == "no (curate toy)."
    assert demos["flows.steps:other_flow"]["description"] == \
        "A step # with a hash, 'quotes' and \"more\" (curate other)."
    assert demos["flows.steps:ingest_flow"]["parameters"] == {
        "config": "examples/demo/ingest.yaml", "overrides": []}
    assert demos["flows.steps:ingest_flow"]["description"] == "Ingest: shards (curate ingest)."
    # the variants of steps that are registered, the nightly beside its step's demo
    names = [(d["entrypoint"], d["name"]) for d in doc["deployments"]]
    assert names[:2] == [("flows.steps:ingest_flow", "demo"), ("flows.steps:ingest_flow",
                                                               "nightly")]
    assert ("flows.steps:filter_flow", "demo-ray") not in names  # no filter here
    assert doc["deployments"] == [_expected(d) for d in deployments(steps, tmp_path)]


def test_serve_serves_the_catalogs_demo_and_scheduled_deployments() -> None:
    from tests.deployments.test_deploy_worker import _serve_module

    served = {(d.flow_name, d.name): d for d in deployments() if d.served}
    built = _serve_module().build_deployments(only=sorted({f for f, _ in served}))
    by_name = {(d.flow_name, d.name): d for d in built}
    assert set(by_name) == {(f, "serve" if n == "demo" else f"{n}-serve")
                            for f, n in served}
    for (flow_name, name), dep in served.items():
        runner = by_name[flow_name, "serve" if name == "demo" else f"{name}-serve"]
        assert runner.parameters == dep.parameters
        assert runner.entrypoint == dep.entrypoint.replace(":", ".")
        assert [s.schedule.cron for s in runner.schedules] == ([dep.cron] if dep.cron else [])
    assert (FLOW, "serve") in by_name
