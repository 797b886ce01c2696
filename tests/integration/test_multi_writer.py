"""Two processes on disjoint shards share one checkpoint directory; a third sees the union."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from curator.checkpoint import METADATA_DIRNAME, read_checkpoint_file
from curator.tasks import FileGroupTask
from tests.integration._support import Proc, make_inputs, script, snapshot, writer_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _shard(tag: str, tmp: Path, inputs: list[Path], barrier: Path | None = None) -> Proc:
    argv = [
        sys.executable, script("shard_run.py"), "--checkpoint", str(tmp / "ckpt"),
        "--output", str(tmp / "out"),
    ]
    if barrier is not None:
        argv += ["--barrier", str(barrier), "--parties", "2"]
    return Proc([*argv, *map(str, inputs)], tmp / "logs", tag)


def _summary(proc: Proc, timeout: float = 60) -> dict:
    code = proc.wait(timeout)
    assert code == 0, proc.stderr()
    return json.loads(proc.stdout().strip().splitlines()[-1])


def test_disjoint_shards_share_a_checkpoint_directory(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "input", 8)
    shard_a, shard_b = inputs[0::2], inputs[1::2]
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    sid = {p: FileGroupTask(data=[str(p)]).get_deterministic_id() for p in inputs}

    # Both writers run at the same time (each waits at the barrier for the other).
    with _shard("a", tmp_path, shard_a, barrier) as a, _shard("b", tmp_path, shard_b, barrier) as b:
        first, second = _summary(a), _summary(b)
    for summary, shard in ((first, shard_a), (second, shard_b)):
        assert summary["sources_completed"] == len(shard) == summary["sources_total"]
        assert summary["sources_skipped"] == 0 and summary["sources_pending"] == []
    assert first["started"] < second["finished"] and second["started"] < first["finished"]

    meta = tmp_path / "ckpt" / METADATA_DIRNAME
    host = socket.gethostname()
    files = {p.name for p in writer_files(meta)}
    assert files == {f"{host}-{a.pid}.mdb", f"{host}-{b.pid}.mdb"}
    # Each writer recorded exactly its own shard, in its own file.
    assert read_checkpoint_file(meta / f"{host}-{a.pid}.mdb")[0] == {sid[p] for p in shard_a}
    assert read_checkpoint_file(meta / f"{host}-{b.pid}.mdb")[0] == {sid[p] for p in shard_b}
    outputs = snapshot(tmp_path / "out")
    assert set(outputs) == {f"{s}.jsonl" for s in sid.values()}

    # A third process over the union finds every source complete and does nothing.
    with _shard("union", tmp_path, inputs) as c:
        third = _summary(c)
    assert third["sources_total"] == len(inputs)
    assert third["sources_skipped"] == len(inputs)
    assert third["sources_completed"] == 0 and third["sources_pending"] == []
    assert third["rows_written"] == 50 * len(inputs)  # statistics merged from both files
    assert snapshot(tmp_path / "out") == outputs
    assert {p.name for p in writer_files(meta)} == files | {f"{host}-{c.pid}.mdb"}
    assert third["checkpoint_file"] == f"{host}-{c.pid}.mdb"
    assert read_checkpoint_file(meta / third["checkpoint_file"])[0] == set()
