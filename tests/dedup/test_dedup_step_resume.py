"""curate dedup killed (SIGKILL, the whole process group) in the middle of a phase
resumes to the same bytes: while verifying pairs (partition units), while finding
components (bucket units of a large-star round) and while writing shards."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.dedup._support import data, dedup, planted, write
from tests.ingest._support import Cli, write_config

KEYS = {"id_field": "id", "source_field": "source", "partition_size": "8KB"}


def _writers(folder: Path) -> int:
    return len({p.name for p in folder.rglob("*.parquet")}) if folder.is_dir() else 0


def _files(folder: Path) -> int:
    return len(list(folder.rglob("*.parquet"))) if folder.is_dir() else 0


POINTS: dict[str, Callable[[Path], bool]] = {
    "verify": lambda w: _writers(w / "nbr") >= 3,
    "components": lambda w: _files(w / "cc" / "0s") >= 4,
    "write": lambda w: len(list((w / "written").glob("*.json"))) >= 3,
}


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("point", list(POINTS))
def test_killed_in_a_phase_resumes_to_the_same_bytes(tmp_path: Path, point: str) -> None:
    inp = write(tmp_path / "in", planted(seed=8, bases=90))
    ref = dedup(inp, tmp_path / "reference", **KEYS)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    cfg = write_config(tmp_path / "dedup.yaml", {
        "input_glob": str(inp), "output_dir": str(out), **KEYS,
        "execution": {"executor": "local", "workers": 1, "checkpoint_path": str(ckpt),
                      "exchange_buckets": 64},
    })
    work = out / ".dedup-work"
    with Cli(cfg, tmp_path / "logs", "killed", command="dedup") as cli:
        cli.kill_when(lambda: POINTS[point](work), point, timeout=240)
    assert not (out / "dedup_report.json").exists()
    with Cli(cfg, tmp_path / "logs", "resumed", command="dedup") as cli:
        assert cli.wait(300) == 0, cli.stderr()[-3000:]
    report = json.loads((out / "dedup_report.json").read_text())
    assert report["producer"]["resumed_partitions"] > 0
    assert data(out) == data(tmp_path / "reference") != {}
    for key in ("documents_in", "removed", "components", "component_sizes",
                "candidate_pairs", "verified_pairs", "shards", "removed_shards"):
        assert report[key] == ref[key], key
