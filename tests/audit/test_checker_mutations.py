"""The audit checkers' behaviours that no test guarded (issue 29, the surviving
mutations of the audit checkers): each test fails with its mutation applied.

- checks.py: a rejected id containing ``|`` attributed by the last ``|`` (not the first);
  the input's failed lines differing from the rejected dir's are a finding;
- decontamination.py: a removed id listed twice is reported (``n > 1``); a report saying
  ``holdout.modified: true`` is flagged even with the digest unchanged;
- subset.py: the unplanned-document check reads a tier's first id too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curator.audit.checks import AuditFacts, check_records
from curator.audit.decontamination import check_decontamination
from curator.audit.scan import FileScan
from curator.audit.subset import check_subset
from curator.models import RunManifest
from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from curator.steps.subset import SubsetConfig, run_subset
from tests.steps._worlds import decontamination_world

INLINE = {"executor": "inline"}


# -- checks.py: record-level accounting ------------------------------------------------
def _facts(ref: FileScan, out: FileScan, rej: FileScan) -> AuditFacts:
    return AuditFacts(mode="integrity", target_glob="out", target=[out.path],
                      reference=[ref.path], rejected=[rej.path],
                      scans={s.path: s for s in (ref, out, rej)}, id_field="id",
                      manifest_path="run_manifest.json", manifest=RunManifest())


def test_a_rejected_id_containing_a_bar_is_attributed_by_the_last_bar() -> None:
    # the scan keys a rejected record as ``<id as canonical JSON>|<gate>``
    ref = FileScan("in.jsonl", rows=3, documents=3, ids={'"a|b|c"': 1, '"d"': 1, '"e|"': 1})
    out = FileScan("out.jsonl", rows=1, ids={'"d"': 1})
    rej = FileScan("rejected/language.jsonl", rows=2, removed_by={"language": 2},
                   removed_ids={'"a|b|c"|language': 1, '"e|"|language': 1})
    block, findings = check_records(_facts(ref, out, rej))
    assert findings == [] and block["balanced"]
    assert block["missing_count"] == block["unexpected_count"] == 0


def test_failed_lines_that_differ_from_the_rejected_dirs_are_a_finding() -> None:
    ref = FileScan("in.jsonl", rows=3, documents=1, ids={'"d"': 1},
                   rejections={"not_json": 2})
    out = FileScan("out.jsonl", rows=1, ids={'"d"': 1})
    rej = FileScan("rejected/failed.jsonl", rows=1, failed={"not_json": 1})
    block, findings = check_records(_facts(ref, out, rej))
    assert [f["name"] for f in findings] == ["record_accounting_mismatch"]
    assert findings[0]["input"] == {"not_json": 2}
    assert findings[0]["rejected"] == {"not_json": 1}
    assert block["balanced"] is False


# -- decontamination.py ----------------------------------------------------------------
@pytest.fixture(scope="module")
def decontaminated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("decontamination")
    train, holdout = decontamination_world(folder / "w")
    out = folder / "root" / "decontaminated"
    run_decontamination(DecontaminationConfig(
        train_glob=str(train), holdout_glob=str(holdout), output_dir=str(out), id_field="id",
        partition_size="64KB", execution=INLINE))
    return out


def _copy(src: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(src, to)
    report = json.loads((to / "decontamination_report.json").read_text())
    report["paths"].update(output_dir=str(to), removed_dir=str(to / "removed"))
    (to / "decontamination_report.json").write_text(json.dumps(report))
    return to


def _names(block: tuple[Any, list[dict[str, Any]]]) -> list[str]:
    return [f["name"] for f in block[1]]


def test_a_removed_id_listed_twice_is_reported(decontaminated: Path, tmp_path: Path) -> None:
    run = _copy(decontaminated, tmp_path / "run")
    assert _names(check_decontamination(run / "decontamination_report.json")) == []
    removed = sorted((run / "removed").glob("*.jsonl"))[0]
    first = removed.read_text().splitlines(keepends=True)[0]
    with open(removed, "a", encoding="utf-8") as f:
        f.write(first)  # the same id listed a second time
    _, findings = check_decontamination(run / "decontamination_report.json")
    twice = [f for f in findings if f["name"] == "decontamination_removed_listed_twice"]
    assert len(twice) == 1 and twice[0]["examples"] == [str(json.loads(first)["id"])]


def test_a_report_that_says_the_holdout_was_modified_is_flagged(decontaminated: Path,
                                                                tmp_path: Path) -> None:
    run = _copy(decontaminated, tmp_path / "run")
    path = run / "decontamination_report.json"
    report = json.loads(path.read_text())
    assert report["splits"]["holdout"]["modified"] is False
    report["splits"]["holdout"]["modified"] = True  # the digest still matches the files
    path.write_text(json.dumps(report))
    block, findings = check_decontamination(path)
    assert _names((block, findings)) == ["decontamination_holdout_modified"]
    assert block is not None and block["holdout_unchanged"] is False


# -- subset.py -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def subset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("subset")
    train, _ = decontamination_world(folder / "w", files=2, docs=60)
    out = folder / "subset"
    run_subset(SubsetConfig(input_glob=str(train), output_dir=str(out), id_field="id",
                            token_budgets=[1500, 4000], length_bands=[64, 256],
                            execution=INLINE))
    return out / "subset_report.json"


def test_a_tiers_first_document_is_checked_against_the_plan(subset: Path) -> None:
    assert _names(check_subset(subset)) == []
    report = json.loads(subset.read_text())
    tier = Path(min(report["tiers"], key=lambda t: t["budget"])["output"])
    shard = sorted(tier.glob("*.jsonl"))[0]
    original = shard.read_text(encoding="utf-8")
    first = json.loads(original.splitlines()[0])
    # the tier's first id replaced by one no stratum of plan.json holds
    shard.write_text(original.replace(json.dumps(first["id"]), '"unplanned-first"', 1),
                     encoding="utf-8")
    try:
        findings = [f for f in check_subset(subset)[1]
                    if f["name"] == "subset_unplanned_document"]
    finally:
        shard.write_text(original, encoding="utf-8")
    assert findings and "unplanned-first" in findings[0]["message"]
    assert "1 ids in no stratum" in findings[0]["message"]
