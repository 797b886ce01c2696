"""``curate flow --plan``: derived paths and step configs, nothing run; and preflight,
which reports every problem of a config at once."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from tests.flow._support import (
    APPROVE,
    LANGPACKS,
    FlowCli,
    base_config,
    demo_corpus,
    problem_ids,
    read_json,
)
from tests.ingest._support import write_config

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_corpus(tmp_path_factory.mktemp("flowplan") / "raw", docs=60)


def _plan_cli(config: dict[str, Any], tmp_path: Path, tag: str) -> tuple[int, str, str]:
    path = write_config(tmp_path / f"{tag}.yaml", config)
    with FlowCli(path, tmp_path / "logs", tag, plan=True) as cli:
        code = cli.wait(120)
        return code, cli.stdout(), cli.stderr()


def _preflight(config: dict[str, Any]) -> tuple[CuratorError, dict[str, Any]]:
    from flows.pipeline_flow import curate_flow

    with pytest.raises(CuratorError) as info:
        curate_flow(config, plan=True)
    assert info.value.error_id == "flow_preflight_failed"
    return info.value, read_json(Path(config["output_root"]) / "flow_plan.json")


def _nothing_ran(root: Path) -> None:
    assert sorted(p.name for p in root.iterdir()) == ["flow_plan.json"]


def test_plan_of_a_measure_config_derives_every_path_and_runs_nothing(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    root = tmp_path / "out"
    config = base_config(raw, root)
    config["steps"]["ingest"]["id_prefix"] = "authored-"  # an authored step key wins
    code, out, err = _plan_cli(config, tmp_path, "measure")
    assert code == 0, err[-3000:]
    assert "written to" in out and "ingest, profile" in out
    plan = read_json(root / "flow_plan.json")
    assert plan["schema_version"] == 1 and plan["dry_run"] is True
    assert plan["problems"] == []
    assert plan["output_root"] == str(root)
    arts = plan["artifacts"]
    assert arts["prepared"] == str(root / "ingested")
    assert arts["candidates"] == str(root / "profile" / "candidate_policies.yaml")
    assert arts["approved_policy"] == str(root / "policy" / "approved_policy.yaml")
    assert arts["corpus"] == str(root / "filtered_jsonl")
    steps = {s["key"]: s for s in plan["steps"]}
    assert [s["key"] for s in plan["steps"]] == ["ingest", "profile", "filter", "audit",
                                                "dedup", "decontamination", "subset"]
    assert {k: s["enabled"] for k, s in steps.items()} == {
        "ingest": True, "profile": True, "filter": False, "audit": False, "dedup": False,
        "decontamination": False, "subset": False}
    assert steps["ingest"]["step_id"] == "curate/ingest"
    ingest = steps["ingest"]["config"]
    assert ingest["input"] == str(raw) and ingest["output_dir"] == str(root / "ingested")
    assert ingest["source_from"] == "source" and ingest["keep_fields"] == ["url"]
    assert ingest["id_prefix"] == "authored-" and ingest["on_duplicate"] == "drop"
    profile = steps["profile"]["config"]
    # with ingest on, downstream steps read the prepared shards with the canonical fields
    assert profile["input_glob"] == str(root / "ingested" / "part_*.jsonl")
    assert (profile["text_field"], profile["id_field"], profile["source_field"]) == (
        "text", "id", "source")
    assert profile["output_dir"] == str(root / "profile")
    assert profile["language"] == "en" and profile["langpack_dir"] == LANGPACKS
    assert profile["max_total_docs"] == 200
    for key in ("ingest", "profile", "filter"):  # each step's checkpoint under output_root
        execution = steps[key]["config"]["execution"]
        assert execution["checkpoint_path"] == str(root / "checkpoints")
        assert execution["executor"] == "inline"
    filt = steps["filter"]["config"]
    assert filt["emit_manifest"] == "run_manifest.json"
    assert filt["emit_ledger"] == "curation_ledger.json"
    _nothing_ran(root)


def test_plan_of_an_apply_config_wires_the_policy_and_writes_nothing(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    root = tmp_path / "out"
    candidate = root / "profile" / "candidate_policies.yaml"
    candidate.parent.mkdir(parents=True)
    candidate.write_text("placeholder: the plan only checks that it exists\n")
    config = base_config(raw, root, ingest=False, profile=False, filt=True, approve=APPROVE)
    result = curate_flow(config, plan=True)
    plan = read_json(root / "flow_plan.json")
    assert result == plan and plan["problems"] == []
    filt = next(s for s in plan["steps"] if s["key"] == "filter")["config"]
    # with ingest off the filter reads corpus.input with the corpus's own field names
    assert filt["input_glob"] == str(raw) and filt["source_field"] == "source"
    assert filt["metadata_fields"] == ["url"]
    assert filt["output_dir"] == str(root / "filtered_jsonl")
    assert filt["heuristic_filters"] == {
        "approved_policy": str(root / "policy" / "approved_policy.yaml"),
        "langpack_dir": LANGPACKS}
    assert filt["quality_filters"]["min_words"] == 20
    assert not (root / "policy").exists()  # promote() does not run under --plan
    assert not (root / "filtered_jsonl").exists() and not (root / "flow_report.json").exists()


def test_cli_reports_every_preflight_problem_at_once(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    root = tmp_path / "out"
    config = base_config(tmp_path / "no-such-dir" / "*.jsonl", root, filt=True,
                         approve={"thresholds": {}, "approver": " ", "evidence": ""})
    config["corpus"]["langpack_dir"] = ""  # blank (unset would be the packaged packs)
    config["steps"]["dedupe"] = {"enabled": True}
    config["steps"]["filter"]["quality_filters"] = {"min_words": 20}
    code, _, err = _plan_cli(config, tmp_path, "invalid")
    expected = {"unknown_step", "input_matched_no_files", "missing_langpack_dir",
                "profile_enabled_during_approval", "policy_thresholds_empty",
                "approval_missing_approver", "approval_missing_evidence",
                "incomplete_word_filter"}
    assert code == 2, err[-3000:]
    assert "flow_preflight_failed" in err
    for error_id in expected:
        assert f"[{error_id}]" in err, error_id
    plan = read_json(root / "flow_plan.json")
    ids = [p["error_id"] for p in plan["problems"]]
    assert set(ids) == expected
    assert "missing_langpack_dir" in ids and ids.count("input_matched_no_files") == 1
    assert all(p["message"] for p in plan["problems"])
    assert "working directory" in next(p["message"] for p in plan["problems"]
                                       if p["error_id"] == "input_matched_no_files")
    _nothing_ran(root)


def test_preflight_of_an_apply_config_before_any_profile(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    root = tmp_path / "out"
    stale = root / "filtered_jsonl" / "part_0.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text('{"text": "left over from another run"}\n')
    config = base_config(raw, root, profile=False, filt=True, approve=APPROVE)
    config["corpus"].update(langpack_dir="", language=None)  # blank: names no directory
    config["steps"]["audit"] = {"enabled": True}
    config["steps"]["decontamination"] = {"enabled": True}
    config["steps"]["filter"]["heuristic_filters"] = {"approved_policy": "elsewhere.yaml"}
    config["steps"]["filter"]["quality_filters"] = {"max_words": 500}
    exc, plan = _preflight(config)
    expected = {"approve_before_profile", "decontamination_needs_a_holdout",
                "conflicting_approved_policy", "missing_langpack_dir",
                "incomplete_word_filter", "stale_filter_output"}
    assert problem_ids(exc.details["problems"]) == expected
    assert problem_ids(plan) == expected
    assert plan["dry_run"] is True
    assert stale.read_text() == '{"text": "left over from another run"}\n'


def test_preflight_of_configs_with_nothing_to_do(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    config = base_config(raw, tmp_path / "a", ingest=False, profile=False)
    config["corpus"]["input"] = None
    exc, _ = _preflight(config)
    assert problem_ids(exc.details["problems"]) == {"corpus_input_missing",
                                                    "no_steps_enabled"}

    # with ingest off, a folder with no JSONL (the demo's manifest is YAML) has nothing
    # the profile can read; and interactive approval needs the profile
    only_yaml = tmp_path / "only-yaml"
    only_yaml.mkdir()
    (only_yaml / "notes.yaml").write_text("a: 1\n")
    config = base_config(only_yaml, tmp_path / "b", ingest=False, profile=False, filt=True,
                         approve={"interactive": True})
    exc, plan = _preflight(config)
    assert problem_ids(exc.details["problems"]) == {"input_has_nothing_readable",
                                                    "approve_before_profile"}
    assert problem_ids(plan) == problem_ids(exc.details["problems"])


def test_a_missing_input_path_is_reported_once_with_the_working_directory(
    tmp_path: Path, prefect_api: str
) -> None:
    config = base_config(tmp_path / "raw-not-there", tmp_path / "out", profile=False)
    exc, plan = _preflight(config)
    ids = [p["error_id"] for p in plan["problems"]]
    assert ids == ["input_matched_no_files"], ids
    assert str(Path.cwd()) in plan["problems"][0]["message"]
    assert [p["error_id"] for p in exc.details["problems"]] == ids


def test_compressed_jsonl_is_readable_without_ingest(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    gz = sorted(raw.glob("*.jsonl.gz"))
    assert gz, "the demo corpus has a gzip segment"
    root = tmp_path / "out"
    config = base_config(gz[0], root, ingest=False)
    plan = curate_flow(config, plan=True)
    assert plan["problems"] == []
    profile = next(s for s in plan["steps"] if s["key"] == "profile")["config"]
    assert profile["input_glob"] == str(gz[0])


def test_word_bounds_with_a_pack_without_word_segmentation(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    packs = tmp_path / "packs"
    shutil.copytree(Path(LANGPACKS) / "en", packs / "en")
    manifest = packs / "en" / "pack.toml"
    text = manifest.read_text(encoding="utf-8")
    assert '  "word_segmentation",\n' in text
    manifest.write_text(text.replace('  "word_segmentation",\n', ""), encoding="utf-8")
    root = tmp_path / "out"
    candidate = root / "profile" / "candidate_policies.yaml"
    candidate.parent.mkdir(parents=True)
    candidate.write_text("placeholder: the plan only checks that it exists\n")
    config = base_config(raw, root, ingest=False, profile=False, filt=True, approve=APPROVE)
    config["corpus"]["langpack_dir"] = str(packs)
    _, plan = _preflight(config)  # the filter would refuse only after the earlier steps
    assert problem_ids(plan) == {"incomplete_word_filter"}
    assert "word segmentation" in plan["problems"][0]["message"]

    del config["steps"]["filter"]["quality_filters"]["min_words"]
    del config["steps"]["filter"]["quality_filters"]["max_words"]
    from flows.pipeline_flow import curate_flow

    assert curate_flow(config, plan=True)["problems"] == []


def test_interactive_approval_of_a_candidate_named_by_from(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    candidate = tmp_path / "elsewhere" / "candidate_policies.yaml"
    candidate.parent.mkdir()
    candidate.write_text("placeholder: the plan only checks that it exists\n")
    config = base_config(raw, tmp_path / "out", ingest=False, profile=False, filt=True,
                         approve={"interactive": True, "from": str(candidate)})
    assert curate_flow(config, plan=True)["problems"] == []
    candidate.unlink()
    _, plan = _preflight(config)
    assert problem_ids(plan) == {"approve_before_profile"}


def test_a_policy_path_that_does_not_exist_is_a_missing_upstream_artifact(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    config = base_config(raw, tmp_path / "out", ingest=False, profile=False, filt=True)
    config["steps"]["filter"]["heuristic_filters"] = {
        "approved_policy": str(tmp_path / "nowhere" / "approved_policy.yaml")}
    _, plan = _preflight(config)
    assert problem_ids(plan) == {"missing_upstream_artifact"}
    assert "nowhere" in plan["problems"][0]["message"]


def test_language_codes_that_share_no_subtag_with_the_corpus_language_warn(
    raw: Path, tmp_path: Path, prefect_api: str
) -> None:
    from flows.pipeline_flow import curate_flow

    config = base_config(raw, tmp_path / "out", ingest=False, profile=False, filt=True)
    config["steps"]["filter"]["language_codes"] = ["ru"]
    plan = curate_flow(config, plan=True)
    assert any("share no subtag" in w for w in plan["warnings"]), plan["warnings"]

    config["steps"]["filter"]["language_codes"] = ["en_Latn", "ru"]  # en matches en
    plan = curate_flow(config, plan=True)
    assert not any("share no subtag" in w for w in plan["warnings"]), plan["warnings"]


def test_an_interval_threshold_must_be_two_numbers() -> None:
    from curator.flow.approval import thresholds_from

    assert thresholds_from({"word_count": [50, 1000], "boilerplate_hits": 3}) == {
        "word_count": (50, 1000), "boilerplate_hits": 3}
    with pytest.raises(CuratorError) as info:
        thresholds_from({"word_count": [50, 100, 1000]})
    assert info.value.error_id == "invalid_threshold"


def test_promote_warnings_are_the_flows_and_the_filter_steps(
    raw: Path, tmp_path: Path
) -> None:
    from curator.flow.plan import load_flow_config, plan_flow
    from curator.flow.run import FlowReport

    config = base_config(raw, tmp_path / "out", ingest=False, profile=False, filt=True,
                         approve=APPROVE)
    fplan = plan_flow(load_flow_config(config))
    report = FlowReport(fplan)
    report.promoted("policy.yaml", "sha256:x", ["[threshold_outside_bands] w"])
    for step in fplan.steps:
        report.step(step, "ok" if step.enabled else "disabled", result={})
    entries = {s["step_id"]: s for s in report.data["steps"]}
    assert entries["curate/filter"]["warnings"] == ["[threshold_outside_bands] w"]
    assert entries["curate/ingest"]["warnings"] == []
    assert "[threshold_outside_bands] w" in report.data["warnings"]
