"""``run_manifest.json``: every reference field, per-source counts, per-shard digests that
match the files, ``completed_at`` only on success; a failed run still writes both
artifacts."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.langpack.loader import content_hash_of
from curator.signals.registry import IMPL_VERSION
from curator.steps.filter import FilterConfig
from tests.filter._support import (
    LANGPACKS,
    approve,
    corpus_records,
    expect,
    filter_keys,
    kept,
    ledger,
    manifest,
    policy_gates,
    profile_candidate,
    refusal,
    run,
    sha256_file,
    shard_files,
    write_shards,
)

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("manifest")
    records = corpus_records(600, seed=13)
    # one record without a source: counted as __missing__
    records[5] = {k: v for k, v in records[5].items() if k != "source"}
    inp = write_shards(root / "in", records, shards=4)
    with open(inp / "part_2.jsonl", "a", encoding="utf-8") as f:
        f.write("this is not json\n")
    policy = approve(profile_candidate(inp, root), root / "approved_policy.yaml")
    out = root / "out"
    keys = {"partition_size": "40KB"}  # several partitions, several shards
    returned = run(inp, out, policy, **keys)
    return {"records": records, "inp": inp, "policy": policy, "out": out, "keys": keys,
            "returned": returned}


def test_the_returned_manifest_is_the_written_one(world: dict[str, Any]) -> None:
    assert world["returned"] == manifest(world["out"])


def test_reference_fields(world: dict[str, Any]) -> None:
    m = manifest(world["out"])
    assert m["schema_version"] == 1
    prod = m["producer"]
    assert prod["step_id"] == "curate/filter"
    assert isinstance(prod["tool_revision"], str) and prod["tool_revision"]
    assert RFC3339.match(prod["started_at"]) and RFC3339.match(prod["completed_at"])
    assert prod["started_at"] <= prod["completed_at"]
    assert prod["runtime_dependencies"]["signals_impl_version"] == IMPL_VERSION
    assert set(m["input"]) >= {"glob", "file_count", "row_count", "per_source",
                               "unparsable_rows"}
    assert set(m["output"]) >= {"file_count", "row_count", "per_source", "id_field",
                                "source_field"}
    assert m["output"]["id_field"] == "id" and m["output"]["source_field"] == "source"
    assert set(m["declared"]) == {"attribution", "rows_absent_from_output", "filtered",
                                  "failed", "quarantined"}
    assert m["declared"]["attribution"] == "declared"
    assert m["canonicalization"]["json"] == \
        "json.dumps(sort_keys=True, separators=(',',':'), ensure_ascii=False)"
    assert m["canonicalization"]["duplicate_ids"] in ("reject", "multiset")
    doc = yaml.safe_load(world["policy"].read_text())
    assert m["policy"]["status"] == "approved"
    assert m["policy"]["thresholds_applied"] == len(doc["thresholds"])
    assert m["policy"]["approval_declared"] == doc["approval"]["method"] == "manual"
    assert isinstance(m["policy"]["note"], str) and m["policy"]["note"]
    assert m["policy"]["policy_digest"] == sha256_file(world["policy"])
    assert m["policy"]["profile_digest"] == doc["profile_digest"]
    lm = m["language_model"]
    assert lm["sha256"] == sha256_file(Path(lm["path"]))


def test_config_hash_covers_config_and_resolved_policy(world: dict[str, Any]) -> None:
    """sha256 of the canonical JSON of the config (execution aside) and the resolved
    policy, written out here from the policy file itself."""
    doc = yaml.safe_load(world["policy"].read_text())
    cfg = FilterConfig(**filter_keys(world["inp"], world["out"], world["policy"],
                                     **world["keys"]))
    resolved = {
        "policy_digest": sha256_file(world["policy"]),
        "profile_digest": doc["profile_digest"],
        "signals_impl_version": doc["signals_impl_version"],
        "corpus_fingerprint": doc["corpus"]["fingerprint"],
        "approval_method": doc["approval"]["method"],
        "thresholds": sorted(({"signal": t["signal"],
                               "min": None if t.get("min") is None else float(t["min"]),
                               "max": None if t.get("max") is None else float(t["max"])}
                              for t in doc["thresholds"]), key=lambda t: t["signal"]),
        "langpack_content_hash": content_hash_of(LANGPACKS / "en"),
    }
    body = {"config": cfg.model_dump(mode="json", exclude={"execution"}),
            "resolved_policy": resolved}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    want = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert manifest(world["out"])["producer"]["config_hash"] == want


def test_counts_per_source_and_per_shard(world: dict[str, Any]) -> None:
    out, m = world["out"], manifest(world["out"])
    records = world["records"]
    exp = expect(records, policy=policy_gates(world["policy"]))
    assert m["input"]["row_count"] == len(records) + 1
    assert m["input"]["unparsable_rows"] == 1
    assert m["input"]["file_count"] == 4
    assert m["input"]["per_source"] == dict(Counter(r.get("source", "__missing__")
                                                    for r in records))
    assert m["output"]["per_source"] == dict(Counter(r.get("source", "__missing__")
                                                     for r in exp.kept))
    assert m["output"]["row_count"] == len(exp.kept) == len(kept(out))
    assert m["declared"]["rows_absent_from_output"] == len(records) + 1 - len(exp.kept)
    assert m["declared"]["filtered"] == exp.by_gate
    assert m["declared"]["failed"] == 1 and m["declared"]["quarantined"] == 0
    files = shard_files(out)
    assert len(files) > 2
    assert m["output"]["file_count"] == len(files)
    assert m["output"]["shards"] == [
        {"name": p.name, "rows": len(p.read_bytes().splitlines()), "sha256": sha256_file(p)}
        for p in files]
    led = ledger(out)
    assert led["n_success"] == m["output"]["row_count"]
    assert led["n_input"] == m["input"]["row_count"]
    assert led["notes"] == {"attribution": "per_gate", "completed": True, "mode": "filter"}
    assert set(led) == {"schema_version", "stage", "source", "n_input", "n_success",
                        "n_filtered", "n_failed", "n_quarantined", "n_accounted", "balanced",
                        "filtered_by_reason", "failed_units", "quarantined_units", "notes"}


def test_the_manifest_and_ledger_go_where_configured(world: dict[str, Any],
                                                     tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"], emit_manifest=str(tmp_path / "m.json"),
        emit_ledger="sub/ledger.json", rejected_dir=str(tmp_path / "why"))
    assert json.loads((tmp_path / "m.json").read_text())["output"]["row_count"] == \
        len(kept(out))
    assert json.loads((out / "sub" / "ledger.json").read_text())["balanced"] is True
    assert not (out / "run_manifest.json").exists()
    assert list((tmp_path / "why").glob("*.jsonl")) and not (out / "rejected").exists()
    run(world["inp"], tmp_path / "none", world["policy"], emit_manifest=None, emit_ledger=None)
    assert not list((tmp_path / "none").glob("*.json"))


def test_a_failed_partition_still_writes_manifest_and_ledger(tmp_path: Path) -> None:
    """``metadata_fields`` naming a field some records lack makes a partition raise."""
    records = corpus_records(200, seed=17)
    for i, rec in enumerate(records):
        if i < 150:
            rec["lang"] = "en"
    inp = write_shards(tmp_path / "in", records, shards=2)
    out = tmp_path / "out"
    err = refusal(inp, out, metadata_fields=["lang"], partition_size="40KB",
                  quality_filters={"min_words": None, "max_words": None}, language_codes=[])
    assert "metadata_field_absent_from_some_records" in str(err)
    m, led = manifest(out), ledger(out)
    assert "completed_at" not in m["producer"]
    assert "error" in m
    assert m["input"]["row_count"] == len(records)
    units = {u["unit"]: u for u in led["failed_units"]}
    assert str(out) in units
    assert led["balanced"] is True and led["notes"]["completed"] is False
    assert led["n_input"] == len(records)
    # records on disk are success, the rest are the failed output dir's
    assert led["n_success"] + units[str(out)]["records"] == len(records)
    assert led["n_success"] == sum(len(p.read_bytes().splitlines())
                                   for p in shard_files(out))
    assert 0 < led["n_success"] < 150  # the partitions before the bad record completed
    assert m["declared"]["failed"] == units[str(out)]["records"]
