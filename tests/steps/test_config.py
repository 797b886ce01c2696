"""Configuration is the same everywhere: one loader for ``curate <step>``, ``CURATE_*``
variables and ``curate flow``; an unknown key is refused before anything runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.config import load_config, validate_config
from curator.errors import CuratorError
from curator.flow.plan import load_flow_config, plan_flow
from curator.steps.filter import FilterConfig
from curator.steps.ingest import IngestConfig
from tests.flow._support import base_config, demo_corpus, read_json
from tests.ingest._support import Cli, write_config


def test_an_unknown_key_is_refused_with_the_closest_valid_key() -> None:
    with pytest.raises(CuratorError) as info:
        validate_config(IngestConfig, {"input": "x", "on_duplicates": "drop"})
    assert info.value.error_id == "unknown_config_key" and info.value.exit_code == 2
    assert "on_duplicates (did you mean 'on_duplicate'?)" in info.value.message


def test_an_unknown_nested_key_names_its_path_and_suggestion() -> None:
    with pytest.raises(CuratorError) as info:
        validate_config(FilterConfig, {"input_glob": "x",
                                       "quality_filters": {"min_word": 3, "max_words": 9},
                                       "execution": {"worker": 2}})
    message = info.value.message
    assert "quality_filters.min_word (did you mean 'min_words'?)" in message
    assert "execution.worker (did you mean 'workers'?)" in message


def test_a_key_nothing_resembles_gets_no_suggestion(tmp_path: Path) -> None:
    path = write_config(tmp_path / "c.yaml", {"input": "x", "zzzzqqq": 1})
    with pytest.raises(CuratorError) as info:
        load_config(IngestConfig, path)
    assert info.value.error_id == "unknown_config_key"
    assert "zzzzqqq" in info.value.message and "did you mean" not in info.value.message


def test_the_environment_fills_what_the_file_and_the_flow_leave_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATE_EXECUTION__EXECUTOR", "ray")
    monkeypatch.setenv("CURATE_EXECUTION__WORKERS", "3")
    cfg = load_config(IngestConfig, None, {"input": "x", "execution": {"workers": 1}})
    assert (cfg.execution.executor, cfg.execution.workers) == ("ray", 1)  # file beats env
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.jsonl").write_text('{"text": "t"}\n')
    plan = plan_flow(load_flow_config({"corpus": {"input": str(raw)},
                                       "output_root": str(tmp_path / "out"),
                                       "steps": {"ingest": {"enabled": True}}}))
    step = next(s for s in plan.steps if s.key == "ingest")
    flowed = validate_config(IngestConfig, step.config)
    assert flowed.execution.executor == "ray"  # the flow no longer pins the default
    assert flowed.execution.workers == 3
    assert flowed.execution.checkpoint_path == str(tmp_path / "out" / "checkpoints")


def test_misspelled_keys_are_preflight_problems_even_in_a_disabled_step(
    tmp_path: Path
) -> None:
    raw = demo_corpus(tmp_path / "raw", docs=60)
    config = base_config(raw, tmp_path / "out")
    config["steps"]["ingest"]["shard_sise"] = 10
    config["steps"]["filter"]["quality_filter"] = {}  # filter is disabled here
    plan = plan_flow(load_flow_config(config))
    found = {m for i, m in plan.problems if i == "unknown_config_key"}
    assert any("steps.ingest.shard_sise (did you mean 'shard_size'?)" in m for m in found)
    assert any("steps.filter.quality_filter (did you mean 'quality_filters'?)" in m
               for m in found)
    config["corpus"]["langauge"] = "en"
    with pytest.raises(CuratorError) as info:
        load_flow_config(config)
    assert info.value.error_id == "unknown_config_key"
    assert "corpus.langauge (did you mean 'language'?)" in info.value.message


def test_a_misspelled_key_stops_the_flow_before_any_step_runs(
    tmp_path: Path, prefect_api: str
) -> None:
    raw = demo_corpus(tmp_path / "raw", docs=60)
    config = base_config(raw, tmp_path / "out")
    config["steps"]["profile"]["max_totl_docs"] = 10
    path = write_config(tmp_path / "flow.yaml", config)
    with Cli(path, tmp_path / "logs", "flow", command="flow") as cli:
        code = cli.wait(300)
        err = cli.stderr()
    assert code == 2, err[-3000:]
    assert "[unknown_config_key]" in err and "max_total_docs" in err
    assert not (tmp_path / "out" / "ingested").exists()


def _ran(out: Path) -> dict[str, Any]:
    return json.loads((out / "ingest_report.json").read_text())["producer"]


def test_the_same_effective_config_through_the_flow_and_the_step_cli(
    tmp_path: Path, prefect_api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATE_EXECUTION__EXECUTOR", "inline")
    raw = demo_corpus(tmp_path / "raw", docs=60)
    config = base_config(raw, tmp_path / "root", profile=False)
    del config["execution"]  # the executor comes from the environment only
    with Cli(write_config(tmp_path / "flow.yaml", config), tmp_path / "logs", "flow",
             command="flow") as cli:
        assert cli.wait(300) == 0, cli.stderr()[-3000:]
    out = tmp_path / "root" / "ingested"
    by_flow = _ran(out)
    assert by_flow["execution"]["executor"] == "inline"
    # the ingest config the flow ran, as a file for `curate ingest` (same output_dir)
    plan = read_json(tmp_path / "root" / "flow_plan.json")
    step = next(s for s in plan["steps"] if s["key"] == "ingest")["config"]
    step.pop("execution")
    path = tmp_path / "ingest.yaml"
    path.write_text(yaml.safe_dump(step))
    with Cli(path, tmp_path / "logs", "step") as cli:
        assert cli.wait(300) == 0, cli.stderr()[-3000:]
    by_cli = _ran(out)
    assert by_cli["execution"]["executor"] == "inline"
    assert by_cli["config_hash"] == by_flow["config_hash"]
    assert os.environ["CURATE_EXECUTION__EXECUTOR"] == "inline"
