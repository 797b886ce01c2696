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

LMDB has no checksums and trusts its pages: a truncated file makes it touch memory
past the end of the file (SIGBUS), and a damaged page can make it read out of
bounds or abort. So every file's structure is checked before it is opened, and the
union is read in a short-lived child process: a file that kills the reader is
skipped like any other unreadable one, and the run goes on.

With ``mirror=`` (a :class:`~curator.checkpoint_mirror.CheckpointMirror`) the store
first restores the mirror's writer files, then has its own file pushed to object
storage after its commits (at most every ``mirror.interval`` seconds) and once more
when it closes: a checkpoint that survives the driver's node.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lmdb

from curator.errors import CuratorError

if TYPE_CHECKING:
    from curator.checkpoint_mirror import CheckpointMirror

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


_META_MAGIC = 0xBEEFC0DE
_META_VERSION = 1
_PAGE_HEADER = 16  # pgno (8), pad (2), flags (2), lower/upper (4)


class DamagedCheckpointError(lmdb.Error):
    """A writer file that is damaged in a way LMDB would not survive reading."""


def check_file_structure(path: Path) -> None:
    """Refuse a file LMDB would crash on: bad meta pages, or shorter than they say.

    Both meta pages (pages 0 and 1) must carry LMDB's magic and version, and the
    file must hold every page up to the last one either meta page references.
    """
    if struct.calcsize("P") != 8:  # pragma: no cover - the layout below is 64-bit
        return
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(2 * 65536)
    if len(head) < 2 * 4096:
        raise DamagedCheckpointError(f"{size} bytes, smaller than two meta pages")
    psize = struct.unpack_from("=I", head, _PAGE_HEADER + 24)[0]  # mm_psize (free db pad)
    if psize < 512 or psize > 65536 or psize & (psize - 1) or len(head) < 2 * psize:
        raise DamagedCheckpointError(f"invalid page size {psize} in meta page 0")
    last_pages = []
    for meta in range(2):
        off = meta * psize + _PAGE_HEADER
        magic, version = struct.unpack_from("=II", head, off)
        if magic != _META_MAGIC or version != _META_VERSION:
            raise DamagedCheckpointError(f"meta page {meta} is not an LMDB meta page")
        last_pages.append(struct.unpack_from("=Q", head, off + 120)[0])  # mm_last_pg
    needed = (max(last_pages) + 1) * psize
    if size < needed:
        raise DamagedCheckpointError(
            f"truncated: {size} bytes, but its meta pages reference {needed}"
        )


def read_checkpoint_file(
    path: Path, with_stats: bool = True
) -> tuple[set[str], dict[str, dict[str, Any]]]:
    """Read one writer file completely; raise on any damage (open or read).

    Statistics are parsed only when asked for: a run needs them at its end, not
    at start-up, where parsing them was most of the time to open a large union.
    Their pages are read either way, so a file damaged there is refused at once,
    never counted complete at start and dropped at the end.

    This runs LMDB in the calling process: a page damaged in an unlucky way can
    still crash it. :class:`CheckpointStore` calls it in a child process.
    """
    check_file_structure(Path(path))
    env = lmdb.open(
        str(path), subdir=False, readonly=True, lock=False, max_dbs=2, readahead=False
    )
    try:
        completed, raw = _read_raw(env, with_stats)
        stats = {k: json.loads(v) for k, v in raw.items()}
        return completed, stats
    finally:
        env.close()


def _read_raw(env: lmdb.Environment, with_stats: bool) -> tuple[set[str], dict[str, bytes]]:
    """Completed ids, and (``with_stats``) the raw JSON statistics of those ids.

    The statistics pages are walked either way (damage there is found at start-up).
    """
    completed: set[str] = set()
    raw: dict[str, bytes] = {}
    with env.begin() as txn:
        names = {k for k, _ in txn.cursor()}
    if COMPLETED_DB in names:
        db = env.open_db(COMPLETED_DB, create=False)
        with env.begin(db=db) as txn:
            completed = {k.decode("utf-8") for k in txn.cursor().iternext(values=False)}
    if STATS_DB in names:  # always walked, so damage there is found at start-up too
        db = env.open_db(STATS_DB, create=False)
        with env.begin(db=db) as txn:
            if with_stats:
                pairs = ((k.decode("utf-8"), v) for k, v in txn.cursor().iternext())
                raw = {k: v for k, v in pairs if k in completed}
            else:
                for _ in txn.cursor().iternext():
                    pass
    return completed, raw


_READER_CODE = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from curator.checkpoint import _reader_main; _reader_main()"
)
_READER_TIMEOUT = 600.0


def _reader_main() -> None:
    """Child process: read the files named on stdin, one JSON line per file on stdout.

    ``{"begin": i}`` is written (and flushed) before file ``i`` is read, so the
    parent knows which file a crash happened in.
    """
    request = json.load(sys.stdin)
    paths, with_stats = request["paths"], request["with_stats"]
    out = sys.stdout
    for i, path in enumerate(paths):
        out.write(json.dumps({"begin": i}) + "\n")
        out.flush()
        try:
            line = _reply(i, Path(path), with_stats)
        except Exception as exc:
            line = json.dumps({"i": i, "error": f"{type(exc).__name__}: {exc}"})
        out.write(line + "\n")
        out.flush()


def _reply(i: int, path: Path, with_stats: bool) -> str:
    """One file's answer line for the parent.

    The statistics go as they are stored (JSON written by ``mark_completed``), spliced
    into the line and checked by one parse of them all, not decoded and re-encoded one
    by one: that was most of the end-of-run read at 10^6 sources. A value that is not
    plain one-line ASCII JSON goes the slow way (parsed, re-encoded), so damage is
    refused as before and the line protocol holds.
    """
    check_file_structure(path)
    env = lmdb.open(str(path), subdir=False, readonly=True, lock=False, max_dbs=2,
                    readahead=False)
    try:
        completed, raw = _read_raw(env, with_stats)
    finally:
        env.close()
    head = f'{{"i": {i}, "completed": {json.dumps(sorted(completed))}'
    values = b",".join(raw.values())
    if values.isascii() and b"\n" not in values and b"\r" not in values:
        text = values.decode("ascii")
        parsed = json.loads(f"[{text}]")
        if len(parsed) == len(raw) and all(type(v) is dict for v in parsed):
            return f'{head}, "stat_ids": {json.dumps(list(raw))}, "stat_values": [{text}]}}'
    stats = {k: json.loads(v) for k, v in raw.items()}
    return f'{head}, "stats": {json.dumps(stats)}}}'


ReadResult = tuple[set[str], dict[str, dict[str, Any]]] | BaseException


def _read_in_process(paths: list[Path], with_stats: bool) -> dict[Path, ReadResult]:
    results: dict[Path, ReadResult] = {}
    for path in paths:
        try:
            results[path] = read_checkpoint_file(path, with_stats)
        except Exception as exc:  # any damage, at open or at read
            results[path] = exc
    return results


def read_checkpoint_files(
    paths: Iterable[Path], with_stats: bool = True
) -> dict[Path, ReadResult]:
    """Read writer files in a child process; a file that crashes it is reported as damaged.

    Each file maps to ``(completed, stats)`` or to the exception that made it unreadable.
    Falls back to reading in this process if no child process can be started.
    """
    remaining = list(paths)
    results: dict[Path, ReadResult] = {}
    root = str(Path(__file__).resolve().parents[1])
    while remaining:
        if not sys.executable:
            results.update(_read_in_process(remaining, with_stats))
            break
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _READER_CODE, root],
                input=json.dumps({"paths": [str(p) for p in remaining],
                                  "with_stats": with_stats}),
                capture_output=True, text=True, timeout=_READER_TIMEOUT, check=False,
            )
            stdout, returncode = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as exc:
            raw = exc.stdout or ""
            stdout = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            returncode = None
        except OSError:
            results.update(_read_in_process(remaining, with_stats))
            break
        begun: int | None = None
        for line in stdout.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "begin" in record:
                begun = record["begin"]
                continue
            path = remaining[record["i"]]
            if "error" in record:
                results[path] = DamagedCheckpointError(record["error"])
            elif "stat_ids" in record:
                results[path] = (set(record["completed"]),
                                 dict(zip(record["stat_ids"], record["stat_values"],
                                          strict=True)))
            else:
                results[path] = (set(record["completed"]), record["stats"])
        if begun is None:  # the child could not start reading: read here instead
            results.update(_read_in_process(remaining, with_stats))
            break
        crashed = remaining[begun]
        if crashed not in results:
            why = "timed out" if returncode is None else f"exit status {returncode}"
            results[crashed] = DamagedCheckpointError(f"the reader process died on it ({why})")
        remaining = [p for p in remaining if p not in results]
    return results


_CLAIMED: set[Path] = set()
_CLAIMED_LOCK = threading.Lock()


def _claim_writer_file(directory: Path, writer_id: str) -> Path:
    """This writer's file; a second store on the same directory in the same process
    (two pipelines at once) gets ``<id>-2.mdb`` and so on, never the same file."""
    with _CLAIMED_LOCK:
        path, n = directory / f"{writer_id}.mdb", 1
        while path in _CLAIMED:
            n += 1
            path = directory / f"{writer_id}-{n}.mdb"
        _CLAIMED.add(path)
        return path


class CheckpointStore:
    """Completed source ids for one checkpoint directory, as seen by one writer."""

    def __init__(
        self,
        checkpoint_path: str | os.PathLike[str],
        writer_id: str | None = None,
        map_size: int = DEFAULT_MAP_SIZE,
        check_filesystem: bool = True,
        mirror: CheckpointMirror | None = None,
    ) -> None:
        self.root = Path(checkpoint_path).absolute()
        self.root.mkdir(parents=True, exist_ok=True)
        if check_filesystem:
            check_local_filesystem(self.root)
        self._mirror = mirror
        if mirror is not None:
            mirror.restore()  # before the union is read (once per mirror)
        #: commits made through this store; a snapshot records the one it holds
        self.version = 0
        self._lock = threading.Lock()  # a commit vs. a snapshot (or close) in another thread
        self.dir = self.root / METADATA_DIRNAME
        self.dir.mkdir(exist_ok=True)
        self.path = _claim_writer_file(
            self.dir, _safe_writer_id(writer_id or default_writer_id())
        )
        self.skipped_files: list[Path] = []
        self._completed: set[str] = set()
        self._stats: dict[str, dict[str, Any]] = {}
        self._stats_loaded = False  # statistics are read from disk when first asked for
        try:
            self._load_union()
            self._env = self._open_own(map_size)
        except BaseException:
            with _CLAIMED_LOCK:
                _CLAIMED.discard(self.path)
            raise
        self._db = self._env.open_db(COMPLETED_DB)
        self._stats_db = self._env.open_db(STATS_DB)
        if mirror is not None:
            try:
                mirror.attach(self)
            except BaseException:
                self._mirror = None
                self.close()
                raise

    # -- start-up -----------------------------------------------------------------
    def _load_union(self, exclude: Path | None = None, with_stats: bool = False) -> None:
        paths = [p for p in sorted(self.dir.glob("*.mdb")) if p != exclude]
        results = read_checkpoint_files(paths, with_stats)
        for path in paths:
            result = results[path]
            if isinstance(result, BaseException):
                exc = result
                log.warning(
                    "resumability: skipping unreadable checkpoint %s (%s: %s); its sources "
                    "will be processed again",
                    path, type(exc).__name__, exc,
                )
                self.skipped_files.append(path)
                continue
            completed, stats = result
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

    def completed_copy(self) -> set[str]:
        """A mutable copy of the completed ids (one copy: 0.1-0.4 s at 10^6 ids)."""
        return set(self._completed)

    def are_completed(self, source_ids: Iterable[str]) -> list[bool]:
        return [sid in self._completed for sid in source_ids]

    def stats(self) -> dict[str, dict[str, Any]]:
        """Statistics of every completed source, from every readable writer file."""
        if not self._stats_loaded:
            return self.refreshed_stats()
        return {sid: self._stats[sid] for sid in self._completed if sid in self._stats}

    def refreshed_stats(self) -> dict[str, dict[str, Any]]:
        """Re-read every writer file from disk (this writer's through its open handle)."""
        self._completed, self._stats, self.skipped_files = set(), {}, []
        self._load_union(exclude=self.path, with_stats=True)
        self._stats_loaded = True
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
        try:
            with self._lock, self._env.begin(write=True) as txn:
                for sid, stats in sources.items():
                    key = sid.encode("utf-8")
                    txn.put(key, b"1", db=self._db)
                    if stats is not None:
                        txn.put(key, json.dumps(stats, sort_keys=True).encode(),
                                db=self._stats_db)
                self.version += 1
        except lmdb.Error as exc:  # a full checkpoint filesystem: EIO/ENOSPC on commit
            raise CuratorError(
                "checkpoint_write_failed",
                f"cannot record {len(sources)} completed partitions in {self.path}: {exc} "
                "(is the checkpoint's filesystem full?); once it has room, rerun with the "
                "same checkpoint_path to resume", path=str(self.path)) from exc
        for sid, stats in sources.items():
            self._completed.add(sid)
            if stats is not None:
                self._stats[sid] = dict(stats)
        if self._mirror is not None:
            self._mirror.committed(self)

    def uncomplete(self, source_id: str) -> None:
        """Forget a completion (in memory and in this writer's own file only)."""
        self._completed.discard(source_id)
        self._stats.pop(source_id, None)
        key = source_id.encode("utf-8")
        with self._lock, self._env.begin(write=True) as txn:
            txn.delete(key, db=self._db)
            txn.delete(key, db=self._stats_db)
            self.version += 1
        if self._mirror is not None:
            self._mirror.committed(self)

    def snapshot(self, dest: str | os.PathLike[str]) -> int:
        """A consistent, compacted copy of this writer's file at ``dest`` (a new file),
        taken between two commits; returns :attr:`version` at the copy. The file is
        opened without LMDB's lock table, so a commit must not run during the copy:
        the store's lock excludes it (a few ms for 10^5 partitions)."""
        with self._lock:
            if self._env is None:
                raise RuntimeError(f"{self.path} is closed")
            self._env.copy(os.fspath(dest), compact=True)
            return self.version

    def close(self) -> None:
        """Close the file; with a mirror, after its last push (which may raise
        ``checkpoint_mirror_failed``: the file is closed all the same)."""
        if self._env is None:
            return
        try:
            if self._mirror is not None:
                self._mirror.detach(self)
        finally:
            with self._lock:
                self._env.close()
                self._env = None  # type: ignore[assignment]
            with _CLAIMED_LOCK:
                _CLAIMED.discard(self.path)

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
