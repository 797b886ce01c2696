"""``curate audit`` on a real filter run: a clean output passes in every mode with the
numbers computed here independently; each tampering is caught with its finding;
containment; the verdict (exit 1 after a complete report) and the refusals (exit 2)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.errors import CuratorError
from curator.steps.audit import AuditConfig, run_audit
from tests.filter._support import approve, corpus_records, profile_candidate, run, write_shards

MODES = ["integrity", "digest", "containment", "all"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A corpus (with a line that is not JSON and a duplicated record), an approved
    policy, and the real filter's output."""
    root = tmp_path_factory.mktemp("audit")
    records = corpus_records(400, seed=21)
    records.append(dict(records[3]))  # the same record twice: multisets, not sets
    inp = write_shards(root / "in", records, shards=3)
    with open(inp / "part_1.jsonl", "a", encoding="utf-8") as f:
        f.write("this is not json\n")
    policy = approve(profile_candidate(inp, root), root / "approved_policy.yaml")
    out = root / "filtered"
    run(inp, out, policy, partition_size="30KB")
    return {"root": root, "inp": inp, "out": out, "policy": policy, "records": records}


def copy_output(world: dict[str, Any], tmp: Path) -> Path:
    """A copy of the filter's output to tamper with (the manifest's rejected_dir points
    at the copy's)."""
    dst = tmp / "filtered"
    shutil.copytree(world["out"], dst)
    manifest = json.loads((dst / "run_manifest.json").read_text())
    manifest["rejected_dir"] = str(dst / "rejected")
    (dst / "run_manifest.json").write_text(json.dumps(manifest))
    return dst


def audit(world: dict[str, Any], target: Path, out: Path, executor: Any = None, **keys: Any
          ) -> tuple[dict[str, Any], CuratorError | None]:
    cfg = {"target_glob": str(target), "output_dir": str(out),
           "declared_manifest": str(target / "run_manifest.json"),
           "ledger_glob": str(target / "curation_ledger.json"),
           "reference_glob": str(world["inp"]), "approved_policy": str(world["policy"]),
           "digest_root": str(target), "mode": "all", "comparison_fields": ["id", "text"],
           "execution": {"executor": "inline"}, **keys}
    error = None
    try:
        returned = run_audit(AuditConfig(**cfg), executor)
    except CuratorError as exc:
        if exc.error_id != "audit_findings":
            raise
        error = exc
        returned = None
    report = json.loads((out / "audit_report.json").read_text())
    if returned is not None:
        assert returned == report
    return report, error


def names(report: dict[str, Any]) -> set[str]:
    return {f["name"] for f in report["findings"]}


def shards(folder: Path) -> list[Path]:
    return sorted(folder.glob("part_*.jsonl"))


def lines(path: Path) -> list[bytes]:
    return [x for x in path.read_bytes().split(b"\n") if x.strip()]


# -- a clean output passes, with numbers computed independently ---------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_clean_filter_output_passes_in_every_mode(world: dict[str, Any], tmp_path: Path,
                                                    mode: str) -> None:
    out = world["out"]
    report, error = audit(world, out, tmp_path / "audit", mode=mode)
    assert error is None, report["findings"]
    assert report["passed"] is True and report["findings"] == []
    assert report["mode"] == mode and report["step_id"] == "curate/audit"
    assert report["producer"]["completed_at"] and report["schema_version"] == 1
    files = shards(out)
    kept = [json.loads(x) for p in files for x in lines(p)]
    t = report["target"]
    assert t["file_count"] == len(files)
    assert t["row_count"] == len(kept)
    assert t["bytes"] == sum(p.stat().st_size for p in files)
    assert t["unreadable_count"] == 0 and t["bad_record_count"] == 0 and t["unreadable"] == []
    assert t["per_source"] == dict(Counter(r["source"] for r in kept))
    if mode in ("digest", "all"):
        rows = sorted(f"{p.name}\tsha256:{hashlib.sha256(p.read_bytes()).hexdigest()}\t"
                      f"{p.stat().st_size}\n" for p in files)
        assert t["digest"] == "sha256:" + hashlib.sha256("".join(rows).encode()).hexdigest()
        assert {s["name"]: s["rows"] for s in t["shards"]} == \
            {p.name: len(lines(p)) for p in files}
    else:
        assert "digest" not in t and "shards" not in t
    input_lines = [x for p in shards(world["inp"]) for x in lines(p)]
    rejected = [json.loads(x) for p in (out / "rejected").glob("*.jsonl") for x in lines(p)]
    removed = [r for r in rejected if r.get("removed_by")]
    assert report["completeness"] == {"claimed": True, "declared_rows": len(kept),
                                      "actual_rows": len(kept), "declared_files": len(files),
                                      "actual_files": len(files)}
    a = report["attribution"]
    assert a["available"] and a["unexplained"] == 0 and a["lost_units"] == 0
    assert a["observed_delta"] == len(input_lines) - len(kept)
    assert a["filtered_by_reason"] == dict(Counter(r["removed_by"] for r in removed))
    assert a["declared_failed"] == 1  # the line that is not JSON
    acc = report["accounting"]
    assert acc["by_id"] and acc["balanced"] and acc["missing_ids"] == []
    assert acc["input_documents"] == len(world["records"])
    assert acc["output_records"] + acc["rejected_records"] == len(world["records"])
    assert acc["input_failed_lines"] == {"unparsable_line": 1}
    assert report["policy"]["checked"] and report["policy"]["agrees"]
    fingerprint = yaml.safe_load(world["policy"].read_text())["corpus"]["fingerprint"]
    assert report["policy"]["corpus_fingerprint"] == {
        "policy": fingerprint, "reference": fingerprint, "agrees": True}
    assert report["observations"]["reference_delta"]["delta"] == len(input_lines) - len(kept)
    assert [s["made"] for s in report["strengths"]] == [True, True, True, True]
    if mode in ("containment", "all"):
        c = report["containment"]
        assert c["verifiable"] and c["contained"] and c["missing_row_count"] == 0
        assert c["subset_rows"] == len(kept) and c["superset_rows"] == len(input_lines)
    else:
        assert "containment" not in report
    assert (tmp_path / "audit" / "audit_summary.md").read_text().startswith(
        f"# Audit ({mode}): PASSED")


def _same(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what differs between runs: times, where, how it ran."""
    return {k: v for k, v in report.items() if k != "producer"}


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_the_process_pool_and_ray_give_the_inline_report(
    world: dict[str, Any], tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    from executors import make_executor

    if backend == "ray":
        request.getfixturevalue("ray_local")
    inline, _ = audit(world, world["out"], tmp_path / "inline")
    with make_executor(backend, 2, None) as executor:
        other, _ = audit(world, world["out"], tmp_path / backend, executor,
                         execution={"executor": backend, "workers": 2})
    assert other["producer"]["execution"]["executor"] == backend
    assert other["producer"]["execution"]["partitions"] > 1
    assert _same(other) == _same(inline)


def test_without_manifest_and_ledger_it_claims_less(world: dict[str, Any],
                                                    tmp_path: Path) -> None:
    report, error = audit(world, world["out"], tmp_path / "a", declared_manifest=None,
                          ledger_glob=None, reference_glob=None, mode="integrity",
                          approved_policy=None)
    assert error is None and report["passed"]
    assert [s["made"] for s in report["strengths"]] == [True, False, False, False]
    assert report["completeness"] == {"claimed": False, "reason": "no declared_manifest"}
    assert report["attribution"]["available"] is False


# -- each tampering, its finding ----------------------------------------------------------


def _delete_shard(d: Path) -> None:
    shards(d)[0].unlink()


def _extra_shard(d: Path) -> None:
    shutil.copy(shards(d)[0], d / "part_999.jsonl")


def _truncate_final_record(d: Path) -> None:
    p = shards(d)[-1]
    p.write_bytes(p.read_bytes()[:-20])


def _unparsable_line(d: Path) -> None:
    p = shards(d)[0]
    p.write_bytes(b"{not json\n" + p.read_bytes())


def _remove_row(d: Path) -> None:
    p = shards(d)[0]
    p.write_bytes(b"".join(x + b"\n" for x in lines(p)[1:]))


def _add_row(d: Path) -> None:
    p = shards(d)[0]
    row = json.loads(lines(p)[0])
    row["id"], row["text"] = "planted", row["text"] + " planted"
    p.write_bytes(p.read_bytes() + json.dumps(row).encode() + b"\n")


def _ledger_count(d: Path) -> None:
    path = d / "curation_ledger.json"
    ledger = json.loads(path.read_text())
    gate = next(iter(ledger["filtered_by_reason"]))
    ledger["filtered_by_reason"][gate] += 1
    path.write_text(json.dumps(ledger))


def _delete_rejected(d: Path) -> None:
    p = next(p for p in sorted((d / "rejected").glob("*.jsonl"))
             if any(b"removed_by\":\"" in x for x in lines(p)))
    kept = lines(p)
    drop = next(i for i, x in enumerate(kept) if b"removed_by\":\"" in x)
    p.write_bytes(b"".join(x + b"\n" for i, x in enumerate(kept) if i != drop))


def _incomplete_manifest(d: Path) -> None:
    path = d / "run_manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["producer"]["completed_at"]
    path.write_text(json.dumps(manifest))


TAMPERING = {
    "deleted shard": (_delete_shard, {"shard_missing", "manifest_mismatch", "unexplained_loss",
                                      "record_accounting_mismatch"}),
    "extra shard": (_extra_shard, {"unexpected_shard", "manifest_mismatch",
                                   "unaccounted_gain", "record_accounting_mismatch"}),
    "truncated final record": (_truncate_final_record, {"unreadable_shard",
                                                        "shard_digest_mismatch"}),
    "unparsable line": (_unparsable_line, {"unreadable_shard", "shard_rows_mismatch",
                                           "containment_unverifiable"}),
    "one row removed": (_remove_row, {"shard_rows_mismatch", "shard_digest_mismatch",
                                      "manifest_mismatch", "unexplained_loss",
                                      "record_accounting_mismatch"}),
    "one row added": (_add_row, {"shard_rows_mismatch", "manifest_mismatch",
                                 "unaccounted_gain", "record_accounting_mismatch",
                                 "containment_unverifiable"}),  # the input has a bad line
    "ledger count changed": (_ledger_count, {"ledger_imbalanced", "attribution_disagreement",
                                             "rejected_gate_disagreement"}),
    "rejected record deleted": (_delete_rejected, {"record_accounting_mismatch",
                                                   "rejected_gate_disagreement"}),
    "manifest without completed_at": (_incomplete_manifest, {"manifest_incomplete"}),
}


@pytest.mark.parametrize("case", list(TAMPERING))
def test_each_tampering_is_caught(world: dict[str, Any], tmp_path: Path, case: str) -> None:
    tamper, expected = TAMPERING[case]
    target = copy_output(world, tmp_path)
    tamper(target)
    report, error = audit(world, target, tmp_path / "audit")
    assert error is not None and error.error_id == "audit_findings" and error.exit_code == 1
    assert expected <= names(report), (case, names(report))
    assert report["passed"] is False
    assert report["producer"]["completed_at"], "the report is complete; the verdict failed"
    assert "error" not in report
    md = (tmp_path / "audit" / "audit_summary.md").read_text()
    assert md.startswith("# Audit (all): FAILED") and all(n in md for n in expected)


def test_a_truncated_record_is_reported_with_its_offset(world: dict[str, Any],
                                                        tmp_path: Path) -> None:
    target = copy_output(world, tmp_path)
    p = shards(target)[-1]
    data = p.read_bytes()[:-20]
    p.write_bytes(data)
    report, _ = audit(world, target, tmp_path / "audit", mode="integrity")
    [fault] = report["target"]["unreadable"]
    assert fault["kind"] == "truncated final record"
    assert fault["offset"] == data.rfind(b"\n") + 1


def test_missing_ids_are_named(world: dict[str, Any], tmp_path: Path) -> None:
    target = copy_output(world, tmp_path)
    first = json.loads(lines(shards(target)[0])[0])
    _remove_row(target)
    report, _ = audit(world, target, tmp_path / "audit")
    assert report["accounting"]["missing_ids"] == [json.dumps(first["id"])]


def test_a_policy_edited_after_the_run(world: dict[str, Any], tmp_path: Path) -> None:
    edited = tmp_path / "approved_policy.yaml"
    doc = yaml.safe_load(world["policy"].read_text())
    doc["approval"]["evidence"] = "edited afterwards"
    edited.write_text(yaml.safe_dump(doc))
    report, error = audit(world, world["out"], tmp_path / "audit", approved_policy=str(edited))
    assert error is not None and names(report) == {"policy_digest_mismatch"}


def test_a_policy_approved_for_another_corpus(world: dict[str, Any], tmp_path: Path) -> None:
    other = tmp_path / "approved_policy.yaml"
    doc = yaml.safe_load(world["policy"].read_text())
    doc["corpus"]["fingerprint"] = "sha256:" + "0" * 64
    other.write_text(yaml.safe_dump(doc))
    report, _ = audit(world, world["out"], tmp_path / "audit", approved_policy=str(other))
    assert names(report) == {"policy_digest_mismatch", "policy_corpus_mismatch"}
    assert report["policy"]["corpus_fingerprint"]["agrees"] is False


def test_a_ledger_that_is_not_json(world: dict[str, Any], tmp_path: Path) -> None:
    target = copy_output(world, tmp_path)
    (target / "curation_ledger.json").write_text("{ not json")
    report, _ = audit(world, target, tmp_path / "audit", mode="integrity")
    assert "ledger_unreadable" in names(report)


# -- containment --------------------------------------------------------------------------


def _keyed(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "part_0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


ROWS = [{"id": f"d{i}", "text": f"document {i}"} for i in range(6)]


def contain(tmp: Path, target: list[dict[str, Any]], reference: list[dict[str, Any]]
            ) -> tuple[dict[str, Any], CuratorError | None]:
    t, r = _keyed(tmp / "t", target), _keyed(tmp / "r", reference)
    cfg = AuditConfig(target_glob=str(t), reference_glob=str(r), output_dir=str(tmp / "out"),
                      mode="containment", comparison_fields=["id", "text"], id_field="id",
                      execution={"executor": "inline"})
    try:
        run_audit(cfg)
        error = None
    except CuratorError as exc:
        error = exc
    return json.loads((tmp / "out" / "audit_report.json").read_text()), error


def test_a_multiset_subset_is_contained(tmp_path: Path) -> None:
    report, error = contain(tmp_path, ROWS[:4] + ROWS[:1], ROWS + ROWS[:1])
    assert error is None, report["findings"]
    c = report["containment"]
    assert c["verifiable"] and c["contained"] and c["missing_row_count"] == 0
    assert c["subset_rows"] == 5 and c["superset_rows"] == 7
    assert report["completeness"]["claimed"] is False


def test_a_missing_row_is_a_violation(tmp_path: Path) -> None:
    report, error = contain(tmp_path, [*ROWS[:3], {"id": "x", "text": "not there"}], ROWS)
    assert error is not None and names(report) == {"containment_violation"}
    assert report["containment"]["missing_row_count"] == 1


def test_a_duplicated_id_is_reported(tmp_path: Path) -> None:
    report, _ = contain(tmp_path, ROWS[:3] + ROWS[:1], ROWS)
    c = report["containment"]
    assert c["duplicate_ids"] == 1 and c["missing_row_count"] == 1
    assert names(report) == {"containment_violation"}


def test_missing_keys_make_containment_unverifiable(tmp_path: Path) -> None:
    report, _ = contain(tmp_path, [*ROWS[:3], {"text": "no id"}], ROWS)
    c = report["containment"]
    assert c["verifiable"] is False and c["contained"] is False and c["missing_key_count"] == 1
    assert names(report) == {"containment_unverifiable"}


# -- refusals and the unfinished report --------------------------------------------------


@pytest.mark.parametrize(("keys", "error_id"), [
    ({"mode": "containment", "comparison_fields": []}, "containment_needs_comparison_fields"),
    ({"mode": "all", "reference_glob": None}, "containment_needs_a_reference"),
    ({"declared_manifest": "/nonexistent/run_manifest.json"}, "declared_manifest_not_found"),
    ({"target_glob": "/nonexistent/*.jsonl"}, "target_glob_no_matches"),
])
def test_refusals_exit_2_and_write_nothing(world: dict[str, Any], tmp_path: Path,
                                           keys: dict[str, Any], error_id: str) -> None:
    with pytest.raises(CuratorError) as info:
        audit(world, world["out"], tmp_path / "audit", **keys)
    assert info.value.error_id == error_id and info.value.exit_code == 2
    assert not (tmp_path / "audit").exists()


def test_an_interrupted_audit_resumes_to_the_same_report(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from curator.steps.base import StepRun

    clean, _ = audit(world, world["out"], tmp_path / "clean")
    original = StepRun.phase

    def phase(self: StepRun, *args: Any, **kwargs: Any) -> Any:
        original(self, *args, **kwargs)
        raise KeyboardInterrupt

    ckpt = {"executor": "inline", "checkpoint_path": str(tmp_path / "ckpt")}
    with monkeypatch.context() as m:
        m.setattr(StepRun, "phase", phase)
        with pytest.raises(KeyboardInterrupt):
            audit(world, world["out"], tmp_path / "resumed", execution=ckpt)
    stopped = json.loads((tmp_path / "resumed" / "audit_report.json").read_text())
    assert stopped["error"]["error_id"] == "interrupted_sigint"
    assert "completed_at" not in stopped["producer"] and stopped["passed"] is False
    resumed, error = audit(world, world["out"], tmp_path / "resumed", execution=ckpt)
    assert error is None and resumed["producer"]["resumed_partitions"] > 0
    assert _same(resumed) == _same(clean)
