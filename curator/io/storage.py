"""Object storage: every fsspec URL (``s3://``, ``gs://``, ``memory://`` ...) in one place.

A local path never goes through here (:func:`is_remote` is False): it keeps the direct
``open``/``mmap``/``os.replace`` paths, their speed and their fsync durability. fsspec
is imported only when a URL is used. Credentials and endpoints come from fsspec's usual
environment (``AWS_*``, ``FSSPEC_S3_ENDPOINT_URL``, ``GOOGLE_APPLICATION_CREDENTIALS``;
``docs/storage.md``).

A run with a remote ``output_dir`` writes its outputs to a local *staging copy* of the
output directory (:func:`local_copy_dir`, on the checkpoint's disk) exactly as it
writes a local output, then :func:`publish` puts each finished file with one ``put``
(an object store makes one put atomic: a reader sees the old object or the whole new
one), the completion artifact last. What a run published is listed in
``.curate-published-<step>.json`` beside the outputs, so a later run removes its own
earlier files, never anyone else's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from curator.errors import CuratorError

log = logging.getLogger("curator.io.storage")

#: schemes that are local files, not object storage
_LOCAL_SCHEMES = ("file://", "local://")
#: the list of what a step published, beside its outputs
PUBLISHED_NAME = ".curate-published-{key}.json"


def is_remote(path: object) -> bool:
    """A URL with a scheme (``s3://b/k``) other than ``file://``; not a local path."""
    if not isinstance(path, str):
        return False
    return "://" in path and not path.startswith(_LOCAL_SCHEMES)


def any_remote(paths: object) -> bool:
    """Whether a path, or any path of a list, is a URL."""
    if isinstance(paths, str):
        return is_remote(paths)
    if isinstance(paths, Sequence):
        return any(is_remote(p) for p in paths)
    return False


def _fs(url: str) -> tuple[Any, str]:
    """(filesystem, path inside it) for a URL; fsspec caches the filesystem."""
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - a dependency
        raise CuratorError("object_storage_unavailable",
                           f"{url}: fsspec is not installed ({exc})") from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise CuratorError(
            "object_storage_unavailable",
            f"{url}: no fsspec filesystem for this URL ({exc}); install its package "
            "(s3fs for s3://, gcsfs for gs://)", url=url) from None


def _fresh(url: str) -> tuple[Any, str]:
    """:func:`_fs` with the filesystem's listing cache dropped: another process (a worker,
    another run) may have written since, and a stale listing would hide it."""
    fs, path = _fs(url)
    fs.invalidate_cache()
    return fs, path


def _url(fs: Any, path: str) -> str:
    return fs.unstrip_protocol(path)


def join(url: str, *names: str) -> str:
    return "/".join([url.rstrip("/"), *(n.strip("/") for n in names)])


def glob(pattern: str) -> list[str]:
    """Files matching a glob (``**`` recursive), as full URLs, sorted."""
    fs, path = _fresh(pattern)
    return sorted(_url(fs, p) for p in fs.glob(path) if fs.isfile(p))


def isdir(url: str) -> bool:
    fs, path = _fresh(url)
    return bool(fs.isdir(path))


def isfile(url: str) -> bool:
    fs, path = _fresh(url)
    return bool(fs.isfile(path))


def exists(url: str) -> bool:
    fs, path = _fresh(url)
    return bool(fs.exists(path))


def size(path: str) -> int:
    """The size of a local file or of an object."""
    if not is_remote(path):
        return os.path.getsize(path)
    fs, p = _fs(path)
    return int(fs.size(p))


def walk_files(url: str, skip_dirs: Iterable[str] = ()) -> list[str]:
    """Every file under a directory URL, as URLs, sorted; folders named in ``skip_dirs``
    or hidden (a name starting with ``.``) are not entered, hidden files are left out."""
    fs, root = _fresh(url)
    skip = set(skip_dirs)
    found = []
    for path in fs.find(root):
        rel = path[len(root.rstrip("/")) + 1:] if path.startswith(root.rstrip("/")) else path
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or any(p in skip for p in parts[:-1]):
            continue
        found.append(_url(fs, path))
    return sorted(found)


def list_files(url: str) -> list[str]:
    """Every file under a directory URL (hidden ones too), relative to it, sorted."""
    fs, root = _fresh(url)
    base = root.rstrip("/") + "/"
    return sorted(p[len(base):] for p in fs.find(root) if p.startswith(base))


def open_read(url: str) -> BinaryIO:
    """An object opened for reading (seekable, read through ranges)."""
    fs, path = _fs(url)
    return fs.open(path, "rb")


def read(url: str, start: int | None = None, end: int | None = None) -> bytes:
    """An object's bytes, or bytes ``start:end`` of it (one ranged GET)."""
    fs, path = _fs(url)
    return bytes(fs.cat_file(path, start=start, end=end))


def read_file(path: str) -> bytes:
    """The bytes of a local file or of an object (one GET)."""
    if not is_remote(path):
        with open(path, "rb") as f:
            return f.read()
    return read(path)


def open_file(path: str) -> BinaryIO:
    """A local file or an object, opened for reading (binary)."""
    if not is_remote(path):
        return open(path, "rb")
    return open_read(path)


def is_file_at(path: str) -> bool:
    """Whether a local path or a URL names a file (an object)."""
    if not is_remote(path):
        return os.path.isfile(path)
    return isfile(path)


def version(path: str) -> tuple[int | None, str | int | None]:
    """``(size, version)`` of a local file (its mtime in ns) or of an object (its ETag,
    else its last-modified time), ``(None, None)`` when it is gone: what tells a changed
    input from the same one (a changed file is read again, never resumed; ``curate
    flow``'s done-check runs a step whose input changed again). An object's comes from
    the listing cache when a listing has just filled it, else from one HEAD."""
    if not is_remote(path):
        try:
            st = os.stat(path)
        except OSError:
            return None, None
        return st.st_size, st.st_mtime_ns
    fs, p = _fs(path)
    try:
        info = fs.info(p)
    except FileNotFoundError:
        return None, None
    tag = info.get("ETag") or info.get("etag") or info.get("LastModified") \
        or info.get("mtime") or info.get("last_modified")
    return int(info.get("size") or 0), None if tag is None else str(tag)


def _norm_url(url: str) -> str:
    return url.rstrip("/")


def within(path: str, root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (a local path or a URL) lies in the directory ``root`` (either):
    a step's own output is never read as its input."""
    root = os.fspath(root)
    if is_remote(path) or is_remote(root):
        if not (is_remote(path) and is_remote(root)):
            return False
        base = _norm_url(root) + "/"
        return path.startswith(base) or _norm_url(path) == _norm_url(root)
    return Path(path).resolve().is_relative_to(Path(root).resolve())


def relative(path: str, root: str | os.PathLike[str]) -> str | None:
    """``path`` relative to the directory ``root`` (``a/b.jsonl``), local or URL; None
    when it is not inside it."""
    root = os.fspath(root)
    if is_remote(path) or is_remote(root):
        base = _norm_url(root) + "/"
        return path[len(base):] if is_remote(path) and path.startswith(base) else None
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return None


def parent(path: str) -> str:
    """The directory holding a local file or an object (a URL stays a URL)."""
    if is_remote(path):
        return path.rstrip("/").rsplit("/", 1)[0]
    return str(Path(path).resolve().parent)


@contextlib.contextmanager
def store_errors(what: str, remote: bool, **details: object) -> Iterator[None]:
    """With ``remote``: the store's own errors raised inside (credentials, permissions,
    network, an object gone since it was listed) become ``object_storage_error``
    naming ``what`` (``details``: the error's, e.g. ``url``); a :class:`CuratorError`
    passes unchanged. Without: nothing."""
    if not remote:
        yield
        return
    try:
        yield
    except CuratorError:
        raise
    except Exception as exc:
        raise CuratorError("object_storage_error",
                           f"{what}: {type(exc).__name__}: {exc}", **details) from exc


def put_file(local: str | os.PathLike[str], url: str) -> None:
    """Upload a finished local file to ``url`` with one put (atomic on an object store)."""
    fs, path = _fs(url)
    fs.put_file(os.fspath(local), path)


def write_bytes(url: str, data: bytes) -> None:
    """``data`` to ``url`` with one put, from memory (no temp file to leave behind)."""
    fs, path = _fs(url)
    fs.pipe_file(path, data)


def get_file(url: str, local: str | os.PathLike[str]) -> None:
    """Download an object to a local file (one GET)."""
    fs, path = _fs(url)
    fs.get_file(path, os.fspath(local))


def remove_tree(url: str) -> None:
    """Remove every object under a prefix (none there is fine)."""
    fs, path = _fresh(url)
    with contextlib.suppress(FileNotFoundError):
        if fs.exists(path):
            fs.rm(path, recursive=True)


def remove(url: str) -> None:
    """Remove an object (gone already is fine)."""
    fs, path = _fs(url)
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(path)


#: where local copies of remote outputs go instead of beside the checkpoint: a
#: filesystem every node of a multi-machine run mounts (docs/storage.md)
COPY_DIR_ENV = "CURATE_OUTPUT_COPY_DIR"


def local_copy_dir(url: str, checkpoint_path: str | None, key: str) -> Path:
    """Where a step with a remote ``output_dir`` writes before it publishes: beside the
    checkpoint (``<checkpoint_path>/.<key>-output-<digest>``), under
    ``$CURATE_OUTPUT_COPY_DIR`` when that is set, or under the temp directory when the
    run has neither. The digest is the URL's, so a resumed run of the same output finds
    its files again."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:12]
    chosen = os.environ.get(COPY_DIR_ENV)
    base = (Path(chosen).resolve() if chosen
            else Path(checkpoint_path).resolve() if checkpoint_path
            else Path(tempfile.gettempdir()) / "curator-outputs")
    return base / f".{key}-output-{digest}"


#: what was under the output URL before a fresh run began (hidden, in the area)
RUN_NAME = ".curate-run-{key}.json"


def _listed(url: str, name: str) -> list[str]:
    try:
        return list(json.loads(read(join(url, name))).get("files", []))
    except (FileNotFoundError, ValueError):
        return []


def _visible(url: str) -> list[str]:
    """Every file under ``url`` outside hidden files and folders, relative, sorted."""
    if not exists(url):
        return []
    return [rel for rel in list_files(url)
            if not any(part.startswith(".") for part in rel.split("/"))]


def unpublish(url: str, key: str) -> None:
    """Remove what an earlier run of step ``key`` put at ``url``: a fresh run's first
    act. That is what its list names (the completion artifact, the last, goes first)
    and, when a run was stopped before it wrote its list, every file that appeared
    after it began (its :data:`RUN_NAME` snapshot). Then the snapshot of this run."""
    files = _listed(url, PUBLISHED_NAME.format(key=key))
    run = join(url, RUN_NAME.format(key=key))
    if exists(run):
        before = set(_listed(url, RUN_NAME.format(key=key)))
        files += [rel for rel in _visible(url) if rel not in before and rel not in files]
    for rel in reversed(files):
        remove(join(url, rel))
    remove(join(url, PUBLISHED_NAME.format(key=key)))
    write_bytes(run, json.dumps({"files": _visible(url)}, indent=1).encode())


def end_run(url: str, key: str) -> None:
    """A completed run's snapshot goes (its list says what it put there)."""
    remove(join(url, RUN_NAME.format(key=key)))


def publish(url: str, key: str, last: Sequence[str] = ()) -> list[str]:
    """List what this run put at ``url`` in ``.curate-published-<key>.json``: every
    visible file that was not there when the run began (its snapshot), the files of
    ``last`` (relative names: the reports, the completion artifact last of all) at the
    end. The files themselves went up as they were written (:mod:`curator.io.shared`),
    by the processes that wrote them. Returns the listed names."""
    before = set(_listed(url, RUN_NAME.format(key=key)))
    names = [rel for rel in _visible(url) if rel not in before and rel not in last]
    everything = [*names, *last]
    write_bytes(join(url, PUBLISHED_NAME.format(key=key)),
                json.dumps({"files": everything}, indent=1).encode())
    log.info("published %d files to %s", len(everything), url)
    return everything


__all__ = [
    "any_remote", "end_run", "exists", "get_file", "glob",
    "is_file_at", "is_remote", "isdir", "isfile", "join", "list_files", "local_copy_dir",
    "open_file", "open_read", "parent", "publish", "put_file", "read", "read_file",
    "relative", "remove", "remove_tree", "size", "store_errors", "unpublish", "version",
    "walk_files", "within", "write_bytes",
]
