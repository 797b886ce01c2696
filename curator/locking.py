"""One run at a time per output directory and per checkpoint: an ``flock`` on a lock file.

:class:`DirLock` holds an exclusive, non-blocking ``fcntl.flock`` on a file for the
length of a run. A second run on the same directory does not wait and does not
interleave: it is refused with ``output_dir_locked`` or ``checkpoint_locked`` (exit 2).

The lock belongs to an open file description, so the kernel releases it when the
process that holds it dies, however it dies: a run killed by SIGKILL, the OOM killer
or a power cut never leaves a stale lock behind. The file itself may stay (a killed
run cannot remove it); it holds nothing, and the next run simply takes it.

A run that ends normally unlinks the file before it releases the lock. A run that
opened the old file while the holder was finishing could then lock an unlinked inode,
so :meth:`DirLock.acquire` checks, once it holds the lock, that the path still names
the file it locked, and starts over otherwise.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from curator.errors import CuratorError

#: The name of the lock file in an output directory (hidden: never part of the data).
LOCK_NAME = ".curate.lock"


class DirLock:
    """An exclusive lock on ``path`` (a file, created if missing) for one run."""

    def __init__(self, path: Path, error_id: str, unwritable_id: str, what: str) -> None:
        self.path = path
        self.error_id = error_id
        self.unwritable_id = unwritable_id
        self.what = what
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise :class:`CuratorError` (``error_id``) at once."""
        if self._fd is not None:
            return
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:  # read-only, not a directory, no space, ...
                raise CuratorError(
                    self.unwritable_id,
                    f"cannot write to {self.what} {self.path.parent}: "
                    f"{exc.strerror or exc}", path=str(self.path.parent)) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise CuratorError(
                    self.error_id,
                    f"another run is using {self.what} {self.path.parent} (it holds "
                    f"{self.path.name}); wait for it to end, or use another directory",
                    lock=str(self.path)) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                with contextlib.suppress(OSError):  # who holds it, for a person looking
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode())
                return
            os.close(fd)  # the holder unlinked it as we opened it: take the new one

    def release(self) -> None:
        """Unlink the file, then release the lock (in that order; see the module doc)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None


def output_lock(output_dir: Path) -> DirLock:
    return DirLock(output_dir / LOCK_NAME, "output_dir_locked", "output_dir_unwritable",
                   "the output directory")


def checkpoint_lock(checkpoint_path: Path, key: str) -> DirLock:
    """The lock of step ``key``'s checkpoint (``<checkpoint_path>/<key>``), beside it:
    a fresh run removes the checkpoint directory itself."""
    return DirLock(checkpoint_path / f".{key}.lock", "checkpoint_locked",
                   "checkpoint_unwritable", f"the checkpoint of step {key!r} in")


__all__ = ["LOCK_NAME", "DirLock", "checkpoint_lock", "output_lock"]
