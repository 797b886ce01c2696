"""The checkpoint store: layout, union of writers (two hosts with one pid too), damaged
files, filesystem guard.

Scenarios 14 (store side), 15, 16; gaps 2 and 9.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest

from curator.checkpoint import (
    COMPLETED_DB,
    METADATA_DIRNAME,
    STATS_DB,
    CheckpointStore,
    check_local_filesystem,
    filesystem_type,
    read_checkpoint_file,
    read_checkpoint_files,
)
from curator.errors import CuratorError
from curator.pipeline import Pipeline
from tests.unit._support import Emit, Step, completed_on_disk, crasher_bytes

LOG = "curator.resumability"
PAGE = 4096
POPULATED = [f"d{i:05d}" for i in range(5000)]


@pytest.fixture(scope="module")
def populated(tmp_path_factory) -> bytes:
    """The bytes of a real writer file holding 5000 completed sources with stats."""
    root = tmp_path_factory.mktemp("populated")
    with CheckpointStore(root, writer_id="donor") as store:
        store.mark_completed({sid: {"rows": i} for i, sid in enumerate(POPULATED)})
        path = store.path
    data = path.read_bytes()
    assert len(data) > 20 * PAGE  # several data pages beyond the two meta pages
    return data


def meta_dir(root: Path) -> Path:
    return root / METADATA_DIRNAME


def names(root: Path) -> list[str]:
    return sorted(p.name for p in meta_dir(root).iterdir())


# -- layout and scenario 14 ---------------------------------------------------------

def test_layout_one_sparse_file_per_writer(tmp_path) -> None:
    with CheckpointStore(tmp_path / "ck", writer_id="host-42") as store:
        assert store.path == (tmp_path / "ck" / METADATA_DIRNAME / "host-42.mdb").absolute()
        store.mark_completed({"a": {"n": 1}, "b": None})
    assert names(tmp_path / "ck") == ["host-42.mdb"]  # lock=False: no lock file
    completed, stats = read_checkpoint_file(tmp_path / "ck" / METADATA_DIRNAME / "host-42.mdb")
    assert completed == {"a", "b"}
    assert stats == {"a": {"n": 1}}


def test_default_writer_id_is_host_and_pid(tmp_path) -> None:
    with CheckpointStore(tmp_path) as store:
        assert store.path.name.endswith(f"-{os.getpid()}.mdb")


def test_writer_id_cannot_escape_the_metadata_dir(tmp_path) -> None:
    with CheckpointStore(tmp_path / "ck", writer_id="../../evil/host 1") as store:
        assert store.path.parent == (tmp_path / "ck" / METADATA_DIRNAME).absolute()
        assert "/" not in store.path.name and not store.path.name.startswith(".")


def test_scenario_14_store_keeps_only_completed_ids(tmp_path) -> None:
    """Scenario 14: an empty writer leaves an empty file; completed ids survive reopen."""
    ck = tmp_path / "ck"
    with CheckpointStore(ck, writer_id="w-1"):
        pass
    assert completed_on_disk(ck) == frozenset()
    with CheckpointStore(ck, writer_id="w-1") as store:
        store.mark_completed({"0": None})
    assert completed_on_disk(ck) == {"0"}


# -- scenario 15: multi-writer union -------------------------------------------------

def test_scenario_15_multi_writer_union(tmp_path) -> None:
    """Scenario 15: A completes 0; B sees [True, False] and completes 1; C sees {0, 1}."""
    ck = tmp_path / "ck"
    with CheckpointStore(ck, writer_id="hostA-1") as a:
        a.mark_completed({"0": {"rows": 1}})
    with CheckpointStore(ck, writer_id="hostB-2") as b:
        assert b.are_completed(["0", "1"]) == [True, False]
        b.mark_completed({"1": {"rows": 2}})
        assert b.are_completed(["0", "1"]) == [True, True]
    with CheckpointStore(ck, writer_id="hostC-3") as c:
        assert c.completed == {"0", "1"}
        assert c.stats() == {"0": {"rows": 1}, "1": {"rows": 2}}
    assert names(ck) == ["hostA-1.mdb", "hostB-2.mdb", "hostC-3.mdb"]


def test_uncomplete_deletes_only_from_the_own_file(tmp_path) -> None:
    """As in the reference: another writer's record reappears in the next union."""
    ck = tmp_path / "ck"
    with CheckpointStore(ck, writer_id="hostA-1") as a:
        a.mark_completed({"x": None, "y": None})
    with CheckpointStore(ck, writer_id="hostB-2") as b:
        b.mark_completed({"y": None})
        b.uncomplete("x")
        b.uncomplete("y")
        assert b.are_completed(["x", "y"]) == [False, False]
        assert b.completed == frozenset()
    assert read_checkpoint_file(meta_dir(ck) / "hostB-2.mdb")[0] == set()
    assert completed_on_disk(ck) == {"x", "y"}


def test_refreshed_stats_sees_other_writers_that_finished_meanwhile(tmp_path) -> None:
    ck = tmp_path / "ck"
    with CheckpointStore(ck, writer_id="hostA-1") as a:
        with CheckpointStore(ck, writer_id="hostB-2") as b:
            b.mark_completed({"b": {"n": 2}})
        a.mark_completed({"a": {"n": 1}})
        assert a.completed == {"a"}  # B finished after A started
        # statistics are read from disk when first asked for, so they include B's
        assert a.stats() == {"a": {"n": 1}, "b": {"n": 2}}
        assert a.refreshed_stats() == {"a": {"n": 1}, "b": {"n": 2}}
        assert a.completed == {"a", "b"}


def _this_host() -> str:
    host = socket.gethostname()
    assert host and all(c.isalnum() or c in ".-" for c in host), host
    return host


def test_two_hosts_with_the_same_pid_write_separate_checkpoint_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two hosts see the same checkpoint path; host B's driver had this process's
    pid. Its file is another writer's: this run gets its own file, reads B's completions
    as part of the union and leaves B's file as it was. (Host B is this process with
    ``socket.gethostname`` answering another name: one machine has one host name.)"""
    ck = tmp_path / "ck"
    with monkeypatch.context() as m:
        m.setattr(socket, "gethostname", lambda: "host-b")
        with CheckpointStore(ck) as other:
            other.mark_completed({"b0": {"rows": 3}})
            other_path = other.path
    assert other_path.name == f"host-b-{os.getpid()}.mdb"
    before = other_path.read_bytes()
    with CheckpointStore(ck) as store:
        assert store.path != other_path
        assert store.path.name == f"{_this_host()}-{os.getpid()}.mdb"
        assert store.completed == {"b0"}
        store.mark_completed({"a0": {"rows": 1}})
        assert store.stats() == {"a0": {"rows": 1}, "b0": {"rows": 3}}
    assert other_path.read_bytes() == before
    assert read_checkpoint_file(other_path)[0] == {"b0"}
    assert completed_on_disk(ck) == {"a0", "b0"}


# -- scenario 16 and gap 2: damaged files ----------------------------------------------

def _random(data: bytes) -> bytes:
    return random.Random(1).randbytes(64 * 1024)


def _empty(data: bytes) -> bytes:
    return b""


def _truncated_half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _truncated_three_pages(data: bytes) -> bytes:
    return data[: 3 * PAGE]


def _truncated_tail(data: bytes) -> bytes:
    return data[:-100]


def _data_pages_garbage(data: bytes) -> bytes:
    rnd = random.Random(7)
    return data[: 2 * PAGE] + rnd.randbytes(len(data) - 2 * PAGE)


def _data_pages_ff(data: bytes) -> bytes:
    return data[: 2 * PAGE] + b"\xff" * (len(data) - 2 * PAGE)


DAMAGE = [
    _random, _empty, _truncated_half, _truncated_three_pages, _truncated_tail,
    _data_pages_garbage, _data_pages_ff,
]


def _intact_writer(root: Path) -> None:
    with CheckpointStore(root, writer_id="hostA-1") as good:
        good.mark_completed({"g0": {"rows": 1}, "g1": {"rows": 2}})


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_scenario_16_damaged_file_is_skipped_with_a_warning(
    tmp_path, caplog, populated, damage
) -> None:
    """Scenario 16 / gap 2: skipped, named in a warning, the rest unioned, its sources replay."""
    ck = tmp_path / "ck"
    _intact_writer(ck)
    bad = meta_dir(ck) / "hostB-2.mdb"
    bad.write_bytes(damage(populated))
    caplog.set_level(logging.WARNING, logger=LOG)
    with CheckpointStore(ck, writer_id="hostC-3") as store:
        assert store.completed == {"g0", "g1"}
        assert not any(store.are_completed(POPULATED[:10] + POPULATED[-10:]))
        assert store.skipped_files == [bad]
        assert store.stats() == {"g0": {"rows": 1}, "g1": {"rows": 2}}
        store.mark_completed({"new": None})  # the run goes on
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("skipping unreadable checkpoint" in w and str(bad) in w for w in warnings)
    assert bad.exists()  # another writer's file is left alone
    assert completed_on_disk(ck) == {"g0", "g1", "new"}


def test_data_pages_damage_opens_but_fails_on_read(populated, tmp_path) -> None:
    """The case that aborts the reference: the file opens, the read fails."""
    import lmdb

    path = tmp_path / "x.mdb"
    path.write_bytes(_data_pages_garbage(populated))
    lmdb.open(str(path), subdir=False, readonly=True, lock=False, max_dbs=2).close()
    with pytest.raises(lmdb.Error):
        read_checkpoint_file(path)


def _bigdata_size_tampered(root: Path) -> Path:
    """A file LMDB opens and reads past its end: SIGBUS in the reading process."""
    bad = root.parent / "crasher.mdb"
    bad.write_bytes(crasher_bytes(root))
    return bad


def test_gap2_file_that_crashes_the_reader_is_skipped(tmp_path, caplog) -> None:
    """Gap 2: damage LMDB does not detect kills the reader; the store skips the file."""
    crasher = _bigdata_size_tampered(tmp_path / "donor")
    probe = subprocess.run(
        [sys.executable, "-c",
         "import sys; from curator.checkpoint import read_checkpoint_file as r; "
         "r(sys.argv[1])", str(crasher)],
        capture_output=True, timeout=60,
    )
    assert probe.returncode < 0, "precondition: this file kills an in-process reader"
    ck = tmp_path / "ck"
    _intact_writer(ck)
    bad = meta_dir(ck) / "hostB-2.mdb"
    bad.write_bytes(crasher.read_bytes())
    (meta_dir(ck) / "hostZ-9.mdb").write_bytes(b"")  # files after it are still read
    caplog.set_level(logging.WARNING, logger=LOG)
    with CheckpointStore(ck, writer_id="hostC-3") as store:
        assert store.completed == {"g0", "g1"}
        assert store.skipped_files == [bad, meta_dir(ck) / "hostZ-9.mdb"]
    assert any(str(bad) in r.getMessage() and "died" in r.getMessage() for r in caplog.records)


def test_a_good_file_sorting_after_a_reader_crash_is_still_read(tmp_path: Path) -> None:
    """The reader process dies on ``a-crash.mdb``; ``b-good.mdb`` (after it by name)
    is still read, at start-up and when the statistics are merged."""
    crash = crasher_bytes(tmp_path / "donor")
    probe = tmp_path / "probe.mdb"
    probe.write_bytes(crash)
    died = subprocess.run(
        [sys.executable, "-c", "import sys; from curator.checkpoint import "
         "read_checkpoint_file as r; r(sys.argv[1])", str(probe)],
        capture_output=True, timeout=60, cwd=Path(__file__).resolve().parents[2],
    )
    assert died.returncode < 0, "precondition: this file kills the process that reads it"

    ck = tmp_path / "ck"
    with CheckpointStore(ck, writer_id="b-good") as good:
        good.mark_completed({"g0": {"rows": 1}, "g1": {"rows": 2}})
    meta = ck / METADATA_DIRNAME
    bad = meta / "a-crash.mdb"
    bad.write_bytes(crash)
    assert sorted(p.name for p in meta.glob("*.mdb")) == ["a-crash.mdb", "b-good.mdb"]

    results = read_checkpoint_files(sorted(meta.glob("*.mdb")))
    assert isinstance(results[bad], Exception) and "died" in str(results[bad])
    assert results[meta / "b-good.mdb"] == ({"g0", "g1"}, {"g0": {"rows": 1}, "g1": {"rows": 2}})

    with CheckpointStore(ck, writer_id="c-me") as store:
        assert store.completed == {"g0", "g1"}
        assert store.skipped_files == [bad]
        assert store.stats() == {"g0": {"rows": 1}, "g1": {"rows": 2}}
        assert store.skipped_files == [bad]


def test_read_checkpoint_files_reports_each_file(tmp_path, populated) -> None:
    good = tmp_path / "good.mdb"
    good.write_bytes(populated)
    bad = tmp_path / "bad.mdb"
    bad.write_bytes(_truncated_half(populated))
    results = read_checkpoint_files([bad, good])
    assert isinstance(results[bad], Exception)
    assert "truncated" in str(results[bad])
    completed, stats = results[good]
    assert completed == set(POPULATED)
    assert stats["d00007"] == {"rows": 7}


def _put_raw_stats(path: Path, values: dict[str, bytes]) -> None:
    """Store statistics values byte for byte (and their ids as completed)."""
    env = lmdb.open(str(path), subdir=False, lock=False, max_dbs=2)
    try:
        done, stats = env.open_db(COMPLETED_DB), env.open_db(STATS_DB)
        with env.begin(write=True) as txn:
            for sid, raw in values.items():
                txn.put(sid.encode(), b"1", db=done)
                txn.put(sid.encode(), raw, db=stats)
    finally:
        env.close()


def test_statistics_read_by_the_child_equal_those_read_in_process(tmp_path) -> None:
    """The child sends stored statistics without re-encoding them (the fast path), or,
    for a value that is not one-line ASCII JSON, parsed and re-encoded: both give what
    reading the file in this process gives."""
    plain, odd = tmp_path / "plain.mdb", tmp_path / "odd.mdb"
    with CheckpointStore(tmp_path / "ck", writer_id="w") as store:
        store.mark_completed({'q"uote\\': {"rows": 1, "s.x": 2.5}, "b": {}, "c": None})
        store.path.rename(plain)
    _put_raw_stats(odd, {"a": b'{"rows":\n 3}', "\u00e9": '{"name": "caf\u00e9"}'.encode(),
                         "n": b"[1, 2]"})
    results = read_checkpoint_files([plain, odd])
    for path in (plain, odd):
        assert results[path] == read_checkpoint_file(path)
    assert results[plain][1] == {'q"uote\\': {"rows": 1, "s.x": 2.5}, "b": {}}
    assert results[odd][1] == {"a": {"rows": 3}, "\u00e9": {"name": "caf\u00e9"}, "n": [1, 2]}


def test_statistics_that_are_not_json_refuse_the_file(tmp_path) -> None:
    bad = tmp_path / "bad.mdb"
    _put_raw_stats(bad, {"a": b'{"rows": 1}', "b": b'{"rows": 2}, {"rows": 3}'})
    ids_only = read_checkpoint_files([bad], with_stats=False)[bad]
    assert ids_only == ({"a", "b"}, {})  # start-up: the pages are walked, not parsed
    with_stats = read_checkpoint_files([bad])[bad]
    assert isinstance(with_stats, Exception)
    assert "JSONDecodeError" in str(with_stats)


def test_gap2_own_damaged_file_is_moved_aside_and_the_run_continues(
    tmp_path, caplog, populated
) -> None:
    """Gap 2: a damaged file with this writer's own name is moved aside; the run goes on."""
    ck = tmp_path / "ck"
    _intact_writer(ck)
    own = meta_dir(ck) / "me-1.mdb"
    own.write_bytes(_data_pages_garbage(populated))
    caplog.set_level(logging.WARNING, logger=LOG)
    result = Pipeline("p", [Emit(n=3), Step()]).run(checkpoint_path=ck, writer_id="me-1")
    assert sorted(t.source_id for t in result.tasks) == ["0", "1", "2"]
    aside = meta_dir(ck) / "me-1.mdb.damaged"
    assert aside.read_bytes() == _data_pages_garbage(populated)
    assert read_checkpoint_file(own)[0] == {"0", "1", "2"}
    messages = [r.getMessage() for r in caplog.records]
    assert any("skipping unreadable checkpoint" in m and str(own) in m for m in messages)
    assert any("moved damaged checkpoint" in m and str(aside) in m for m in messages)
    assert completed_on_disk(ck) == {"g0", "g1", "0", "1", "2"}


# -- gap 9: network filesystems ------------------------------------------------------

def _mounts(tmp_path: Path, fstype: str, mount_point: Path) -> Path:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/sda1 / ext4 rw,relatime 0 0\n"
        "proc /proc proc rw 0 0\n"
        f"server:/export {mount_point} {fstype} rw,vers=4.2 0 0\n"
    )
    return mounts


@pytest.mark.parametrize("fstype", ["nfs", "nfs4", "cifs", "fuse.sshfs", "lustre"])
def test_gap9_network_filesystem_is_refused(tmp_path, monkeypatch, fstype) -> None:
    """Gap 9: a checkpoint on a network filesystem is refused with a clear error id."""
    monkeypatch.delenv("CURATE_CHECKPOINT_ALLOW_NETWORK_FS", raising=False)
    mnt = tmp_path / "mnt"
    ckpt = mnt / "run" / "ckpt"
    ckpt.mkdir(parents=True)
    mounts = _mounts(tmp_path, fstype, mnt)
    assert filesystem_type(ckpt, mounts) == fstype
    with pytest.raises(CuratorError) as info:
        check_local_filesystem(ckpt, mounts)
    assert info.value.error_id == "checkpoint_on_network_filesystem"
    assert fstype in str(info.value) and "CURATE_CHECKPOINT_ALLOW_NETWORK_FS" in str(info.value)


def test_gap9_local_filesystem_is_accepted(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CURATE_CHECKPOINT_ALLOW_NETWORK_FS", raising=False)
    mounts = _mounts(tmp_path, "nfs4", tmp_path / "elsewhere")
    assert filesystem_type(tmp_path, mounts) == "ext4"
    check_local_filesystem(tmp_path, mounts)
    # a mount point that merely shares a prefix is not a parent
    sibling = tmp_path / "mnt-other"
    sibling.mkdir()
    check_local_filesystem(sibling, _mounts(tmp_path, "nfs", tmp_path / "mnt"))
    # and the real machine's checkpoint directory works end to end
    with CheckpointStore(tmp_path / "ck", writer_id="w-1") as store:
        store.mark_completed({"0": None})


def test_gap9_env_override_accepts_a_network_filesystem(tmp_path, monkeypatch) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounts = _mounts(tmp_path, "nfs", mnt)
    monkeypatch.setenv("CURATE_CHECKPOINT_ALLOW_NETWORK_FS", "1")
    check_local_filesystem(mnt, mounts)
    monkeypatch.setenv("CURATE_CHECKPOINT_ALLOW_NETWORK_FS", "0")
    with pytest.raises(CuratorError):
        check_local_filesystem(mnt, mounts)


def test_gap9_unknown_mounts_are_not_refused(tmp_path) -> None:
    assert filesystem_type(tmp_path, tmp_path / "no-such-mounts") is None
    check_local_filesystem(tmp_path, tmp_path / "no-such-mounts")


def test_a_network_filesystem_mounted_over_a_local_one_is_refused(tmp_path: Path) -> None:
    """``/proc/mounts`` lists mounts in mount order; at one mount point the last
    one is what the path is on. NFS mounted over a local directory is NFS (refused); a
    local filesystem mounted over an NFS one is local (accepted)."""
    mnt = tmp_path / "mnt"
    ckpt = mnt / "ck"
    ckpt.mkdir(parents=True)
    nfs_on_top = tmp_path / "mounts-nfs-on-top"
    nfs_on_top.write_text(
        "/dev/sda1 / ext4 rw 0 0\n"
        f"/dev/sdb1 {mnt} ext4 rw 0 0\n"
        f"server:/export {mnt} nfs4 rw,vers=4.2 0 0\n"
    )
    assert filesystem_type(ckpt, nfs_on_top) == "nfs4"
    with pytest.raises(CuratorError) as exc:
        check_local_filesystem(ckpt, nfs_on_top)
    assert exc.value.error_id == "checkpoint_on_network_filesystem"

    local_on_top = tmp_path / "mounts-local-on-top"
    local_on_top.write_text(
        "/dev/sda1 / ext4 rw 0 0\n"
        f"server:/export {mnt} nfs4 rw,vers=4.2 0 0\n"
        f"/dev/sdb1 {mnt} xfs rw 0 0\n"
    )
    assert filesystem_type(ckpt, local_on_top) == "xfs"
    check_local_filesystem(ckpt, local_on_top)


def test_two_stores_on_one_directory_in_one_process_get_their_own_files(tmp_path) -> None:
    """Two pipelines at once in one process with the same checkpoint path: no clash."""
    from curator.checkpoint import CheckpointStore

    first = CheckpointStore(tmp_path, writer_id="host-1")
    second = CheckpointStore(tmp_path, writer_id="host-1")
    try:
        assert first.path != second.path
        first.mark_completed({"a": None})
        second.mark_completed({"b": None})
    finally:
        first.close()
        second.close()
    names = sorted(p.name for p in (tmp_path / ".nemo_curator_metadata").glob("*.mdb"))
    assert names == ["host-1-2.mdb", "host-1.mdb"]
    with CheckpointStore(tmp_path, writer_id="host-1") as third:  # released on close
        assert third.path.name == "host-1.mdb"
        assert third.completed == {"a", "b"}
