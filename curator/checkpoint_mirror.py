"""A checkpoint on object storage: LMDB files on the local disk, mirrored to a URL.

LMDB needs a local disk (memory maps), so a checkpoint whose ``checkpoint_path`` is a
URL is kept in a local directory (:func:`local_checkpoint_dir`) and each writer's file
is *mirrored* to the same relative name under the URL::

    <url>/<relative dir>/.nemo_curator_metadata/<writer>.mdb   one object per writer
    <url>/.curate-checkpoint-mirror.json                       the mirror's generation

- **push.** After a commit the driver's writer file is copied with LMDB's own
  consistent copy (``env.copy(compact=True)``, taken between two commits: a few ms
  for 10^5 partitions) to a temp file and put with one put (an object store makes a put
  atomic: a reader sees the whole previous snapshot or the whole new one). Pushes run in
  a background thread, at most every ``interval`` seconds (:data:`MIRROR_INTERVAL`), so a
  put never delays a commit; the last push happens when the store closes (the end of a
  pass, a drain, a failure).
- **restore.** A driver with no local copy (a new node, an empty disk) downloads every
  writer's file (the union is what the engine reads), before the store opens.

What is durable: a partition's output is in place before it is recorded complete
locally (output before checkpoint), and recorded locally before a push carries it to
the URL. A driver killed between the two loses from the URL only what it completed
since its last push, at most ``interval`` seconds (plus one put) of partitions; a new
driver redoes those (outputs are idempotent) and skips everything the mirror holds: a
partition is redone or skipped, never counted twice. See ``docs/storage.md``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.io import storage

if TYPE_CHECKING:
    from curator.checkpoint import CheckpointStore

log = logging.getLogger("curator.resumability")

#: seconds between two pushes of one writer file (a commit is in storage at most this
#: long, plus one put, after it is made)
MIRROR_INTERVAL = 5.0
#: where the local copies of URL checkpoints go (default: the system temp directory)
SCRATCH_DIR_ENV = "CURATE_SCRATCH_DIR"
#: the mirror's generation, at the URL's root; and the local copy's state, beside it
GENERATION_NAME = ".curate-checkpoint-mirror.json"
STATE_NAME = ".curate-checkpoint-mirror.json"
#: puts tried when the store closes before ``checkpoint_mirror_failed``
FINAL_PUSH_ATTEMPTS = 3

_METADATA_DIRNAME = ".nemo_curator_metadata"  # curator.checkpoint.METADATA_DIRNAME


def local_checkpoint_dir(url: str) -> Path:
    """The local directory of a URL checkpoint: ``checkpoint-<sha256(url)[:12]>`` under
    ``$CURATE_SCRATCH_DIR``, else under ``<temp dir>/curator-checkpoints``. The same URL
    maps to the same directory, so a driver on the same node finds its files again."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:12]
    chosen = os.environ.get(SCRATCH_DIR_ENV)
    base = Path(chosen) if chosen else Path(tempfile.gettempdir()) / "curator-checkpoints"
    return base.absolute() / f"checkpoint-{digest}"


def resolve_checkpoint(
    checkpoint_path: str | os.PathLike[str] | None, interval: float | None = None
) -> tuple[Path | None, CheckpointMirror | None]:
    """``(local directory, mirror)`` for ``execution.checkpoint_path``: a URL gives its
    :func:`local_checkpoint_dir` and a :class:`CheckpointMirror`; a local path itself and
    None; no checkpoint (None, None)."""
    if checkpoint_path is None or checkpoint_path == "":
        return None, None
    if isinstance(checkpoint_path, str) and storage.is_remote(checkpoint_path):
        local = local_checkpoint_dir(checkpoint_path)
        return local, CheckpointMirror(checkpoint_path, local, interval)
    return Path(checkpoint_path), None


def is_writer_file(rel: str) -> bool:
    """Whether a relative name is a writer file (``.../.nemo_curator_metadata/x.mdb``)."""
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-2] == _METADATA_DIRNAME and parts[-1].endswith(".mdb")


class CheckpointMirror:
    """The writer files under ``local_root``, mirrored to ``url`` (see the module doc).

    One mirror serves any number of :class:`~curator.checkpoint.CheckpointStore` opened
    under ``local_root`` (one per engine pass), each attached with ``mirror=``.
    """

    def __init__(self, url: str, local_root: str | os.PathLike[str],
                 interval: float | None = None) -> None:
        self.url = url.rstrip("/")
        self.local_root = Path(local_root).absolute()
        self.interval = MIRROR_INTERVAL if interval is None else float(interval)
        self.restored = False
        #: every put of a snapshot: (relative name, bytes, seconds to copy, seconds to put)
        self.pushes: list[tuple[str, int, float, float]] = []
        self._pushers: dict[Path, _Pusher] = {}
        self._lock = threading.Lock()

    # -- restore ----------------------------------------------------------------------
    def restore(self) -> list[str]:
        """Bring the URL's writer files into ``local_root``; return the names fetched.

        The local directory is the URL's working copy: when it was made from this
        mirror's generation (its state file says so), files already there are kept
        (this node's own are newer than their objects) and only the missing ones, and
        other writers' files whose object changed since they were fetched, are
        downloaded. Otherwise (an empty disk, or a mirror reset since: its objects
        removed) the local writer files are removed and all of the URL's fetched. Runs
        once per mirror; the store calls it before it reads the union.
        """
        if self.restored:
            return []
        with storage.store_errors(f"checkpoint mirror: cannot restore from {self.url}",
                                  True, url=self.url):
            fetched = self._restore()
        self.restored = True
        return fetched

    def _restore(self) -> list[str]:
        remote = {rel: storage.version(storage.join(self.url, rel))[1]
                  for rel in self._remote_files()}
        generation = self._remote_generation()
        if generation is None:  # a new mirror (or one whose marker was removed)
            generation = uuid.uuid4().hex
            storage.write_bytes(storage.join(self.url, GENERATION_NAME),
                                json.dumps({"generation": generation}).encode())
        state = self._load_state()
        if state.get("generation") != generation:
            removed = self._remove_local_files()
            if removed:
                log.warning("resumability: %s is not a copy of the mirror %s (generation "
                            "%s): removed its %d writer files, restoring from the mirror",
                            self.local_root, self.url, generation, removed)
            state = {"url": self.url, "generation": generation, "restored": {}}
        restored: dict[str, Any] = state["restored"]
        fetched = []
        for rel, etag in sorted(remote.items()):
            local = self.local_root / rel
            if local.exists() and not (rel in restored and restored[rel] != etag):
                continue
            self._download(rel, local)
            restored[rel] = etag
            fetched.append(rel)
        self._save_state(state)
        if fetched:
            log.info("resumability: restored %d writer files from %s into %s",
                     len(fetched), self.url, self.local_root)
        return fetched

    def _remote_files(self) -> list[str]:
        if not storage.exists(self.url):
            return []
        return [rel for rel in storage.list_files(self.url) if is_writer_file(rel)]

    def _remote_generation(self) -> str | None:
        try:
            data = json.loads(storage.read(storage.join(self.url, GENERATION_NAME)))
        except (FileNotFoundError, ValueError):
            return None
        value = data.get("generation") if isinstance(data, dict) else None
        return value if isinstance(value, str) and value else None

    def _download(self, rel: str, local: Path) -> None:
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(local.name + ".restore-tmp")
        data = storage.read(storage.join(self.url, rel))
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, local)

    def _remove_local_files(self) -> int:
        if not self.local_root.is_dir():
            return 0
        files = [p for p in self.local_root.rglob("*.mdb")
                 if p.parent.name == _METADATA_DIRNAME]
        for path in files:
            path.unlink(missing_ok=True)
        return len(files)

    def _load_state(self) -> dict[str, Any]:
        try:
            state = json.loads((self.local_root / STATE_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(state, dict) or state.get("url") != self.url \
                or not isinstance(state.get("restored"), dict):
            return {}
        return state

    def _save_state(self, state: dict[str, Any]) -> None:
        self.local_root.mkdir(parents=True, exist_ok=True)
        path = self.local_root / STATE_NAME
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)

    def _forget_restored(self, rels: list[str]) -> None:
        with self._lock:
            state = self._load_state()
            if state and any(rel in state["restored"] for rel in rels):
                for rel in rels:
                    state["restored"].pop(rel, None)
                self._save_state(state)

    # -- this node's files of earlier drivers ---------------------------------------------
    def push_local(self, local_dir: str | os.PathLike[str] | None = None) -> list[str]:
        """Put this node's writer files under ``local_dir`` (default: all) that earlier
        drivers left: a driver pushes only its own file, so what a driver killed here
        (or whose last push failed) committed after its last push is on this disk only.
        Each file is put as it is, once per change (its size and mtime are recorded).

        Call it only while no other process writes under ``local_dir`` (holding the
        step's checkpoint lock): a file being written is not a consistent snapshot.
        Files fetched from the mirror and the files of stores attached here are left
        alone. Returns the names put."""
        root = self.local_root if local_dir is None else Path(local_dir).absolute()
        prefix = "" if root == self.local_root else self.relative(root) + "/"
        with self._lock:
            live = {self.relative(p) for p in self._pushers}
            state = self._load_state()
        if not state:  # not a copy of this mirror (restore() first)
            return []
        put = []
        for path in sorted(root.rglob("*.mdb")) if root.is_dir() else []:
            rel = self.relative(path)
            if (not is_writer_file(rel) or not rel.startswith(prefix) or rel in live
                    or rel in state["restored"]):
                continue
            st = path.stat()
            mark = [st.st_size, st.st_mtime_ns]
            if state.get("local", {}).get(rel) == mark:
                continue
            with storage.store_errors(f"checkpoint mirror: cannot put {rel} to {self.url}",
                                      True, url=self.url):
                storage.put_file(path, storage.join(self.url, rel))
            state.setdefault("local", {})[rel] = mark
            put.append(rel)
        if put:
            with self._lock:
                fresh = self._load_state() or state
                fresh.setdefault("local", {}).update(state["local"])
                self._save_state(fresh)
            log.info("resumability: put %d writer files of earlier drivers on this node "
                     "to %s", len(put), self.url)
        return put

    # -- discard ----------------------------------------------------------------------
    def discard(self, local_dir: str | os.PathLike[str]) -> int:
        """Remove the mirror of a checkpoint directory that was removed locally (a fresh
        start: another configuration's checkpoint): every writer object under its name.
        Returns how many objects were removed. Without it a driver on another node
        would restore the completions of the removed checkpoint."""
        rel = self.relative(Path(local_dir))
        prefix = "" if rel == "." else rel + "/"
        with storage.store_errors(f"checkpoint mirror: cannot remove {prefix} at {self.url}",
                                  True, url=self.url):
            gone = [r for r in self._remote_files() if r.startswith(prefix)]
            for r in gone:
                storage.remove(storage.join(self.url, r))
        self._forget_restored(gone)
        return len(gone)

    def finish(self) -> bool:
        """After a completed run has discarded its checkpoint: remove the mirror's
        generation marker when no writer file is left under the URL (another step's
        checkpoint under the same URL keeps it). Returns whether it was removed."""
        with storage.store_errors(f"checkpoint mirror: cannot clean {self.url}", True,
                                  url=self.url):
            if self._remote_files():
                return False
            storage.remove(storage.join(self.url, GENERATION_NAME))
        return True

    def relative(self, path: Path) -> str:
        """``path``'s name under ``local_root`` (posix), or ValueError."""
        try:
            return Path(path).absolute().relative_to(self.local_root).as_posix()
        except ValueError:
            raise ValueError(f"{path} is not under the mirrored directory "
                             f"{self.local_root}") from None

    # -- push -------------------------------------------------------------------------
    def attach(self, store: CheckpointStore) -> None:
        """Start mirroring ``store``'s writer file (the store calls this when it opens).

        Its first snapshot goes up at once, unless the file was fetched from the mirror
        (then the object is the same): a store that cannot put fails early, with a
        warning, not at its end."""
        rel = self.relative(store.path)
        with self._lock:
            restored = rel in self._load_state().get("restored", {})
        self._forget_restored([rel])  # from now on it is this writer's own file
        pusher = _Pusher(self, store, rel, pending=not restored)
        with self._lock:
            self._pushers[store.path] = pusher
        pusher.start()

    def committed(self, store: CheckpointStore) -> None:
        """The store made a commit (called by the store after each one)."""
        pusher = self._pushers.get(store.path)
        if pusher is not None:
            pusher.wake()

    def push(self, store: CheckpointStore) -> int:
        """Put a consistent snapshot of ``store``'s file now; return the store version
        it holds (the store's commit count when it was copied). Raises on failure."""
        rel = self.relative(store.path)
        tmpdir = Path(tempfile.mkdtemp(prefix=".mirror-push-", dir=self.local_root))
        try:
            snap = tmpdir / "snapshot.mdb"
            t0 = time.perf_counter()
            version = store.snapshot(snap)
            t1 = time.perf_counter()
            storage.put_file(snap, storage.join(self.url, rel))
            t2 = time.perf_counter()
            size = snap.stat().st_size
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        self.pushes.append((rel, size, t1 - t0, t2 - t1))
        log.debug("resumability: pushed %s (%d bytes, copy %.1f ms, put %.1f ms)",
                  rel, size, (t1 - t0) * 1e3, (t2 - t1) * 1e3)
        return version

    def detach(self, store: CheckpointStore) -> None:
        """Stop mirroring ``store``, after a last push of what it committed since the
        previous one (the store calls this when it closes, before closing its file).

        The last push is tried :data:`FINAL_PUSH_ATTEMPTS` times; then it is
        ``checkpoint_mirror_failed``, unless the run is already failing (its own
        error is kept: this one is logged)."""
        with self._lock:
            pusher = self._pushers.pop(store.path, None)
        if pusher is None:
            return
        pusher.stop()
        if not pusher.behind():
            return
        error: BaseException | None = None
        for attempt in range(FINAL_PUSH_ATTEMPTS):
            try:
                pusher.done(self.push(store))
                return
            except Exception as exc:  # the store's errors: network, credentials
                error = exc
                time.sleep(0.2 * (attempt + 1))
        message = (f"the checkpoint {store.path} could not be mirrored to "
                   f"{storage.join(self.url, self.relative(store.path))}: "
                   f"{type(error).__name__}: {error}; its partitions completed since the "
                   "last push are recorded on this node only (a driver elsewhere redoes them)")
        if sys.exc_info()[1] is not None:  # closing on the way out of a failing run
            log.error("resumability: %s", message)
            return
        raise CuratorError("checkpoint_mirror_failed", message, url=self.url,
                           path=str(store.path)) from error


class _Pusher:
    """One store's background pushes: at most one per interval, only after a commit."""

    def __init__(self, mirror: CheckpointMirror, store: CheckpointStore, rel: str,
                 pending: bool) -> None:
        self.mirror, self.store, self.rel = mirror, store, rel
        self._cond = threading.Condition()
        self._pushed = -1 if pending else store.version  # the version in storage
        self._last = float("-inf")  # monotonic start of the last push attempt
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f"checkpoint-mirror-{rel}")

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify()

    def behind(self) -> bool:
        return self.store.version > self._pushed

    def done(self, version: int) -> None:
        with self._cond:
            self._pushed = max(self._pushed, version)

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    if self.behind():
                        wait = self._last + self.mirror.interval - time.monotonic()
                        if wait <= 0:
                            break
                        self._cond.wait(wait)
                    else:
                        self._cond.wait()
                if self._stopping:
                    return
                self._last = time.monotonic()
            try:
                self.done(self.mirror.push(self.store))
            except Exception as exc:  # retried after an interval, and at the end
                log.warning("resumability: cannot mirror %s to %s (%s: %s); retrying in "
                            "%.1f s", self.store.path, self.mirror.url, type(exc).__name__,
                            exc, self.mirror.interval)


__all__ = [
    "MIRROR_INTERVAL", "SCRATCH_DIR_ENV", "CheckpointMirror", "is_writer_file",
    "local_checkpoint_dir", "resolve_checkpoint",
]
