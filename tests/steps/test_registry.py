"""Every registered step has everything the outer layers and people need: a Prefect
flow, a CLI command, a deployment (generated from the registry), docs and a world for
the contract tests; the layering check (tests/unit/test_layering.py) covers it by its
key. Nothing else names a step."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from curator.steps.registry import BY_KEY, STEPS
from curator.steps.spec import StepSpec
from tests.steps._worlds import KEYS

REPO = Path(__file__).resolve().parents[2]
PARAMS = [pytest.param(spec, id=spec.key) for spec in STEPS]


def test_the_registry_is_in_flow_order_with_unique_keys() -> None:
    assert [s.key for s in STEPS][:3] == ["ingest", "profile", "filter"]
    assert len(BY_KEY) == len(STEPS)
    phases = [(s.key, p.name) for s in STEPS for p in s.phases]
    assert len(set(phases)) == len(phases)


@pytest.mark.parametrize("spec", PARAMS)
def test_a_step_has_a_prefect_flow(spec: StepSpec) -> None:
    import flows.steps
    from flows.steps import STEP_FLOWS

    flow = STEP_FLOWS[spec.key]
    assert flow.name == spec.flow_name == f"curate-{spec.key}"
    assert getattr(flows.steps, f"{spec.key}_flow") is flow  # the deployment entrypoint


@pytest.mark.parametrize("spec", PARAMS)
def test_a_step_has_a_cli_command(spec: StepSpec) -> None:
    from flows.cli import app

    result = CliRunner().invoke(app, [spec.command_name, "--help"])
    assert result.exit_code == 0, result.output
    assert "--config" in result.output and "--set" in result.output


@pytest.mark.parametrize("spec", PARAMS)
def test_a_step_has_a_deployment_with_its_demo_config(spec: StepSpec) -> None:
    doc = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    entry = [d for d in doc["deployments"] if d["entrypoint"] == f"flows.steps:{spec.key}_flow"
             and d["name"] == "demo"]
    assert entry, f"deployments/prefect.yaml has no deployment of {spec.flow_name}: " \
        "run `python -m deployments.generate`"
    from deployments.catalog import demo_config

    config = demo_config(spec.flow_name)
    # examples/demo/<key>.yaml when it exists; without one, the deployment takes no
    # default config (deployments/README.md)
    assert entry[0]["parameters"].get("config") == config


@pytest.mark.parametrize("spec", PARAMS)
def test_a_step_has_docs(spec: StepSpec) -> None:
    page = REPO / "docs" / f"{spec.key}.md"
    assert page.is_file(), page
    assert spec.key in (REPO / "docs" / "architecture.md").read_text()


@pytest.mark.parametrize("spec", PARAMS)
def test_a_step_has_a_step_module_the_layering_check_covers_and_a_test_world(
        spec: StepSpec) -> None:
    # tests/unit/test_layering.py checks curator.steps.<key> and curator.<key> by key
    assert importlib.util.find_spec(f"curator.steps.{spec.key}") is not None
    assert spec.key in KEYS
