"""A step's output area on object storage, cached on each node: shared-nothing runs.

A step whose ``output_dir`` is a URL runs against a local directory, its *local copy*
(:func:`curator.io.storage.local_copy_dir`), exactly as against a local output. On a
cluster whose nodes share nothing but object storage that directory exists once per
node, at the same path: each node's is a cache of the URL, never a channel between
nodes. This module keeps the URL the truth:

- **writes go up at once.** Every file finished through
  :func:`curator.io.writers.atomic_file` under the local copy is put to the same
  relative name under the URL before the writer returns (one put: an object store
  makes it atomic), by whichever process wrote it, a worker or the driver. A unit's
  outputs are therefore in storage before its partition is recorded complete (output
  before checkpoint, as for a local disk).
- **reads come down on a miss.** :func:`localize` fetches a file of the area that is
  not on this node's disk (a staging table a worker of another node wrote, the index
  the driver built); :func:`localize_dir` fetches a folder's files (the driver merging
  work files). What is on the disk already is read as it is: on one machine nothing is
  ever fetched.
- **a node other than the driver's keeps nothing.** A worker that does not see the
  driver's marker (:data:`DRIVER_MARKER`) in its copy is on another node's disk: what
  it wrote or fetched for a unit is deleted when the unit ends.

Nothing here is read from another node's disk: a path is only ever a name in the area.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from curator.io import storage

log = logging.getLogger("curator.io.shared")

#: written by the driver into its local copy: a worker that sees it shares its disk
DRIVER_MARKER = ".curate-driver"


@dataclass(frozen=True)
class SharedArea:
    """The local copy ``local`` (the same path on every node) and the URL it mirrors."""

    local: str
    url: str

    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """``path``'s name inside the area (``a/b.jsonl``), None when outside it."""
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.local)
        except ValueError:
            return None
        return rel.as_posix() if rel.parts else None

    def url_of(self, path: str | os.PathLike[str]) -> str | None:
        rel = self.relative(path)
        return None if rel is None else storage.join(self.url, rel)


_lock = threading.Lock()
_active: SharedArea | None = None
#: files this process wrote or fetched during the current unit (evicted at its end)
_touched: list[Path] = []


def current() -> SharedArea | None:
    """The area active in this process (the run's, or the unit's on a worker)."""
    return _active


def mark_driver(area: SharedArea) -> None:
    """Mark the driver's copy, once the run touches it: a worker that sees the marker
    shares the driver's disk and keeps its files."""
    Path(area.local).mkdir(parents=True, exist_ok=True)
    (Path(area.local) / DRIVER_MARKER).write_text(uuid.uuid4().hex)


@contextlib.contextmanager
def driving(area: SharedArea | None) -> Iterator[None]:
    """Make ``area`` active in the driver for a step's run (nothing is written)."""
    global _active
    if area is None:
        yield
        return
    previous, _active = _active, area
    try:
        yield
    finally:
        _active = previous


@contextlib.contextmanager
def unit(area: SharedArea | None) -> Iterator[None]:
    """Make ``area`` active on a worker for one unit; afterwards, on a node that does
    not share the driver's disk, delete what the unit wrote or fetched there."""
    global _active
    if area is None:
        yield
        return
    previous, _active = _active, area
    _touched.clear()
    try:
        yield
    finally:
        _active = previous
        if not (Path(area.local) / DRIVER_MARKER).exists():
            for path in _touched:
                path.unlink(missing_ok=True)
        _touched.clear()


def wrote(path: str | os.PathLike[str]) -> None:
    """A finished file at ``path``: put it to the area's URL when it lies in the area
    (called by every atomic writer; a no-op without an active area)."""
    area = _active
    if area is None:
        return
    url = area.url_of(path)
    if url is None:
        return
    with storage.store_errors(f"cannot put {path} to {url}", True, url=url):
        storage.put_file(path, url)
    with _lock:
        _touched.append(Path(path))


def localize(path: str | os.PathLike[str]) -> Path:
    """``path`` on this node's disk: as it is when there, else fetched from the area's
    URL (atomically: a temp name, then rename). A file neither here nor there is
    returned as it is (its reader says it is missing)."""
    target = Path(path)
    area = _active
    if area is None or target.exists():
        return target
    url = area.url_of(target)
    if url is None or not storage.isfile(url):
        return target
    _fetch(url, target)
    return target


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether a file of the area is on this disk or under the URL (not fetched)."""
    if Path(path).exists():
        return True
    area = _active
    url = None if area is None else area.url_of(path)
    return url is not None and storage.isfile(url)


def listing(folder: str | os.PathLike[str], pattern: str) -> list[Path]:
    """The files of ``folder`` matching ``pattern`` (one level), on this disk or under
    the area's URL (not fetched): what any node of the run wrote there."""
    base = Path(folder)
    found = {p.name for p in base.glob(pattern) if p.is_file()} if base.is_dir() else set()
    area = _active
    url = None if area is None else area.url_of(base)
    if url is not None and storage.exists(url):
        found |= {rel for rel in storage.list_files(url)
                  if "/" not in rel and fnmatch.fnmatchcase(rel, pattern)}
    return [base / name for name in sorted(found)]


def parquet_rows(path: str | os.PathLike[str]) -> int | None:
    """The row count in a Parquet file's footer, on this disk or under the area's URL
    (ranged reads of the footer, never the whole object); ``None`` when it is in
    neither place."""
    import pyarrow.parquet as pq

    target = Path(path)
    if target.is_file():
        return pq.ParquetFile(target).metadata.num_rows
    area = _active
    url = None if area is None else area.url_of(target)
    if url is None or not storage.isfile(url):
        return None
    with storage.store_errors(f"cannot read the footer of {url}", True, url=url), \
            storage.open_read(url) as f:
        return pq.ParquetFile(f).metadata.num_rows


def localize_dir(path: str | os.PathLike[str]) -> Path:
    """A folder of the area with every file the URL holds under it fetched (those on
    this disk already are kept): the driver reading the work files its units wrote."""
    folder = Path(path)
    area = _active
    url = None if area is None else area.url_of(folder)
    if url is None or not storage.exists(url):
        return folder
    for rel in storage.list_files(url):
        target = folder / rel
        if not target.exists():
            _fetch(storage.join(url, rel), target)
    return folder


def _fetch(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.fetch-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        with storage.store_errors(f"cannot fetch {url}", True, url=url):
            storage.get_file(url, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    with _lock:
        _touched.append(target)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove a folder of the area here and under the URL (a work area at cleanup)."""
    shutil.rmtree(path, ignore_errors=True)
    area = _active
    url = None if area is None else area.url_of(path)
    if url is not None:
        with storage.store_errors(f"cannot remove {url}", True, url=url):
            storage.remove_tree(url)


def remove(path: str | os.PathLike[str]) -> None:
    """Remove a file of the area here and under the URL."""
    Path(path).unlink(missing_ok=True)
    area = _active
    url = None if area is None else area.url_of(path)
    if url is not None:
        with storage.store_errors(f"cannot remove {url}", True, url=url):
            storage.remove(url)


__all__ = ["DRIVER_MARKER", "SharedArea", "current", "driving", "exists", "listing",
           "localize", "localize_dir", "mark_driver", "parquet_rows", "remove", "remove_tree",
           "unit", "wrote"]
