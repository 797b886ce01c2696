"""A copied output root is audited as itself (issue 29, item 2).

The artifacts under a root record absolute paths of the root they were written in; a
whole-root audit of a copy (``cp -r``) used to follow them and prove the original
(PASSED, ``shards_match_report: true``, with the copy tampered). Every corpus kind is
tampered with in the copy, the original left intact: each is a finding. A recorded path
that leaves the root is ``audit_path_outside_root``, not read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator.steps.audit import AuditConfig, run_audit
from tests.audit._roots import build_root, copy_root, with_flow_plan

ALL = {"mode": "all", "comparison_fields": ["id", "text"]}


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two originals: built step by step (no flow_plan.json), and the same with the
    flow_plan.json a flow writes (every path in its configs absolute, the original's)."""
    built = build_root(tmp_path_factory.mktemp("built") / "root")
    planned = with_flow_plan(copy_root(built, tmp_path_factory.mktemp("planned") / "root"))
    return {"step_by_step": built, "flow_plan": planned}


def audit(root: Path, out: Path) -> tuple[dict[str, Any], CuratorError | None]:
    cfg = AuditConfig(output_root=str(root), output_dir=str(out),
                      execution={"executor": "inline"}, **ALL)
    try:
        return run_audit(cfg), None
    except CuratorError as exc:
        if exc.error_id != "audit_findings":
            raise
        return json.loads((out / "audit_report.json").read_text()), exc


def names(report: dict[str, Any]) -> set[str]:
    return {f["name"] for f in report["findings"]}


def drop_a_line(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[1:]))


def first_tier(root: Path) -> Path:
    """The smallest tier's folder in ``root`` (the report names the original's)."""
    report = json.loads((root / "subset/subset_report.json").read_text())
    return root / "subset" / Path(min(report["tiers"], key=lambda t: t["budget"])["output"]).name


def append_a_document(root: Path) -> None:
    shard = sorted(first_tier(root).glob("*.jsonl"))[0]
    with open(shard, "a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "planted", "text": "a document no tier planned"}) + "\n")


def edit_parquet(root: Path) -> None:
    copy = sorted((root / "subset/parquet").rglob("*.parquet"))[0]
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))


TAMPER: dict[str, tuple[Callable[[Path], None], set[str]]] = {
    "filtered shard": (lambda r: drop_a_line(r / "filtered_jsonl/part_0.jsonl"),
                       {"shard_rows_mismatch"}),
    "decontaminated shard": (lambda r: drop_a_line(r / "decontaminated/part_0.jsonl"),
                             {"decontamination_shard_mismatch"}),
    "subset tier": (append_a_document, {"subset_document_count_mismatch",
                                        "subset_unplanned_document"}),
    "parquet copy": (edit_parquet, {"parquet_digest_mismatch"}),
}


@pytest.mark.parametrize("kind", ["step_by_step", "flow_plan"])
def test_an_untampered_copy_passes_and_is_audited_as_itself(
        originals: dict[str, Path], tmp_path: Path, kind: str) -> None:
    root = copy_root(originals[kind], tmp_path / "copy")
    report, error = audit(root, tmp_path / "audit")
    assert error is None and report["passed"], report["findings"]
    assert report["target"]["glob"] == str(root / "filtered_jsonl")
    assert {"decontamination", "subset", "parquet:subset"} <= set(report["steps"])
    assert report["steps"]["decontamination"]["shards_match_report"] is True
    assert all(s["artifact"].startswith(str(root)) for s in report["steps"].values())


@pytest.mark.parametrize("kind", ["step_by_step", "flow_plan"])
@pytest.mark.parametrize("what", sorted(TAMPER))
def test_tampering_with_a_copy_is_found_in_the_copy(
        originals: dict[str, Path], tmp_path: Path, kind: str, what: str) -> None:
    root = copy_root(originals[kind], tmp_path / "copy")
    tamper, expected = TAMPER[what]
    tamper(root)
    report, error = audit(root, tmp_path / "audit")
    assert error is not None and error.exit_code == 1
    assert expected <= names(report), report["findings"]
    if what == "decontaminated shard":
        assert report["steps"]["decontamination"]["shards_match_report"] is False
    # the original is untouched and still passes
    original, error = audit(originals[kind], tmp_path / "audit-original")
    assert error is None and original["passed"]


def _edit_report(root: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = root / "decontaminated/decontamination_report.json"
    report = json.loads(path.read_text())
    edit(report)
    path.write_text(json.dumps(report))


@pytest.mark.parametrize(("field", "edit"), [
    ("paths.removed_dir", lambda r, out: r["paths"].update(removed_dir=str(out / "removed"))),
    ("paths.train_files[0]", lambda r, out: r["paths"]["train_files"].__setitem__(
        0, r["producer"]["output_dir"] + "/../../outside.jsonl")),
])
def test_a_recorded_path_that_leaves_the_root_is_a_finding(
        originals: dict[str, Path], tmp_path: Path, field: str,
        edit: Callable[[dict[str, Any], Path], None]) -> None:
    root = copy_root(originals["step_by_step"], tmp_path / "copy")
    outside = tmp_path / "outside"
    (outside / "removed").mkdir(parents=True)
    (tmp_path / "outside.jsonl").write_text('{"id": "x", "text": "y"}\n')
    _edit_report(root, lambda r: edit(r, outside))
    report, error = audit(root, tmp_path / "audit")
    assert error is not None
    found = [f for f in report["findings"] if f["name"] == "audit_path_outside_root"]
    assert found and found[0]["field"] == field, report["findings"]
    assert found[0]["artifact"].endswith("decontamination_report.json")
    assert found[0]["step"] == "decontamination"


def test_how_a_recorded_path_is_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    from curator.audit.rebase import OUTSIDE, Rebase

    original, copy = tmp_path / "work" / "demo-run", tmp_path / "copy"
    (copy / "decontaminated").mkdir(parents=True)
    artifact = copy / "decontaminated" / "decontamination_report.json"
    where = Rebase.of(artifact, copy, str(original / "decontaminated"))
    problems: list[dict[str, Any]] = []

    def at(recorded: str, output: bool = False) -> str | None:
        return where.path(recorded, "f", output=output, problems=problems)

    # under the original root (absolute, or relative to the producer's directory)
    assert at(str(original / "filtered_jsonl/part_0.jsonl")) == \
        str(copy.resolve() / "filtered_jsonl/part_0.jsonl")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")  # where the producer ran
    assert at("demo-run/holdout/h.jsonl") == str(copy.resolve() / "holdout/h.jsonl")
    # already under the root; an input kept elsewhere (or on a bucket): read there
    assert at(str(copy / "subset")) == str(copy / "subset")
    assert at("/data/evals/holdout.jsonl") == "/data/evals/holdout.jsonl"
    assert at("s3://bucket/holdout.jsonl") == "s3://bucket/holdout.jsonl"
    assert problems == []
    # what the step wrote outside the root, or a rebased path led out by ".."
    assert at("/data/elsewhere/removed", output=True) is None
    assert at(str(original / "decontaminated/../../x.jsonl")) is None
    assert [p["name"] for p in problems] == [OUTSIDE, OUTSIDE]
    # without a root (one artifact checked on its own): as recorded
    alone = Rebase.of(artifact, None, str(original))
    assert alone.path("rel/x", "f", output=True, problems=problems) == "rel/x"
