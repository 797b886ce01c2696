"""curate dedup killed (SIGKILL, the whole process group) in the middle of a phase
resumes to the same bytes: one run killed in every phase in turn (signatures, candidates,
send, verify, a large-star and a small-star round, assign, survivors, write), resumed
after each kill, ends with the uninterrupted run's bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.dedup._support import data, dedup, planted, write
from tests.ingest._support import Cli, write_config

KEYS = {"id_field": "id", "source_field": "source", "partition_size": "8KB"}


def _writers(folder: Path) -> int:
    return len({p.name for p in folder.rglob("*.parquet")}) if folder.is_dir() else 0


def _files(folder: Path) -> int:
    return len(list(folder.rglob("*.parquet"))) if folder.is_dir() else 0


#: each phase, in run order, and what shows it is under way (at least two of its units
#: have written: a folder only that phase writes), not yet over
POINTS: dict[str, Callable[[Path], bool]] = {
    "signatures": lambda w: _writers(w / "bands") >= 2,
    "candidates": lambda w: _writers(w / "cand") >= 2,
    "send": lambda w: _writers(w / "verify") >= 2,
    "verify": lambda w: _writers(w / "nbr") >= 3,
    "components-1-large": lambda w: _files(w / "cc" / "0s") >= 4,
    "components-1-small": lambda w: _files(w / "cc" / "1") >= 4,
    "assign": lambda w: _writers(w / "assign") >= 2,
    "survivors": lambda w: _writers(w / "surv") >= 2,
    "write": lambda w: len(list((w / "written").glob("*.json"))) >= 3,
}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_killed_in_every_phase_in_turn_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    inp = write(tmp_path / "in", planted(seed=8, bases=90))
    ref = dedup(inp, tmp_path / "reference", **KEYS)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    cfg = write_config(tmp_path / "dedup.yaml", {
        "input_glob": str(inp), "output_dir": str(out), **KEYS,
        "execution": {"executor": "local", "workers": 1, "checkpoint_path": str(ckpt),
                      "exchange_buckets": 64},
    })
    work = out / ".dedup-work"
    for point, ready in POINTS.items():  # each run resumes the last and is killed later
        with Cli(cfg, tmp_path / "logs", f"killed-in-{point}", command="dedup") as cli:
            cli.kill_when(partial(ready, work), point, timeout=240)
        assert not (out / "dedup_report.json").exists(), point
    with Cli(cfg, tmp_path / "logs", "resumed", command="dedup") as cli:
        assert cli.wait(300) == 0, cli.stderr()[-3000:]
    report = json.loads((out / "dedup_report.json").read_text())
    assert report["producer"]["resumed_partitions"] > 0
    assert report["rounds"] >= 1
    assert data(out) == data(tmp_path / "reference") != {}
    for key in ("documents_in", "removed", "components", "component_sizes",
                "candidate_pairs", "verified_pairs", "shards", "removed_shards"):
        assert report[key] == ref[key], key
