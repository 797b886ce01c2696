"""The same shards, rejections, ledger and manifest on every executor and after a SIGKILL
and a resume (real subprocesses, a real process pool, real Ray), and the flow's Prefect
artifacts."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator.steps.filter import FilterConfig, run_filter
from executors import make_executor
from tests.filter._support import (
    approve_policy,
    corpus_records,
    filter_keys,
    ledger,
    manifest,
    write_shards,
)
from tests.ingest._support import Cli, write_config
from tests.prefect_support import artifact_count, latest_artifact, table_rows

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

#: manifest fields that legitimately differ between runs of the same input
TIMING = ("started_at", "completed_at", "seconds", "resumed_partitions", "execution",
          "output_dir")


def _files(out: Path) -> dict[str, bytes]:
    """Shards and rejection files, by relative path."""
    return {str(p.relative_to(out)): p.read_bytes()
            for p in sorted(out.rglob("*.jsonl")) if ".filter-work" not in p.parts}


def _comparable(out: Path) -> tuple[dict[str, bytes], dict[str, Any], dict[str, Any]]:
    m = manifest(out)
    for key in TIMING:
        m["producer"].pop(key, None)
    return _files(out), ledger(out), m


def _run(inp: Path, out: Path, policy: Path, executor: str, workers: int | None,
         **keys: Any) -> dict[str, Any]:
    cfg = FilterConfig(**filter_keys(inp, out, policy, **keys),
                       execution={"executor": executor, "workers": workers})
    ex = cfg.execution
    with make_executor(ex.executor, ex.workers, ex.ray_address) as pool:
        return run_filter(cfg, pool)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("small")
    inp = write_shards(root / "in", corpus_records(3000, seed=31), shards=5)
    with open(inp / "part_3.jsonl", "a", encoding="utf-8") as f:
        f.write("{broken\n")
    return {"inp": inp, "policy": approve_policy(inp, root)}


def test_inline_local_and_ray_give_the_same_artifacts(
    tmp_path: Path, small: dict[str, Any], ray_local: None
) -> None:
    out = tmp_path / "out"  # the same output_dir each time: it is part of the config hash
    got = {}
    for executor, workers in (("inline", None), ("local", 2), ("ray", 2)):
        m = _run(small["inp"], out, small["policy"], executor, workers, partition_size="60KB",
                 mode="both")
        assert m["producer"]["completed_at"]
        got[executor] = _comparable(out)
        shutil.rmtree(out)
    files, led, m = got["inline"]
    assert len([k for k in files if k.startswith("part_")]) > 10
    assert led["balanced"] and led["n_failed"] == 1
    assert got["local"] == got["inline"]
    assert got["ray"] == got["inline"]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("big")
    inp = write_shards(root / "in", corpus_records(12000, seed=33), shards=6)
    return {"inp": inp, "policy": approve_policy(inp, root)}


def test_sigkill_while_filtering_then_resume(tmp_path: Path, big: dict[str, Any],
                                             prefect_api: str) -> None:
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    keys = {"partition_size": "128KB"}
    reference = run_filter(FilterConfig(**filter_keys(big["inp"], out, big["policy"], **keys)))
    total = len(list(out.glob("part_*.jsonl")))
    want = _comparable(out)
    shutil.rmtree(out)

    cfg = write_config(tmp_path / "filter.yaml", {
        **filter_keys(big["inp"], out, big["policy"], **keys),
        "execution": {"executor": "local", "workers": 2, "checkpoint_path": str(ckpt)},
    })
    with Cli(cfg, tmp_path / "logs", "killed", command="filter") as cli:
        cli.kill_when(lambda: len(list(out.glob("part_*.jsonl"))) >= 20, "20 shards")
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("part_*.jsonl")}
    assert 20 <= len(before) < total, f"{len(before)} of {total} shards: not cut midway"
    assert not (out / "run_manifest.json").exists()

    with Cli(cfg, tmp_path / "logs", "resumed", command="filter") as cli:
        assert cli.wait(240) == 0, cli.stderr()[-3000:]
    assert _comparable(out) == want
    m = manifest(out)
    assert m["producer"]["config_hash"] == reference["producer"]["config_hash"]
    # the fingerprint pass and the partitions filtered before the kill were skipped (the
    # newest completions may not have been committed, so a few may be redone)
    skipped_filter = m["producer"]["resumed_partitions"] - total
    assert skipped_filter >= 10
    untouched = [n for n, st in before.items()
                 if (out / n).stat().st_ino == st[0] and (out / n).stat().st_mtime_ns == st[1]]
    assert len(untouched) == skipped_filter
    assert not (out / ".filter-work").exists() and not (ckpt / "filter").exists()


def test_flow_publishes_manifest_and_ledger_tables(tmp_path: Path, small: dict[str, Any],
                                                   prefect_api: str) -> None:
    from flows.steps import filter_flow

    out = tmp_path / "out"
    returned = filter_flow({**filter_keys(small["inp"], out, small["policy"]),
                            "execution": {"executor": "inline"}})
    assert returned == manifest(out)

    m, led = manifest(out), ledger(out)
    got = {r["what"]: r["value"] for r in table_rows(latest_artifact("filter-manifest"))}
    assert got["input rows"] == m["input"]["row_count"]
    assert got["output rows"] == m["output"]["row_count"]
    assert got["policy status"] == "approved"
    assert got["completed_at"] == m["producer"]["completed_at"]
    for gate, n in m["declared"]["filtered"].items():
        assert got[f"removed by {gate}"] == n
    got = {r["field"]: r["value"] for r in table_rows(latest_artifact("filter-ledger"))}
    for key in ("n_input", "n_success", "n_filtered", "n_failed", "balanced"):
        assert got[key] == led[key]
    for gate, n in led["filtered_by_reason"].items():
        assert got[f"filtered_by_reason.{gate}"] == n

    # a refused rerun (stale output) writes no artifacts, so it publishes none: the tables
    # of the earlier run are not republished as if they were this run's
    before = artifact_count("filter-manifest")
    with pytest.raises(CuratorError) as err:
        filter_flow({**filter_keys(small["inp"], out, small["policy"]),
                     "execution": {"executor": "inline"}})
    assert err.value.error_id == "stale_filter_output"
    assert artifact_count("filter-manifest") == before
