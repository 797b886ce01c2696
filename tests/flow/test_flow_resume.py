"""A rerun of ``curate flow`` after a SIGKILL in the middle of the filter step: finished
steps are skipped, finished filter partitions are not redone, and the final artifacts
equal those of an uninterrupted run."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from curator.flow.approval import approve_policy
from tests.flow._support import (
    THRESHOLDS,
    FlowCli,
    base_config,
    demo_corpus,
    read_json,
    statuses,
)
from tests.ingest._support import tree, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(500)]

#: manifest fields that legitimately differ between an uninterrupted and a resumed run
TIMING = ("started_at", "completed_at", "seconds", "resumed_partitions", "execution",
          "output_dir")


def _mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _comparable(corpus: Path) -> tuple[dict[str, bytes], dict[str, Any], dict[str, Any]]:
    files = tree(corpus)
    for name in ("run_manifest.json", "curation_ledger.json", ".curate_flow_step.json"):
        files.pop(name)
    manifest = read_json(corpus / "run_manifest.json")
    for key in TIMING:
        manifest["producer"].pop(key, None)
    marker = read_json(corpus / ".curate_flow_step.json")
    marker.pop("completed_at")
    return files, manifest, {"ledger": read_json(corpus / "curation_ledger.json"),
                             "marker": marker}


def test_rerun_after_sigkill_in_the_filter_step(tmp_path: Path, prefect_api: str) -> None:
    from flows.pipeline_flow import curate_flow

    raw = demo_corpus(tmp_path / "raw", docs=1200)
    root = tmp_path / "out"
    # measure, then approve the candidate into a policy path: with a policy path the
    # profile may stay on, so the rerun shows both ingest and profile skipped
    config = base_config(raw, root)
    assert curate_flow(config)["status"] == "ok"
    policy = tmp_path / "policy" / "approved_policy.yaml"
    approve_policy(root / "profile" / "candidate_policies.yaml", policy, THRESHOLDS,
                   approver="R", evidence="E")
    config["steps"]["filter"].update(
        enabled=True, partition_size="8KB",
        heuristic_filters={"approved_policy": str(policy)},
        execution={"executor": "local", "workers": 2})
    path = write_config(tmp_path / "flow.yaml", config)
    measured = {name: _mtimes(root / name) for name in ("ingested", "profile")}

    # an uninterrupted run, kept as the reference, then removed
    reference_report = curate_flow(config)
    assert statuses(reference_report)["curate/filter"] == "ok"
    corpus = root / "filtered_jsonl"
    reference = _comparable(corpus)
    total = read_json(corpus / "run_manifest.json")["output"]["file_count"]
    assert total >= 20, f"only {total} filter shards: too few to cut the step midway"
    shutil.rmtree(corpus)

    with FlowCli(path, tmp_path / "logs", "killed") as cli:
        cli.kill_when(lambda: len(list(corpus.glob("part_*.jsonl"))) >= 4,
                      "4 filter shards", timeout=240)
    done = len(list(corpus.glob("part_*.jsonl")))
    assert 4 <= done < total, f"{done} of {total} shards written: not cut midway"
    assert not (corpus / "run_manifest.json").exists()
    assert not (corpus / ".curate_flow_step.json").exists()
    # what a writer killed mid-write leaves (the killed process's pid is dead): the
    # rerun must clear it, wherever the kill happened to land
    dead = cli.popen.pid
    for folder in (corpus, corpus / "rejected"):
        folder.mkdir(exist_ok=True)
        (folder / f".part_0.jsonl.tmp-{dead}").write_text('{"text": "half a rec')

    with FlowCli(path, tmp_path / "logs", "resumed") as cli:
        code = cli.wait(240)
        assert code == 0, cli.stderr()[-3000:]
        assert "curate/ingest" in cli.stdout() and "skipped" in cli.stdout()
    report = read_json(root / "flow_report.json")
    assert report["status"] == "ok", report.get("error")
    assert statuses(report)["curate/ingest"] == "skipped"
    assert statuses(report)["curate/profile"] == "skipped"
    assert statuses(report)["curate/filter"] == "ok"
    assert report["policy_applied"] is True and report["policy_status"] == "approved"
    assert {name: _mtimes(root / name) for name in ("ingested", "profile")} == measured
    manifest = read_json(corpus / "run_manifest.json")
    assert manifest["producer"]["resumed_partitions"] > 0
    assert read_json(corpus / "curation_ledger.json")["balanced"] is True
    resumed = _comparable(corpus)
    assert sorted(resumed[0]) == sorted(reference[0])
    assert resumed == reference
    assert not list((root / "checkpoints").glob("filter*"))
