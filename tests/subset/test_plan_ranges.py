"""The subset's plan on the exchange (curator/subset/ranges.py): the tiers of the
single-process plan (``make_plan`` over every document), the same bytes for any range
count, worker count and executor, repeated ids refused as before, and a run killed in
the middle of the exchange resumes to the same bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import yaml

from curator.corpus.sampling import stable_uint64
from curator.errors import CuratorError
from curator.exchange import range_of
from curator.steps.subset import SubsetConfig, run_subset
from tests.subset._oracle import check_unique, make_plan
from tests.subset.test_subset import (
    planned_strata,
    run,
    tier_bytes,
    tier_ids,
    words,
    write,
)

KEYS: dict[str, Any] = {"source_field": "source", "quality_score_field": "q", "seed": 3,
                        "token_budgets": [2_000, 9_000, 30_000], "partition_size": "12KB"}


def docs(n: int = 400, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"id": f"d{i}", "text": words(rng.randint(2, 300)),
             "source": rng.choice(["news", "wiki", "forum"]), "q": rng.random()}
            for i in range(n)]


def world(folder: Path, records: list[dict[str, Any]], files: int = 3) -> Path:
    size = -(-len(records) // files)
    for f in range(files):
        write(folder / f"part_{f}.jsonl", records[f * size:(f + 1) * size])
    return folder


def id_files(out: Path) -> list[tuple[Any, ...]]:
    """The per-range id files, concatenated in range order: the plan's whole order."""
    import pyarrow.parquet as pq

    plan = json.loads((out / "plan.json").read_text())
    rows: list[tuple[Any, ...]] = []
    for r in plan["ranges"]:
        t = pq.read_table(out / r["file"])
        rows += zip(t["id"].to_pylist(), t["stratum"].to_pylist(),
                    t["first_budget"].to_pylist(), strict=True)
    return rows


def report_core(report: dict[str, Any]) -> dict[str, Any]:
    """The report without where it was written."""
    tiers = [{k: v for k, v in t.items() if k != "output"} for t in report["tiers"]]
    return {"tiers": tiers, **{k: report[k] for k in ("stratification", "corpus",
                                                      "warnings", "nesting_verified")}}


def plan_core(out: Path) -> dict[str, Any]:
    plan = json.loads((out / "plan.json").read_text())
    return {k: v for k, v in plan.items() if k != "ranges"}


def test_any_range_count_gives_the_single_process_plan(tmp_path: Path) -> None:
    records = docs(250)
    inp = world(tmp_path / "in", records)
    reports = {}
    for n in (1, 7, 64):
        reports[n] = run(inp, tmp_path / f"r{n}", **KEYS,
                         execution={"executor": "inline", "exchange_buckets": n})
        plan = json.loads((tmp_path / f"r{n}" / "plan.json").read_text())
        assert len(plan["ranges"]) == n
        filled = [r for r in plan["ranges"] if r["documents"]]
        assert len(filled) >= min(n, 7), "the ranges do not split the order"
    assert reports[1]["producer"]["execution"]["partitions"] >= 3
    for n in (7, 64):
        assert tier_bytes(tmp_path / f"r{n}") == tier_bytes(tmp_path / "r1")
        assert report_core(reports[n]) == report_core(reports[1])
        assert plan_core(tmp_path / f"r{n}") == plan_core(tmp_path / "r1")
        assert id_files(tmp_path / f"r{n}") == id_files(tmp_path / "r1")

    # the reference: today's single-process plan over every document at once
    ids = pl.Series("id", [r["id"] for r in records])
    ref = make_plan(ids, np.array([stable_uint64(3, r["id"]) for r in records], np.uint64),
                    np.array([len(r["text"].split()) for r in records], np.int64),
                    [r["source"] for r in records], np.array([r["q"] for r in records]),
                    KEYS["token_budgets"], [128, 512, 2048, 8192], "words")
    got = tier_ids(reports[64])
    for t in range(3):
        assert got[t] == {ids[int(i)] for i in ref.tier_members(t)}
    strata = planned_strata(tmp_path / "r64")
    assert strata == {key: [ids[int(i)] for i in ref.order if ref.strata[ref.stratum[i]] == key]
                      for key in ref.strata}
    assert [t["per_stratum_tokens"] for t in reports[64]["tiers"]] == [
        dict(zip(ref.strata, t.taken_tokens, strict=True)) for t in ref.tiers]
    # some prefix really ends inside a range: its last document and the next one share it
    where = {i: int(range_of(np.array([stable_uint64(3, i)], np.uint64), 64)[0]) for i in ids}
    inside = 0
    for members in strata.values():
        for tier in got:
            m = sum(i in tier for i in members)
            inside += 0 < m < len(members) and where[members[m - 1]] == where[members[m]]
    assert inside


def test_repeated_ids_are_refused_as_one_process_refuses_them(tmp_path: Path) -> None:
    records = docs(200)
    for j, i in enumerate((150, 170, 3, 120)):  # copies in later partitions
        records.append({**records[i], "text": words(5 + j)})
    records.append({**records[3], "text": words(4)})
    inp = world(tmp_path / "in", records)
    with pytest.raises(CuratorError) as ref:
        check_unique(pl.Series("id", [r["id"] for r in records]))
    for n in (1, 7):
        with pytest.raises(CuratorError) as got:
            run(inp, tmp_path / f"r{n}", **KEYS,
                execution={"executor": "inline", "exchange_buckets": n})
        assert got.value.error_id == "id_field_not_unique"
        assert got.value.message == ref.value.message
        assert not (tmp_path / f"r{n}" / "plan.json").exists()


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_two_workers_on_the_pool_and_ray_give_the_same_bytes(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    from executors import make_executor

    if backend == "ray":
        request.getfixturevalue("ray_local")
    inp = world(tmp_path / "in", docs(300))
    a = run(inp, tmp_path / "a", **KEYS, execution={"executor": "inline",
                                                     "exchange_buckets": 1})
    with make_executor(backend, 2, None) as executor:
        b = run_subset(SubsetConfig(input_glob=str(inp), output_dir=str(tmp_path / "b"),
                                    id_field="id", **KEYS,
                                    execution={"executor": backend, "workers": 2,
                                               "exchange_buckets": 7}), executor)
    assert b["producer"]["execution"]["executor"] == backend
    assert tier_bytes(tmp_path / "b") == tier_bytes(tmp_path / "a")
    assert report_core(b) == report_core(a)
    assert id_files(tmp_path / "b") == id_files(tmp_path / "a")


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("phase", ["rank", "select"])
def test_killed_in_the_middle_of_the_exchange_resumes_to_the_same_bytes(
        tmp_path: Path, phase: str) -> None:
    from tests.ingest._support import Cli

    inp = world(tmp_path / "in", docs(600), files=4)
    ref = run(inp, tmp_path / "reference", **KEYS,
              execution={"executor": "inline", "exchange_buckets": 1})
    out = tmp_path / "out"
    cfg = tmp_path / "subset.yaml"
    cfg.write_text(yaml.safe_dump({
        "input_glob": str(inp), "output_dir": str(out), "id_field": "id", **KEYS,
        "execution": {"executor": "local", "workers": 1,
                      "checkpoint_path": str(tmp_path / "ckpt"), "exchange_buckets": 64}}))
    summaries = out / ".subset-work" / phase / "summary"
    with Cli(cfg, tmp_path / "logs", "killed", command="subset") as cli:
        cli.kill_when(lambda: len(list(summaries.glob("*.json"))) >= 4, f"four {phase} units",
                      timeout=120)
    done = len(list(summaries.glob("*.json")))
    assert 4 <= done < 64, f"{done} of 64 ranges done: not cut midway"
    assert not list(out.glob("budget_*"))
    with Cli(cfg, tmp_path / "logs", "resumed", command="subset") as cli:
        assert cli.wait(180) == 0, cli.stderr()[-3000:]
    report = json.loads((out / "subset_report.json").read_text())
    assert report["producer"]["resumed_partitions"] >= 4  # the count pass and some ranges
    assert tier_bytes(out) == tier_bytes(tmp_path / "reference")
    assert report_core(report) == report_core(ref)
    assert id_files(out) == id_files(tmp_path / "reference")


def test_the_audit_reads_each_ids_stratum_from_the_range_files(tmp_path: Path) -> None:
    from curator.audit.subset import check_subset

    inp = world(tmp_path / "in", docs(150))
    run(inp, tmp_path / "out", **KEYS, execution={"executor": "inline", "exchange_buckets": 5})
    report = tmp_path / "out" / "subset_report.json"
    block, findings = check_subset(report)
    assert findings == [] and block["tiers"][0]["deviations_checked"] > 3
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    filled = next(r for r in plan["ranges"] if r["documents"])
    (tmp_path / "out" / filled["file"]).unlink()  # an id file gone: the plan is unreadable
    names = {f["name"] for f in check_subset(report)[1]}
    assert names == {"subset_plan_unreadable"}


@pytest.mark.parametrize("buckets", [1, 7, 64, 4096])
def test_range_buckets_are_ordered_ranges_of_the_hash(buckets: int) -> None:
    rng = np.random.default_rng(buckets)
    hashes = np.sort(np.concatenate([
        rng.integers(0, 2**63, 5000, dtype=np.uint64) * np.uint64(2),
        np.array([0, 2**32 - 1, 2**32, 2**63, 2**64 - 1], dtype=np.uint64)]))
    got = range_of(hashes, buckets)
    assert got.dtype == np.int32 and got.min() >= 0 and got.max() < buckets
    assert np.all(np.diff(got) >= 0), "a larger hash in an earlier bucket"
    assert got[0] == 0 and got[-1] == buckets - 1
    expected = [(int(h) >> 32) * buckets >> 32 for h in hashes]  # floor(top32 * n / 2^32)
    assert got.tolist() == expected
