"""Keys that cannot name object storage refuse a URL up front, naming the step and the
key (``object_storage_unsupported``), in the step's preflight (so in a flow's preflight
too) and again when it runs, before anything is written. The keys that can take a URL
pass preflight, and a flow plans a URL output_root. No server is needed: nothing is
read or written on a bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.flow.plan import FlowConfig, plan_flow
from curator.steps.registry import STEPS

BY_KEY = {s.key: s for s in STEPS}
URL = "s3://bucket/somewhere"

#: a URL in each of these keys is refused (step, key, the step's other required keys):
#: what must stay on a local disk (packs, policies, caches, work files, a flow's root)
REFUSED = [
    ("profile", "langpack_dir", {"input_glob": "in/*.jsonl", "language": "en"}),
    ("subset", "token_cache", {"input_glob": "in/*.jsonl", "id_field": "id",
                               "token_budgets": [10]}),
    ("audit", "approved_policy", {"target_glob": "in/*.jsonl"}),
    ("audit", "output_root", {}),
    ("decontamination", "work_dir", {"train_glob": "in", "holdout_glob": "ho",
                                     "id_field": "id"}),
    ("filter", "rejected_dir", {"input_glob": "in/*.jsonl"}),
]
#: every key that may name a URL, per step
ACCEPTED = {
    "ingest": ("input", "output_dir"),
    "filter": ("input_glob", "output_dir"),
    "profile": ("input_glob", "output_dir"),
    "decontamination": ("train_glob", "holdout_glob", "output_dir"),
    "subset": ("input_glob", "output_dir"),
    "audit": ("target_glob", "reference_glob", "ledger_glob", "declared_manifest",
              "rejected_dir", "digest_root", "output_dir"),
}
OTHERS = {"profile": {"langpack_dir": "langpacks", "language": "en"},
          "decontamination": {"id_field": "id"},
          "subset": {"id_field": "id", "token_budgets": [10]}}


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


@pytest.mark.parametrize("step", sorted(ACCEPTED))
def test_every_step_accepts_urls_where_it_can(step: str) -> None:
    spec = BY_KEY[step]
    values = {**OTHERS.get(step, {}), **{k: f"{URL}/{k}" for k in ACCEPTED[step]}}
    if step == "decontamination":
        values["holdout_glob"] = f"{URL}/holdout"
    config = spec.config(**values)
    problems = dict(config.preflight())
    assert "object_storage_unsupported" not in problems, problems


def test_a_flow_plans_an_output_root_on_object_storage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL output_root is planned, not refused (tests/storage/test_flow_s3.py runs it):
    each step's output dir, the artifacts and the checkpoint under the URL; the approved
    policy a file of the root's local copy, named by its URL in flow_plan.json. fsspec's
    in-memory store: no server, and nothing is there (no step is done)."""
    monkeypatch.setenv("CURATE_OUTPUT_COPY_DIR", str(tmp_path / "copies"))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"text": "x"}\n')
    url = "memory://bucket/run"
    plan = plan_flow(FlowConfig(output_root=url + "/", corpus={"input": str(tmp_path / "in")},
                                steps={"ingest": {"enabled": True}}))
    assert plan.problems == []
    assert plan.root_url == url and plan.root.is_relative_to(tmp_path / "copies")
    assert plan.step("ingest").config["output_dir"] == f"{url}/ingested"
    assert plan.step("ingest").config["execution"]["checkpoint_path"] == f"{url}/checkpoints"
    assert plan.artifacts["candidates"] == f"{url}/profile/candidate_policies.yaml"
    assert plan.artifacts["approved_policy"] == str(plan.root / "policy/approved_policy.yaml")
    written = plan.to_json(dry_run=True)
    assert written["output_root"] == url
    assert written["artifacts"]["approved_policy"] == f"{url}/policy/approved_policy.yaml"


def test_a_refused_key_is_refused_when_it_runs_too(tmp_path: Path) -> None:
    """The run checks every path-like key again (a Python caller may skip preflight):
    decontamination's work_dir, before its output is touched."""
    spec = BY_KEY["decontamination"]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"id": "a", "text": "x"}\n')
    values = {"train_glob": str(tmp_path / "in"), "holdout_glob": str(tmp_path / "in"),
              "id_field": "id", "output_dir": str(tmp_path / "out"), "work_dir": URL}
    config = spec.config(**values, execution={"executor": "inline"})
    with pytest.raises(CuratorError) as err:
        spec.run(config)
    assert err.value.error_id == "object_storage_unsupported"
    assert "'decontamination'" in err.value.message and "work_dir" in err.value.message
    assert not (tmp_path / "out").exists()
