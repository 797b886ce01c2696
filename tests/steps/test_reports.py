"""Reports are built by pure functions and rendered beside them: their schema is read and
tested here without running a step."""

from __future__ import annotations

from typing import Any

import pytest

import curator.steps  # noqa: F401  (first: a step's report module imports the registry, which imports it back)
from curator.filter.report import FilterFacts, ledger_rows, manifest_and_ledger
from curator.models import RunManifest
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec

PRODUCER = {"step_id": "curate/filter", "completed_at": "2026-12-03T00:00:00Z"}


def _facts(completed: bool, rows: list[int], **counts: Any) -> FilterFacts:
    c = {"input": 100, "kept": sum(rows), "filtered": {"language": 20, "word_count_bounds": 5},
         "failed": {"unparsable_line": 2}, "source_in": {"a": 100}, "source_out": {"a": 73}}
    c.update(counts)
    return FilterFacts(
        counts=c, shards=[{"name": f"part_{i}.jsonl", "rows": n, "sha256": "sha256:x"}
                          for i, n in enumerate(rows)],
        completed=completed, error=None if completed else {"error_id": "partition_failed",
                                                           "message": "m"},
        file_count=2, policy={"status": "unapproved", "thresholds_applied": 0},
        gates=["language", "word_count_bounds"], output_dir="/o", rejected_dir="/o/rejected")


def test_a_completed_runs_manifest_and_ledger_balance() -> None:
    manifest, ledger = manifest_and_ledger(_facts(True, [40, 33]), PRODUCER, input_glob="in/*",
                                           id_field="id", source_field="source",
                                           mode="filter")
    assert manifest["output"] == {"file_count": 2, "row_count": 73, "id_field": "id",
                                  "source_field": "source", "per_source": {"a": 73},
                                  "shards": manifest["output"]["shards"]}
    assert manifest["declared"]["rows_absent_from_output"] == 27
    assert manifest["input"]["unparsable_rows"] == 2 and "error" not in manifest
    assert ledger["balanced"] is True and ledger["n_accounted"] == 100
    by_field = {r["field"]: r["value"] for r in ledger_rows(RunManifest.model_validate(manifest))}
    for key in ("n_input", "n_success", "n_filtered", "n_failed", "n_accounted", "balanced"):
        assert by_field[key] == ledger[key], key


def test_a_failed_run_attributes_what_it_lost_to_its_own_error() -> None:
    manifest, ledger = manifest_and_ledger(_facts(False, [30]), PRODUCER, input_glob="in/*",
                                           id_field=None, source_field=None, mode="filter")
    lost = [u for u in ledger["failed_units"] if u["unit"] == "/o"]
    assert lost == [{"unit": "/o", "reason": "partition_failed", "records": 100 - 30 - 25 - 2}]
    assert ledger["balanced"] is True
    assert manifest["error"]["error_id"] == "partition_failed"
    assert "per_source" not in manifest["input"]


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.key) for s in STEPS])
def test_a_failed_report_renders_for_people(spec: StepSpec) -> None:
    report = {"schema_version": 1, "error": {"error_id": "injected", "message": "it broke"},
              "producer": {"step_id": spec.step_id}}
    shown = spec.rendered(report)
    assert shown.markdown.startswith(f"# {spec.step_id}: FAILED")
    assert "`injected` it broke" in shown.markdown
    assert shown.summary == f"{spec.key}: FAILED [injected] it broke"
