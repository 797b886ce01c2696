"""Idempotent writers: output named from the source id, temp file, rename into place."""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from curator.io import shared
from curator.tasks import Task

_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")
_DOTS = re.compile(r"\.{2,}")


def safe_name(text: str, max_len: int = 120) -> str:
    """A file-name-safe form of an untrusted string: no separators, no ``..``, no leading dot."""
    cleaned = _DOTS.sub(".", _UNSAFE.sub("-", text)).strip(".-")[:max_len]
    return cleaned or "unnamed"


def output_stem(task: Task) -> str:
    """``<source id>`` for a 1:1 chain, ``<source id>-<i>-...`` below a fan-out."""
    parts = task.task_id.split("_")
    sid = task.source_id
    if sid and sid in parts[1:]:
        rest = parts[parts.index(sid, 1) + 1 :]
        stem = sid if all(p == "0" for p in rest) else "-".join([sid, *rest])
    else:
        stem = "-".join(parts[1:]) or "part"
    return safe_name(stem)


@contextmanager
def atomic_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Open a hidden temp file beside ``path`` to write; when the block ends without
    error, fsync it, rename it into place and fsync the directory, so the new name is
    durable before the caller goes on to record the source as complete (output
    before checkpoint). On error the temp file is removed and ``path`` is untouched.
    A file in a step's shared output area is put to its URL before this returns
    (:func:`curator.io.shared.wrote`).
    The temp name, ``.<name>.tmp-<host>-<pid>``, says whose it is even on a filesystem
    that several hosts share.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{_host()}-{os.getpid()}")
    try:
        with open(tmp, "wb", buffering=1 << 20) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(target.parent)
    shared.wrote(target)  # on object storage too, when the output area is a URL


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` to ``path`` atomically and durably (see :func:`atomic_file`)."""
    with atomic_file(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # platforms without directory handles
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: ``.<name>.tmp-<host>-<pid>``; ``.<name>.tmp-<pid>`` (no host) is an older run's, of this host
_TEMP_NAME = re.compile(r"\..+\.tmp-(?:(?P<host>.+)-)?(?P<pid>\d+)")


def _host() -> str:
    """This host's name as it appears in temp names (file-name safe, never empty)."""
    return _UNSAFE.sub("-", socket.gethostname()) or "host"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clear_stale_temps(directory: Path, done: set[Path]) -> None:
    """Remove temp files that dead writers left in ``directory``, once per run and worker.

    Once, not per write: listing a directory of N outputs for each of N writes is
    quadratic. A temp file of a live process (another worker writing right now) is
    left alone; the host and pid are in its name. A temp file of another host (an output
    directory on a filesystem several hosts share) is left alone too: whether its writer
    is alive cannot be told from here, and its pid may be a live or dead process of this
    host by chance. ``done`` is the writer's own record.
    """
    if directory in done or not directory.is_dir():
        return
    done.add(directory)
    host = _host()
    with os.scandir(directory) as entries:
        for entry in entries:
            match = _TEMP_NAME.fullmatch(entry.name)
            if (match and match["host"] in (None, host)
                    and not _pid_alive(int(match["pid"]))):
                Path(entry.path).unlink(missing_ok=True)


def clear_stale_temps(*roots: str | os.PathLike[str]) -> None:
    """Remove what dead writers left anywhere under ``roots`` (each folder of each tree):
    for stages that write through :func:`atomic_file` rather than a writer sink, which
    a rerun after a kill must clear before it starts."""
    seen: set[Path] = set()
    for root in (Path(r) for r in roots):
        if root.is_dir():
            for folder in (root, *(p for p in root.rglob("*") if p.is_dir())):
                _clear_stale_temps(folder, seen)
