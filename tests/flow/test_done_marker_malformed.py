"""The flow's done-marker (``.curate_flow_step.json``) of the wrong shape: the step is
not done (the flow runs it again), never a traceback (issue 25: read through
:class:`curator.models.StepMarker`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.flow.plan import MARKER, StepPlan, mark_done, step_is_done
from curator.steps.registry import BY_KEY


def _step(out: Path) -> StepPlan:
    return StepPlan(BY_KEY["ingest"], True, {"output_dir": str(out)})


@pytest.mark.parametrize("text", ["[1]", '{"config_hash": 5}', "{", '"x"', "null"])
def test_a_malformed_marker_means_not_done(tmp_path: Path, text: str) -> None:
    (tmp_path / MARKER).write_text(text)
    assert step_is_done(_step(tmp_path)) is False


def test_the_marker_written_is_read_back(tmp_path: Path) -> None:
    step = _step(tmp_path)
    mark_done(step, "2026-01-01T00:00:00Z")
    marker = json.loads((tmp_path / MARKER).read_text())
    assert marker == {"step_id": "curate/ingest", "config_hash": step.config_hash(),
                      "completed_at": "2026-01-01T00:00:00Z"}
    assert step_is_done(step) is False  # the marker alone: no complete artifact beside it
