"""``curate audit`` with ``output_root`` proves a step's Parquet copy
(``output_format: jsonl+parquet``, :mod:`curator.audit.parquet`): a clean copy passes,
and each tampering is its own finding."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from curator.audit.parquet import check_parquet_copy
from curator.errors import CuratorError
from curator.steps.audit import AuditConfig, run_audit
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo import generate_demo_corpus
from tests.steps._worlds import KEYS


@pytest.fixture(scope="module")
def clean_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An output root holding one ingest run with its Parquet copy (several shards)."""
    base = tmp_path_factory.mktemp("pq")
    raw = base / "raw"
    generate_demo_corpus(raw, docs=240, seed=7)
    root = base / "root"
    run_ingest(IngestConfig(**KEYS["ingest"][0], input=str(raw),
                            output_dir=str(root / "ingested"),
                            output_format="jsonl+parquet", execution={"executor": "inline"}))
    return root


def _audit(root: Path, out: Path) -> tuple[dict[str, Any], CuratorError | None]:
    try:
        return run_audit(AuditConfig(output_root=str(root), output_dir=str(out),
                                     execution={"executor": "inline"})), None
    except CuratorError as exc:
        return json.loads((out / "audit_report.json").read_text()), exc


def _names(report: dict[str, Any]) -> list[str]:
    return [f["name"] for f in report["findings"]]


def _tampered(clean_root: Path, tmp_path: Path, edit: Callable[[Path, dict[str, Any]], None]
              ) -> tuple[dict[str, Any], CuratorError | None]:
    root = tmp_path / "root"
    shutil.copytree(clean_root, root)
    ingested = root / "ingested"
    artifact = ingested / "ingest_report.json"
    data = json.loads(artifact.read_text())
    edit(ingested, data["parquet"])
    artifact.write_text(json.dumps(data))
    return _audit(root, tmp_path / "audit")


def _relist(ingested: Path, block: dict[str, Any], name: str) -> None:
    """Make the listed digest match a rewritten file (only its rows then differ)."""
    entry = next(e for e in block["shards"] if e["name"] == name)
    entry["sha256"] = "sha256:" + hashlib.sha256((ingested / name).read_bytes()).hexdigest()


def test_a_clean_copy_passes(clean_root: Path, tmp_path: Path) -> None:
    report, err = _audit(clean_root, tmp_path / "audit")
    assert err is None, err
    block = report["steps"]["parquet:ingest"]
    listed = json.loads((clean_root / "ingested" / "ingest_report.json").read_text())["parquet"]
    assert len(listed["shards"]) > 1
    assert block["files"] == len(listed["shards"])
    assert block["rows"] == listed["rows"] == sum(
        pl.read_parquet(clean_root / "ingested" / e["name"]).height for e in listed["shards"])


def test_a_root_without_a_copy_has_no_parquet_check(clean_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(clean_root, root)
    artifact = root / "ingested" / "ingest_report.json"
    data = json.loads(artifact.read_text())
    del data["parquet"]
    artifact.write_text(json.dumps(data))
    with pytest.raises(CuratorError) as err:  # the only artifact found has nothing to prove
        run_audit(AuditConfig(output_root=str(root), output_dir=str(tmp_path / "a"),
                              execution={"executor": "inline"}))
    assert err.value.error_id == "nothing_to_audit"


def test_a_deleted_copy_is_missing(clean_root: Path, tmp_path: Path) -> None:
    report, err = _tampered(clean_root, tmp_path,
                            lambda d, b: (d / b["shards"][1]["name"]).unlink())
    assert err is not None and err.error_id == "audit_findings"
    assert _names(report) == ["parquet_copy_missing"]


def test_a_changed_text_is_a_record_that_differs(clean_root: Path, tmp_path: Path) -> None:
    def edit(ingested: Path, block: dict[str, Any]) -> None:
        name = block["shards"][0]["name"]
        df = pl.read_parquet(ingested / name)
        texts = df["text"].to_list()
        texts[3] = texts[3] + " (edited)"
        df.with_columns(pl.Series("text", texts)).write_parquet(ingested / name)
        _relist(ingested, block, name)

    report, _ = _tampered(clean_root, tmp_path, edit)
    assert _names(report) == ["parquet_records_differ"]
    assert report["findings"][0]["rows"] == [3]


def test_a_number_printed_as_a_string_differs(tmp_path: Path) -> None:
    """The copy must keep each value's kind: ``"5"`` for ``5`` is a difference, and
    a widened number (``5.0`` for ``5``) is not."""
    (tmp_path / "part_0.jsonl").write_text('{"id": "a", "n": 5}\n{"id": "b", "n": 7}\n')
    (tmp_path / "parquet").mkdir()
    for n, kind in (([5.0, 7.0], pl.Float64), (["5", "7"], pl.String)):
        copy = tmp_path / "parquet" / "part_0.parquet"
        pl.DataFrame({"id": ["a", "b"], "n": n}, schema={"id": pl.String, "n": kind}
                     ).write_parquet(copy)
        artifact = tmp_path / "ingest_report.json"
        artifact.write_text(json.dumps({"parquet": {"dir": "parquet", "rows": 2,
            "json_columns": [], "shards": [{
                "name": "parquet/part_0.parquet", "from": "part_0.jsonl", "rows": 2,
                "sha256": "sha256:" + hashlib.sha256(copy.read_bytes()).hexdigest()}]}}))
        _, findings = check_parquet_copy(artifact)
        assert [f["name"] for f in findings] == (
            [] if kind == pl.Float64 else ["parquet_records_differ"]), kind


def test_a_removed_row_and_a_wrong_digest(clean_root: Path, tmp_path: Path) -> None:
    def edit(ingested: Path, block: dict[str, Any]) -> None:
        first, second = block["shards"][0]["name"], block["shards"][1]["name"]
        pl.read_parquet(ingested / first).slice(1).write_parquet(ingested / first)
        _relist(ingested, block, first)
        block["shards"][1]["sha256"] = "sha256:" + "0" * 64
        assert second

    report, _ = _tampered(clean_root, tmp_path, edit)
    assert sorted(_names(report)) == ["parquet_digest_mismatch", "parquet_row_count_mismatch"]


def test_an_unlisted_file_and_a_path_that_leaves_the_output(clean_root: Path,
                                                            tmp_path: Path) -> None:
    def edit(ingested: Path, block: dict[str, Any]) -> None:
        shutil.copy(ingested / block["shards"][0]["name"], ingested / "parquet" / "extra.parquet")
        block["shards"].append({"name": "../../outside.parquet", "from": "part_0.jsonl",
                                "rows": 1, "sha256": "sha256:" + "0" * 64})

    report, _ = _tampered(clean_root, tmp_path, edit)
    assert sorted(_names(report)) == ["parquet_path_outside_output", "parquet_unlisted_file"]
