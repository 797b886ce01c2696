"""The checkpoint store: completed source ids in sparse LMDB files, one per writer.

Layout (kept compatible with the reference)::

    <checkpoint_path>/.nemo_curator_metadata/<hostname>-<pid>.mdb

Each writer owns one file and writes only to it. At start the store reads the
union of every ``*.mdb`` in the directory. A file that cannot be opened *or read*
(random bytes, truncated, empty, damaged data pages) is skipped with a warning
naming it; its sources replay. Only completed ids are stored (db
``completed_sources``, value ``b"1"``), never pending counts. Beside them, db
``source_stats`` holds each completed source's statistics as JSON, written in the
same transaction, so a resumed run's totals can be merged from disk.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import lmdb

from curator.errors import CuratorError

log = logging.getLogger("curator.resumability")

METADATA_DIRNAME = ".nemo_curator_metadata"
DEFAULT_MAP_SIZE = 1 << 30
COMPLETED_DB = b"completed_sources"
STATS_DB = b"source_stats"

#: Filesystems on which LMDB's memory map and locking are unsafe or hang.
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "ncpfs", "afs",
        "9p", "fuse.sshfs", "sshfs", "lustre", "gpfs", "beegfs", "glusterfs",
        "fuse.glusterfs", "ceph", "fuse.ceph", "fuse.s3fs", "fuse.gcsfuse",
        "fuse.rclone", "fuse.juicefs", "panfs", "wekafs",
    }
)

_ENV_ALLOW_NETWORK_FS = "CURATE_CHECKPOINT_ALLOW_NETWORK_FS"


def filesystem_type(path: Path, mounts_file: Path = Path("/proc/mounts")) -> str | None:
    """The type of the filesystem holding ``path`` (longest mount-point prefix), if known."""
    try:
        lines = mounts_file.read_text().splitlines()
    except OSError:
        return None
    target = str(path.resolve())
    best, best_type = "", None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount_point = parts[1].replace("\\040", " ")
        if (target == mount_point or target.startswith(mount_point.rstrip("/") + "/")) and len(
            mount_point
        ) >= len(best):
            best, best_type = mount_point, parts[2]
    return best_type


def check_local_filesystem(path: Path, mounts_file: Path = Path("/proc/mounts")) -> None:
    """Refuse a checkpoint directory on a network filesystem (LMDB hangs there)."""
    fstype = filesystem_type(path, mounts_file)
    if fstype in NETWORK_FILESYSTEMS and os.environ.get(_ENV_ALLOW_NETWORK_FS) != "1":
        raise CuratorError(
            "checkpoint_on_network_filesystem",
            f"checkpoint_path {path} is on a {fstype} filesystem; LMDB is not safe on "
            "network filesystems and can hang. Use a local directory (each host may keep "
            f"its own), or set {_ENV_ALLOW_NETWORK_FS}=1 if your filesystem provides "
            "coherent mmap (at your own risk).",
        )


def default_writer_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _safe_writer_id(writer_id: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-." else "-" for c in writer_id).strip(".")
    return cleaned or "writer"


def read_checkpoint_file(path: Path) -> tuple[set[str], dict[str, dict[str, Any]]]:
    """Read one writer file completely; raise on any damage (open or read)."""
    env = lmdb.open(
        str(path), subdir=False, readonly=True, lock=False, max_dbs=2, readahead=False
    )
    try:
        completed: set[str] = set()
        stats: dict[str, dict[str, Any]] = {}
        with env.begin() as txn:
            names = {k for k, _ in txn.cursor()}
        if COMPLETED_DB in names:
            db = env.open_db(COMPLETED_DB, create=False)
            with env.begin(db=db) as txn:
                completed = {k.decode("utf-8") for k, _ in txn.cursor()}
        if STATS_DB in names:
            db = env.open_db(STATS_DB, create=False)
            with env.begin(db=db) as txn:
                stats = {k.decode("utf-8"): json.loads(v) for k, v in txn.cursor()}
        return completed, {k: v for k, v in stats.items() if k in completed}
    finally:
        env.close()


class CheckpointStore:
    """Completed source ids for one checkpoint directory, as seen by one writer."""

    def __init__(
        self,
        checkpoint_path: str | os.PathLike[str],
        writer_id: str | None = None,
        map_size: int = DEFAULT_MAP_SIZE,
        check_filesystem: bool = True,
    ) -> None:
        self.root = Path(checkpoint_path).absolute()
        self.root.mkdir(parents=True, exist_ok=True)
        if check_filesystem:
            check_local_filesystem(self.root)
        self.dir = self.root / METADATA_DIRNAME
        self.dir.mkdir(exist_ok=True)
        self.path = self.dir / f"{_safe_writer_id(writer_id or default_writer_id())}.mdb"
        self.skipped_files: list[Path] = []
        self._completed: set[str] = set()
        self._stats: dict[str, dict[str, Any]] = {}
        self._load_union()
        self._env = self._open_own(map_size)
        self._db = self._env.open_db(COMPLETED_DB)
        self._stats_db = self._env.open_db(STATS_DB)

    # -- start-up -----------------------------------------------------------------
    def _load_union(self, exclude: Path | None = None) -> None:
        for path in sorted(self.dir.glob("*.mdb")):
            if path == exclude:
                continue
            try:
                completed, stats = read_checkpoint_file(path)
            except Exception as exc:  # any damage, at open or at read
                log.warning(
                    "resumability: skipping unreadable checkpoint %s (%s: %s); its sources "
                    "will be processed again",
                    path, type(exc).__name__, exc,
                )
                self.skipped_files.append(path)
                continue
            self._completed |= completed
            self._stats.update(stats)

    def _open_own(self, map_size: int) -> lmdb.Environment:
        if self.path in self.skipped_files:  # our own name is taken by a damaged file
            aside = self.path.with_name(self.path.name + ".damaged")
            os.replace(self.path, aside)
            log.warning("resumability: moved damaged checkpoint %s to %s", self.path, aside)
        return lmdb.open(
            str(self.path), subdir=False, lock=False, max_dbs=2, map_size=map_size,
            metasync=False, sync=True, readahead=False,
        )

    # -- queries ------------------------------------------------------------------
    @property
    def completed(self) -> frozenset[str]:
        return frozenset(self._completed)

    def are_completed(self, source_ids: Iterable[str]) -> list[bool]:
        return [sid in self._completed for sid in source_ids]

    def stats(self) -> dict[str, dict[str, Any]]:
        """Statistics of every completed source, from every readable writer file."""
        return {sid: self._stats[sid] for sid in self._completed if sid in self._stats}

    def refreshed_stats(self) -> dict[str, dict[str, Any]]:
        """Re-read every writer file from disk (this writer's through its open handle)."""
        self._completed, self._stats, self.skipped_files = set(), {}, []
        self._load_union(exclude=self.path)
        with self._env.begin(db=self._db) as txn:
            self._completed |= {k.decode("utf-8") for k, _ in txn.cursor()}
        with self._env.begin(db=self._stats_db) as txn:
            self._stats.update({k.decode("utf-8"): json.loads(v) for k, v in txn.cursor()})
        return self.stats()

    # -- updates ------------------------------------------------------------------
    def mark_completed(self, sources: Mapping[str, Mapping[str, Any] | None]) -> None:
        """Record sources as completed, with their statistics, in one durable commit."""
        if not sources:
            return
        with self._env.begin(write=True) as txn:
            for sid, stats in sources.items():
                key = sid.encode("utf-8")
                txn.put(key, b"1", db=self._db)
                if stats is not None:
                    txn.put(key, json.dumps(stats, sort_keys=True).encode(), db=self._stats_db)
        for sid, stats in sources.items():
            self._completed.add(sid)
            if stats is not None:
                self._stats[sid] = dict(stats)

    def uncomplete(self, source_id: str) -> None:
        """Forget a completion (in memory and in this writer's own file only)."""
        self._completed.discard(source_id)
        self._stats.pop(source_id, None)
        key = source_id.encode("utf-8")
        with self._env.begin(write=True) as txn:
            txn.delete(key, db=self._db)
            txn.delete(key, db=self._stats_db)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None  # type: ignore[assignment]

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
