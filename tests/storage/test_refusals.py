"""Steps that cannot use object storage yet refuse a URL up front, naming the step and
the key (``object_storage_unsupported``), before anything is written; so does a flow
whose output_root is a URL. No server is needed: nothing is read or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.flow.plan import FlowConfig, plan_flow
from curator.steps.registry import STEPS

BY_KEY = {s.key: s for s in STEPS}
URL = "s3://bucket/somewhere"

#: a URL in each of these keys is refused (step, key, the step's other required keys)
REFUSED = [
    ("profile", "output_dir", {"input_glob": "in/*.jsonl", "langpack_dir": "langpacks",
                               "language": "en"}),
    ("profile", "input_glob", {"langpack_dir": "langpacks", "language": "en"}),
    ("subset", "output_dir", {"input_glob": "in/*.jsonl", "id_field": "id",
                              "token_budgets": [10]}),
    ("audit", "output_dir", {"target_glob": "in/*.jsonl"}),
    ("audit", "target_glob", {}),
    ("filter", "rejected_dir", {"input_glob": "in/*.jsonl"}),
]


@pytest.mark.parametrize(("step", "key", "others"), REFUSED)
def test_a_step_refuses_a_url_it_cannot_use(step: str, key: str, others: dict,
                                            tmp_path: Path) -> None:
    spec = BY_KEY[step]
    values = {"output_dir": str(tmp_path / "out"), **others, key: URL}
    config = spec.config(**values, execution={"executor": "inline"})
    problems = dict(config.preflight())
    assert "object_storage_unsupported" in problems, problems
    message = problems["object_storage_unsupported"]
    assert f"step {step!r}" in message and key in message and URL in message
    with pytest.raises(CuratorError) as err:
        spec.run(config)
    assert err.value.error_id == "object_storage_unsupported"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("step", ["ingest", "filter"])
def test_ingest_and_filter_accept_urls(step: str) -> None:
    spec = BY_KEY[step]
    key = spec.input_key
    config = spec.config(**{key: f"{URL}/in", "output_dir": f"{URL}/out"})
    assert "object_storage_unsupported" not in dict(config.preflight())


def test_a_flow_refuses_an_output_root_on_object_storage(tmp_path: Path) -> None:
    plan = plan_flow(FlowConfig(output_root=URL, corpus={"input": str(tmp_path)},
                                steps={"ingest": {"enabled": True}}))
    ids = [error_id for error_id, _ in plan.problems]
    assert "object_storage_unsupported" in ids
    assert "output_root" in dict(plan.problems)["object_storage_unsupported"]


@pytest.mark.parametrize("key", ["train_glob", "holdout_glob", "output_dir", "work_dir"])
def test_every_other_step_refuses_a_url_when_it_runs(key: str, tmp_path: Path) -> None:
    """A step with no check of its own in preflight (decontamination) is refused by the
    run's own check of every path-like key, before its output is touched."""
    spec = BY_KEY["decontamination"]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"id": "a", "text": "x"}\n')
    values = {"train_glob": str(tmp_path / "in"), "holdout_glob": str(tmp_path / "in"),
              "id_field": "id", "output_dir": str(tmp_path / "out"), key: URL}
    config = spec.config(**values, execution={"executor": "inline"})
    with pytest.raises(CuratorError) as err:
        spec.run(config)
    assert err.value.error_id == "object_storage_unsupported"
    assert "'decontamination'" in err.value.message and key in err.value.message
    assert not (tmp_path / "out").exists()
