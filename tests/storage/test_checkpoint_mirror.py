"""A checkpoint on object storage (curator/checkpoint_mirror.py): real LMDB files on the
local disk, mirrored to the moto S3 server; a driver SIGKILLed mid-run is resumed by a
new process whose local disk is empty.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

import boto3
import pytest

from curator.checkpoint import (
    METADATA_DIRNAME,
    CheckpointStore,
    read_checkpoint_file,
    read_checkpoint_files,
)
from curator.checkpoint_mirror import (
    GENERATION_NAME,
    SCRATCH_DIR_ENV,
    CheckpointMirror,
    local_checkpoint_dir,
    resolve_checkpoint,
)
from curator.errors import CuratorError
from curator.execution import InlineExecutor
from curator.pipeline import Pipeline
from tests.integration._support import Proc
from tests.storage.conftest import s3_objects
from tests.unit._support import Emit, Step, read_log

pytestmark = [pytest.mark.timeout(300)]
SCRIPT = Path(__file__).parent / "scripts" / "mirror_run.py"
REPO = Path(__file__).parents[2]


def union_of(objects: dict[str, bytes], tmp: Path) -> set[str]:
    """The completed ids of every writer object, read back from their bytes."""
    tmp.mkdir(parents=True, exist_ok=True)
    done: set[str] = set()
    for i, (name, data) in enumerate(sorted(objects.items())):
        if name.endswith(".mdb"):
            path = tmp / f"{i}.mdb"
            path.write_bytes(data)
            done |= read_checkpoint_file(path)[0]
    return done


def writer_objects(endpoint: str, bucket: str, prefix: str = "ck") -> dict[str, bytes]:
    return {k: v for k, v in s3_objects(endpoint, bucket, prefix).items() if k.endswith(".mdb")}


# -- the local directory of a URL checkpoint ---------------------------------------------

def test_resolve_checkpoint_maps_a_url_to_a_local_directory_and_a_mirror(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCRATCH_DIR_ENV, str(tmp_path / "scratch"))
    assert resolve_checkpoint(None) == (None, None)
    assert resolve_checkpoint(str(tmp_path / "ck")) == (tmp_path / "ck", None)
    local, mirror = resolve_checkpoint("s3://bucket/runs/ck/", interval=2.0)
    assert mirror is not None and local is not None
    assert local.parent == tmp_path / "scratch" and local.name.startswith("checkpoint-")
    assert (mirror.url, mirror.local_root, mirror.interval) == ("s3://bucket/runs/ck", local, 2.0)
    assert local_checkpoint_dir("s3://bucket/runs/ck") == local  # the trailing slash aside
    assert local_checkpoint_dir("s3://bucket/runs/other") != local
    monkeypatch.delenv(SCRATCH_DIR_ENV)
    assert "curator-checkpoints" in local_checkpoint_dir("s3://bucket/runs/ck").parts


# -- push -----------------------------------------------------------------------------

def test_close_pushes_a_snapshot_that_a_new_node_restores(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """A store's commits, with their statistics, reach the URL by its close; a driver
    with an empty disk restores them before its union is read."""
    url = f"s3://{bucket}/ck"
    mirror = CheckpointMirror(url, tmp_path / "node1", interval=60)
    with CheckpointStore(tmp_path / "node1" / "ingest" / "parse", writer_id="a",
                         mirror=mirror) as store:
        store.mark_completed({"0": {"kept": 3}, "1": None})
        store.mark_completed({"2": {"kept": 5}})
    objects = writer_objects(s3_server, bucket)
    assert list(objects) == [f"ingest/parse/{METADATA_DIRNAME}/a.mdb"]
    assert union_of(objects, tmp_path / "read") == {"0", "1", "2"}

    node2 = CheckpointMirror(url, tmp_path / "node2")
    with CheckpointStore(tmp_path / "node2" / "ingest" / "parse", writer_id="b",
                         mirror=node2) as store:
        assert store.completed == {"0", "1", "2"}
        assert store.stats() == {"0": {"kept": 3}, "2": {"kept": 5}}
    assert node2.restored
    assert (tmp_path / "node2" / "ingest" / "parse" / METADATA_DIRNAME / "a.mdb").is_file()


def test_pushes_are_at_most_one_per_interval_and_never_later_than_one(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """Many commits make few puts; a commit followed by no other is in storage within
    the interval (plus one put), without waiting for the store to close."""
    interval = 0.6
    mirror = CheckpointMirror(f"s3://{bucket}/ck", tmp_path / "l", interval=interval)
    store = CheckpointStore(tmp_path / "l" / "p", writer_id="w", mirror=mirror)
    try:
        started = time.monotonic()
        for i in range(40):
            store.mark_completed({str(i): None})
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        assert len(mirror.pushes) <= elapsed / interval + 2
        store.mark_completed({"last": None})
        committed = time.monotonic()
        while "last" not in union_of(writer_objects(s3_server, bucket), tmp_path / "r"):
            assert time.monotonic() - committed < interval + 5, "never mirrored"
            time.sleep(0.05)
        lag = time.monotonic() - committed
        put = max(p[3] for p in mirror.pushes)
        assert lag <= interval + put + 0.5
    finally:
        store.close()


def test_a_snapshot_taken_while_commits_run_is_always_consistent(tmp_path: Path) -> None:
    """Without LMDB's lock table a copy racing a commit could read pages the commit
    reuses: the store's lock keeps them apart. Every snapshot reads back cleanly and
    holds exactly the commits its version counts (what the mirror believes it put;
    without the lock the count runs ahead of the copy)."""
    store = CheckpointStore(tmp_path / "ck", writer_id="w")
    stop = threading.Event()
    snaps: list[tuple[int, Path]] = []

    def snapshotter() -> None:
        n = 0
        while not stop.is_set():
            dest = tmp_path / f"snap-{n}.mdb"
            snaps.append((store.snapshot(dest), dest))
            n += 1
            time.sleep(0.002)

    thread = threading.Thread(target=snapshotter)
    thread.start()
    try:
        for i in range(200):
            store.mark_completed({f"{i}-{j}": {"n": j} for j in range(20)})
    finally:
        stop.set()
        thread.join()
        store.close()
    assert len(snaps) > 5
    read = read_checkpoint_files([p for _, p in snaps])  # in a child: damage cannot crash us
    for version, path in snaps:
        result = read[path]
        assert not isinstance(result, BaseException), f"{path}: {result}"
        completed, stats = result
        assert completed == {f"{i}-{j}" for i in range(version) for j in range(20)}
        assert len(stats) == len(completed)


# -- restore --------------------------------------------------------------------------

def test_restore_takes_the_union_of_every_writer(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    url = f"s3://{bucket}/ck"
    for node, ids in (("n1", {"0", "1"}), ("n2", {"2"})):
        with CheckpointStore(tmp_path / node / "p", writer_id=node,
                             mirror=CheckpointMirror(url, tmp_path / node)) as store:
            store.mark_completed(dict.fromkeys(ids))
    fresh = CheckpointMirror(url, tmp_path / "n3")
    assert sorted(fresh.restore()) == [f"p/{METADATA_DIRNAME}/n1.mdb",
                                       f"p/{METADATA_DIRNAME}/n2.mdb"]
    assert fresh.restore() == []  # once per mirror
    with CheckpointStore(tmp_path / "n3" / "p", writer_id="n3", mirror=fresh) as store:
        assert store.completed == {"0", "1", "2"}


def test_restore_keeps_this_nodes_files_and_refreshes_other_writers(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """A node that restored before keeps its own newer file (its object may lag) and
    fetches again another writer's file that changed in storage since."""
    url = f"s3://{bucket}/ck"
    with CheckpointStore(tmp_path / "b" / "p", writer_id="b",
                         mirror=CheckpointMirror(url, tmp_path / "b")) as store:
        store.mark_completed({"b0": None})
    with CheckpointStore(tmp_path / "a" / "p", writer_id="a",
                         mirror=CheckpointMirror(url, tmp_path / "a")) as store:
        assert store.completed == {"b0"}
        store.mark_completed({"a0": None})
    # node a then commits locally without a mirror (as if killed before its push)
    with CheckpointStore(tmp_path / "a" / "p", writer_id="a") as store:
        store.mark_completed({"a1": None})
    with CheckpointStore(tmp_path / "b" / "p", writer_id="b",
                         mirror=CheckpointMirror(url, tmp_path / "b")) as store:
        store.mark_completed({"b1": None})
    again = CheckpointMirror(url, tmp_path / "a")
    assert again.restore() == [f"p/{METADATA_DIRNAME}/b.mdb"]
    with CheckpointStore(tmp_path / "a" / "p", writer_id="reader", mirror=again) as store:
        assert store.completed == {"a0", "a1", "b0", "b1"}
        # a1 is on a's disk only, until a driver there puts what earlier ones left
        assert union_of(writer_objects(s3_server, bucket), tmp_path / "r1") == {
            "a0", "b0", "b1"}
        assert again.push_local(tmp_path / "a" / "p") == [f"p/{METADATA_DIRNAME}/a.mdb"]
        assert again.push_local() == []  # once per change; b's and its own file: never
    assert union_of(writer_objects(s3_server, bucket), tmp_path / "r2") == {
        "a0", "a1", "b0", "b1"}


def test_a_mirror_reset_in_storage_is_not_resumed_from_a_stale_local_copy(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """Removing the checkpoint's objects resets it: the local copy of an earlier run on
    this node (same URL, same scratch directory) is not resumed."""
    url = f"s3://{bucket}/ck"
    with CheckpointStore(tmp_path / "l" / "p", writer_id="w",
                         mirror=CheckpointMirror(url, tmp_path / "l")) as store:
        store.mark_completed({"0": None})
    client = boto3.client("s3", endpoint_url=s3_server)
    for key in s3_objects(s3_server, bucket, "ck"):
        client.delete_object(Bucket=bucket, Key=f"ck/{key}")
    with CheckpointStore(tmp_path / "l" / "p", writer_id="w2",
                         mirror=CheckpointMirror(url, tmp_path / "l")) as store:
        assert store.completed == frozenset()
    assert not (tmp_path / "l" / "p" / METADATA_DIRNAME / "w.mdb").exists()
    assert GENERATION_NAME in s3_objects(s3_server, bucket, "ck")


def test_discard_removes_the_mirror_of_a_removed_checkpoint_only(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    url = f"s3://{bucket}/ck"
    mirror = CheckpointMirror(url, tmp_path / "l")
    for key in ("ingest", "filter"):
        with CheckpointStore(tmp_path / "l" / key / "p", writer_id="w", mirror=mirror) as s:
            s.mark_completed({key: None})
    assert mirror.discard(tmp_path / "l" / "ingest") == 1
    assert sorted(writer_objects(s3_server, bucket)) == [f"filter/p/{METADATA_DIRNAME}/w.mdb"]
    with pytest.raises(ValueError):
        mirror.discard(tmp_path / "elsewhere")


# -- failures -------------------------------------------------------------------------

def test_an_unreachable_mirror_fails_at_start_and_at_the_last_push(
        tmp_path: Path, s3_server: str, bucket: str, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(CuratorError) as info:
        CheckpointStore(tmp_path / "x" / "p", writer_id="w",
                        mirror=CheckpointMirror("s3://no-such-bucket-0/ck", tmp_path / "x"))
    assert info.value.error_id == "object_storage_error"

    url, client = f"s3://{bucket}/ck", boto3.client("s3", endpoint_url=s3_server)

    def drop_bucket() -> None:
        for key in s3_objects(s3_server, bucket):
            client.delete_object(Bucket=bucket, Key=key)
        client.delete_bucket(Bucket=bucket)

    mirror = CheckpointMirror(url, tmp_path / "l", interval=60)
    store = CheckpointStore(tmp_path / "l" / "p", writer_id="w", mirror=mirror)
    while not mirror.pushes:  # the first push (at open); the next one only at close
        time.sleep(0.05)
    store.mark_completed({"0": None})
    drop_bucket()
    with pytest.raises(CuratorError) as info:
        store.close()
    assert info.value.error_id == "checkpoint_mirror_failed"
    assert store.path.is_file() and read_checkpoint_file(store.path)[0] == {"0"}

    client.create_bucket(Bucket=bucket)  # a run that is failing keeps its own error
    mirror = CheckpointMirror(url, tmp_path / "m", interval=60)
    store = CheckpointStore(tmp_path / "m" / "p", writer_id="w", mirror=mirror)
    while not mirror.pushes:  # the first push (at open); the next one only at close
        time.sleep(0.05)
    store.mark_completed({"0": None})
    drop_bucket()
    with caplog.at_level(logging.ERROR, "curator.resumability"), \
            pytest.raises(KeyError, match="the run's own"):
        try:
            raise KeyError("the run's own")
        finally:
            store.close()
    assert "could not be mirrored" in caplog.text


# -- the engine -----------------------------------------------------------------------

def test_pipeline_run_with_a_mirror_resumes_on_an_empty_disk(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """Pipeline.run(checkpoint_mirror=...): a run that failed one partition is resumed
    from the mirror alone; only that partition runs again."""
    url, log = f"s3://{bucket}/ck", tmp_path / "run2.log"
    first = Pipeline("t", [Emit(n=4), Step(fail=("2",))]).run(
        InlineExecutor(), checkpoint_path=tmp_path / "n1" / "p",
        checkpoint_mirror=CheckpointMirror(url, tmp_path / "n1"))
    assert first.sources_pending == ["2"]
    second = Pipeline("t", [Emit(n=4), Step(log=str(log))]).run(
        InlineExecutor(), checkpoint_path=tmp_path / "n2" / "p",
        checkpoint_mirror=CheckpointMirror(url, tmp_path / "n2"))
    assert [r["source"] for r in read_log(log)] == ["2"]
    assert (second.sources_skipped, second.sources_completed) == (3, 1)
    assert union_of(writer_objects(s3_server, bucket), tmp_path / "r") == {"0", "1", "2", "3"}


def _driver(tmp_path: Path, tag: str, scratch: Path, ckpt: str, out: str, n: int,
            delay: float, interval: float, log: Path) -> Proc:
    argv = [sys.executable, str(SCRIPT), ckpt, out, str(n), str(delay), str(interval), str(log)]
    env = {SCRATCH_DIR_ENV: str(scratch), "PYTHONPATH": str(REPO)}
    return Proc(argv, tmp_path / "logs", tag, env=env)


def test_a_driver_killed_mid_run_is_resumed_by_a_new_node_from_the_mirror(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """SIGKILL mid-run, then a new driver whose scratch directory is new and empty: it
    skips exactly what the mirror held at the kill, redoes only partitions finished in
    the last interval before it, and every partition's object is there once."""
    n, interval, slack = 120, 0.5, 2.5  # slack: a commit's delay and one (slow) put
    ckpt, out = f"s3://{bucket}/ck", f"s3://{bucket}/out"
    log1, log2 = tmp_path / "run1.log", tmp_path / "run2.log"
    with _driver(tmp_path, "run1", tmp_path / "scratch1", ckpt, out, n, 0.05, interval,
                 log1) as proc:
        deadline = time.monotonic() + 120
        while True:  # kill once several intervals of partitions are done
            done = read_log(log1)
            if len(done) >= 40 and done[-1]["t"] - done[0]["t"] >= interval + slack + 2:
                break
            assert proc.popen is not None and proc.popen.poll() is None, "run 1 ended"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        killed_at = time.time()
        os.killpg(proc.pid, 9)
        proc.popen.wait(10)
    first = {r["source"]: r["t"] for r in read_log(log1)}
    assert len(first) < n
    mirrored = union_of(writer_objects(s3_server, bucket), tmp_path / "at-kill")
    local1 = local_checkpoint_dir(ckpt).name
    recorded = set()
    for path in (tmp_path / "scratch1" / local1).rglob(f"{METADATA_DIRNAME}/*.mdb"):
        recorded |= read_checkpoint_file(path)[0]  # the writer files, not a push's snapshot
    assert mirrored and mirrored <= recorded <= set(first)
    recent = {s for s, t in first.items() if t >= killed_at - interval - slack}
    assert set(first) - recent, "the kill came too early to tell a mirror from none"
    assert set(first) - recent <= mirrored  # older than the last interval: in storage

    scratch2 = tmp_path / "scratch2"
    scratch2.mkdir()
    with _driver(tmp_path, "run2", scratch2, ckpt, out, n, 0.0, interval, log2) as proc:
        assert proc.popen is not None and proc.popen.wait(240) == 0, \
            proc.stderr_path.read_text()
    second = [r["source"] for r in read_log(log2)]
    everything = {str(i) for i in range(n)}
    assert sorted(second) == sorted(everything - mirrored)  # each once, none mirrored
    redone = set(second) & set(first)
    print(f"run 1: {len(first)} partitions in {max(first.values()) - min(first.values()):.1f} s, "
          f"{len(recorded)} recorded locally, {len(mirrored)} mirrored at the kill; "
          f"{len(recent)} in the last interval + slack; run 2 redid {len(redone)}, "
          f"ran {len(second)}")
    assert redone <= recent and len(redone) <= len(recent)
    objects = s3_objects(s3_server, bucket, "out")
    assert sorted(objects) == sorted(f"{s}.json" for s in everything)
    assert all(json.loads(v)["source"] == k[:-5] for k, v in objects.items())
    assert union_of(writer_objects(s3_server, bucket), tmp_path / "end") == everything
    assert json.loads(proc.stdout_path.read_text())["skipped"] == len(mirrored)
