"""Every registered step has everything the outer layers and people need: a Prefect
flow, a CLI command, a deployment, docs, a demo config, a place in the layering
contracts and a world for the contract tests. Nothing else names a step."""

from __future__ import annotations

import tomllib
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
def test_a_step_has_a_deployment_and_a_demo_config(spec: StepSpec) -> None:
    doc = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    entry = [d for d in doc["deployments"] if d["entrypoint"] == f"flows.steps:{spec.key}_flow"]
    assert entry, f"deployments/prefect.yaml has no deployment of {spec.flow_name}"
    config = entry[0]["parameters"]["config"]
    assert (REPO / config).is_file()
    from deployments.serve import demo_config

    assert (REPO / demo_config(spec.flow_name)).is_file()


@pytest.mark.parametrize("spec", PARAMS)
def test_a_step_has_docs(spec: StepSpec) -> None:
    page = REPO / "docs" / f"{spec.key}.md"
    assert page.is_file(), page
    assert spec.key in (REPO / "docs" / "architecture.md").read_text()


@pytest.mark.parametrize("spec", PARAMS)
def test_a_step_is_in_the_layering_contracts_and_has_a_test_world(spec: StepSpec) -> None:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    independent = [c["modules"] for c in contracts["contracts"] if c["type"] == "independence"]
    assert any(f"curator.{spec.key}" in mods for mods in independent)
    assert any(f"curator.steps.{spec.key}" in mods for mods in independent)
    assert spec.key in KEYS
