"""The audit's multisets on the exchange (curator/audit/netting.py): the record
accounting and the containment check give the same report for 1, 7 and 64 buckets, 1
and 2 workers, the pool and Ray; the netting is ``Counter`` arithmetic with the same
examples whatever the bucket count; the driver's scans hold no ids or keys; and a run
interrupted in the middle of the exchange (in the map, in the reduce) resumes to the
same report."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from curator.audit import netting
from curator.audit.netting import EXAMPLES, net_bucket, summarise
from curator.errors import CuratorError
from curator.exchange import bucket_of, write_summary
from curator.steps.audit import AuditConfig, run_audit
from tests.filter._support import approve, corpus_records, profile_candidate, run, write_shards


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real filter's output, tampered: a shard deleted (more missing ids than the
    report names), a planted row, a duplicated row (a duplicate id, a key the reference
    holds once)."""
    root = tmp_path_factory.mktemp("exchange")
    records = corpus_records(150, seed=7)
    inp = write_shards(root / "in", records, shards=3)
    policy = approve(profile_candidate(inp, root), root / "approved_policy.yaml")
    out = root / "filtered"
    run(inp, out, policy, partition_size="12KB")
    parts = sorted(out.glob("part_*.jsonl"))
    assert len(parts) >= 3
    parts[0].unlink()
    first = parts[1].read_bytes().splitlines(keepends=True)
    planted = {**json.loads(first[0]), "id": "planted"}
    parts[1].write_bytes(b"".join(first) + first[0] + json.dumps(planted).encode() + b"\n")
    return {"inp": inp, "out": out, "policy": policy}


def audit(world: dict[str, Any], out: Path, **execution: Any) -> dict[str, Any]:
    """The audit's report (it has findings: the world is tampered)."""
    with pytest.raises(CuratorError) as info:
        run_audit(config(world, out, **execution))
    assert info.value.error_id == "audit_findings"
    return json.loads((out / "audit_report.json").read_text())


def config(world: dict[str, Any], out: Path, **execution: Any) -> AuditConfig:
    target = world["out"]
    return AuditConfig(
        target_glob=str(target), output_dir=str(out),
        declared_manifest=str(target / "run_manifest.json"),
        ledger_glob=str(target / "curation_ledger.json"), reference_glob=str(world["inp"]),
        approved_policy=str(world["policy"]), digest_root=str(target), mode="all",
        comparison_fields=["id", "text"], execution={"executor": "inline", **execution})


def same(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "producer"}


def test_any_bucket_count_and_worker_count_gives_the_same_report(
        world: dict[str, Any], tmp_path: Path) -> None:
    reports = {b: audit(world, tmp_path / f"b{b}", exchange_buckets=b) for b in (1, 7, 64)}
    for b in (7, 64):
        assert same(reports[b]) == same(reports[1]), b
    for workers in (1, 2):
        pool = audit(world, tmp_path / f"w{workers}", executor="local", workers=workers,
                     exchange_buckets=7)
        assert same(pool) == same(reports[1]), workers
    # the numbers, computed here from the files
    def ids(folder: Path, key: str = "id") -> Counter[str]:
        return Counter(json.dumps(json.loads(x)[key]) for p in sorted(folder.glob("*.jsonl"))
                       for x in p.read_bytes().splitlines() if x.strip())
    ref = Counter()
    for p in sorted(world["inp"].glob("*.jsonl")):
        ref.update(json.dumps(json.loads(x)["id"]) for x in p.read_bytes().splitlines())
    out = ids(world["out"])
    removed = Counter(json.dumps(json.loads(x)["id"])
                      for p in sorted((world["out"] / "rejected").glob("*.jsonl"))
                      for x in p.read_bytes().splitlines() if b'"removed_by"' in x)
    missing, unexpected = ref - (out + removed), (out + removed) - ref
    acc = reports[1]["accounting"]
    assert acc["missing_count"] == sum(missing.values()) > EXAMPLES
    assert acc["missing_ids"] == sorted(missing)[:EXAMPLES]
    # the planted row, and the duplicated row's second copy
    assert acc["unexpected_count"] == sum(unexpected.values()) == 2
    assert acc["unexpected_ids"] == sorted(unexpected) and '"planted"' in unexpected
    c = reports[1]["containment"]
    assert c["duplicate_ids"] == sum(out.values()) - len(out) == 1
    assert c["missing_row_count"] == 2  # the planted row, the duplicated one's second copy
    assert c["target"]["keyed_rows"] == sum(out.values())
    assert reports[64]["producer"]["execution"]["partitions"] >= 64


def test_ray_gives_the_inline_report(world: dict[str, Any], tmp_path: Path,
                                     ray_local: None) -> None:
    from executors import make_executor

    inline = audit(world, tmp_path / "inline", exchange_buckets=3)
    with make_executor("ray", 2, None) as executor:
        cfg = config(world, tmp_path / "ray", executor="ray", workers=2, exchange_buckets=7)
        with pytest.raises(CuratorError):
            run_audit(cfg, executor)
    ray = json.loads((tmp_path / "ray" / "audit_report.json").read_text())
    assert ray["producer"]["execution"]["executor"] == "ray"
    assert same(ray) == same(inline)


@pytest.mark.parametrize("where", ["map", "reduce"])
def test_interrupted_in_the_exchange_resumes_to_the_same_report(
        world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        where: str) -> None:
    """Interrupted in a unit that has written its exchange files (map) or its bucket's
    summary (reduce) but is not recorded complete: the rerun resumes the rest."""
    from curator.audit.scan import ScanStage

    clean = audit(world, tmp_path / "clean", exchange_buckets=7)
    calls = {"n": 0}
    cls, name = (ScanStage, "_send") if where == "map" else (netting, "write_summary")
    original = getattr(cls, name)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return result

    ckpt = {"checkpoint_path": str(tmp_path / "ckpt"), "exchange_buckets": 7}
    with monkeypatch.context() as m:
        m.setattr(cls, name, interrupted)
        # inline, a unit's interruption fails its partition (the others are recorded)
        with pytest.raises((KeyboardInterrupt, CuratorError)) as info:
            run_audit(config(world, tmp_path / "resumed", **ckpt))
    assert not isinstance(info.value, CuratorError) or \
        info.value.error_id == "partition_failed"
    work = tmp_path / "resumed" / ".audit-work"
    reduced = len(list((work / "net" / "summary").glob("*.json")))
    assert 3 <= reduced < 7 if where == "reduce" else reduced == 0  # cut midway
    # what the driver loads: the scans hold no ids and no keys (they are in the buckets)
    scans = [json.loads(p.read_text()) for p in (work / "scan").glob("*.json")]
    assert len(scans) >= 2 and not any(s["ids"] or s["keys"] or s["removed_ids"]
                                       for s in scans)
    assert list((work / "exchange" / "n7").glob("b*/*.parquet"))
    # another bucket count on resume: the pinned one is kept
    resumed = audit(world, tmp_path / "resumed", **{**ckpt, "exchange_buckets": 64})
    assert resumed["producer"]["resumed_partitions"] >= 2
    assert same(resumed) == same(clean)
    assert not (work / "exchange" / "n64").exists()


def test_netting_is_counter_arithmetic_with_the_same_examples_for_any_buckets(
        tmp_path: Path) -> None:
    rng = random.Random(3)
    keys = [f'"k{i}"' for i in range(300)] + ['"é"', '"\\u0000"', '"Z"', '"a b"']
    sets = {m: Counter({k: rng.randint(1, 3) for k in rng.sample(keys, 150)})
            for m in range(5)}
    ref_ids, out_ids, removed, t_keys, r_keys = (sets[m] for m in range(5))
    expected = {"missing": ref_ids - (out_ids + removed),
                "unexpected": (out_ids + removed) - ref_ids, "rows": t_keys - r_keys}
    rows = [(k, m, n) for m, c in sets.items() for k, n in c.items()]
    rng.shuffle(rows)
    for buckets in (1, 7, 64):
        where = bucket_of(pa.array([k for k, _, _ in rows]), buckets)
        work = tmp_path / f"n{buckets}"
        for b in range(buckets):
            mine = [r for r, w in zip(rows, where, strict=True) if w == b]
            frame = pa.table({"k": [r[0] for r in mine], "m": pa.array(
                [r[1] for r in mine], pa.int8()), "n": pa.array([r[2] for r in mine], pa.int64())})
            write_summary(work, b, net_bucket(pl.from_arrow(frame)))  # type: ignore[arg-type]
        got = summarise(work, buckets)
        assert got.missing == sum(expected["missing"].values())
        assert got.unexpected == sum(expected["unexpected"].values())
        assert got.missing_ids == sorted(expected["missing"])[:EXAMPLES]
        assert got.unexpected_ids == sorted(expected["unexpected"])[:EXAMPLES]
        assert got.missing_rows == sum(expected["rows"].values())
        assert got.target_keyed == sum(t_keys.values())
        assert got.reference_keyed == sum(r_keys.values())
        assert (got.target_ids, got.target_distinct) == (sum(out_ids.values()), len(out_ids))
    shutil.rmtree(tmp_path)
