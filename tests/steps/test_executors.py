"""Every registered step writes the same bytes on every executor: inline, the process
pool and Ray (the session's local Ray, joined by the step's RayExecutor); a step that
writes a corpus writes its Parquet copy too (``output_format: jsonl+parquet``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.config import CorpusStepConfig, validate_config
from curator.execution import Executor
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec
from executors import LocalExecutor
from tests.steps._worlds import data_files, make_world

PARAMS = [pytest.param(spec, id=spec.key) for spec in STEPS]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("spec", PARAMS)
def test_every_executor_writes_the_same_bytes(spec: StepSpec, tmp_path: Path,
                                              ray_local: None) -> None:
    from executors.ray import RayExecutor

    world = make_world(spec.key, spec.input_key, tmp_path)
    executors: dict[str, Executor | None] = {
        "inline": None, "local": LocalExecutor(workers=2), "ray": RayExecutor(workers=2)}
    more = ({"output_format": "jsonl+parquet"} if issubclass(spec.config, CorpusStepConfig)
            else {})
    written = {}
    for name, executor in executors.items():
        cfg = validate_config(spec.config, world.config(tmp_path / name, **more))
        result = spec.run(cfg, executor)
        assert result["producer"]["completed_at"], name
        assert result["producer"]["execution"]["executor"] == name
        written[name] = data_files(tmp_path / name)
    assert written["inline"], "the world writes data"
    assert not more or any(k.startswith("parquet/") for k in written["inline"])
    assert written["local"] == written["inline"]
    assert written["ray"] == written["inline"]
