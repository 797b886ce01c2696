"""The source stage: turn a glob, a directory or a list of paths into source partitions."""

from __future__ import annotations

import glob
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ByteSize, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from curator.corpus.formats import COMPRESSED_SUFFIXES, JSONL_EXTENSIONS, has_extension
from curator.errors import CuratorError
from curator.io import storage
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask, Task

PathSpec = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


#: folders a directory walk never enters: every step writes its rejected records there
log = logging.getLogger("curator.io")

SIDE_DIRS = frozenset({"rejected"})


def resolve_input_files(spec: PathSpec, extensions: Sequence[str] | None = None) -> list[str]:
    """Expand a recursive glob, a directory or a list into sorted, unique file paths.

    A directory is walked recursively, except for ``rejected/`` folders and hidden ones
    (a step's rejections and work files); name them by a glob to read them."""
    items = [spec] if isinstance(spec, str | os.PathLike) else list(spec)
    found: set[str] = set()
    for item in items:
        text = os.fspath(item)
        if storage.is_remote(text):  # an fsspec URL: a directory, a glob or an object
            found.update(_resolve_remote(text, extensions))
        elif os.path.isdir(text):
            for root, dirs, files in os.walk(text):
                # a step's own side folders are not corpus: its rejections and its
                # hidden work files (``rejected/``, ``.staging/``, ``.profile-work/``)
                dirs[:] = sorted(d for d in dirs if d not in SIDE_DIRS and not d.startswith("."))
                for name in files:
                    path = os.path.join(root, name)
                    if extensions is None or has_extension(path, extensions):
                        if not os.path.isfile(path):  # a FIFO (opening it would block
                            # for ever), a device, a broken or looping symlink
                            log.warning("input: %s is not a regular file: skipped", path)
                            continue
                        found.add(os.path.abspath(path))
        elif glob.has_magic(text):
            for path in glob.glob(text, recursive=True):
                if os.path.isfile(path) and (extensions is None
                                             or has_extension(path, extensions)):
                    found.add(os.path.abspath(path))
        elif os.path.isfile(text):
            found.add(os.path.abspath(text))
        else:  # a path named outright must exist: a missing one is not silently skipped
            raise CuratorError(
                "input_matched_no_files", f"input path {text!r} does not exist"
            )
    return sorted(found)


def file_stamp(path: str) -> list[int] | None:
    """``[size, mtime_ns]`` of a local input file when its partitions are planned
    (``None`` for an object: a URL is read whole, in one GET)."""
    if storage.is_remote(path):
        return None
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def stamp_inputs(
    task: FileGroupTask, seen: dict[str, list[int] | None] | None = None
) -> FileGroupTask:
    """Record in ``task`` what its input files were when it was planned
    (``_metadata["planned"]``): the engine checks them before the unit's first stage
    (:func:`check_planned`).

    ``seen`` (one dict for one plan) keeps each file's stamp, so a file split into
    many byte ranges is stat'ed once, not once per range."""
    stamps: dict[str, list[int]] = {}
    for path in task.data:
        if seen is None:
            stamp = file_stamp(path)
        elif path in seen:
            stamp = seen[path]
        else:
            stamp = seen[path] = file_stamp(path)
        if stamp is not None:
            stamps[path] = list(stamp)  # each task its own list, as when stat'ed alone
    if stamps:
        task._metadata["planned"] = stamps
    return task


def check_planned(task: Task) -> None:
    """Refuse a unit whose input files changed since they were planned
    (:func:`check_unchanged` for each). The engine calls it before a unit's first stage
    (:func:`curator.execution.run_unit`), so no stage that reads a partition has to."""
    planned = task._metadata.get("planned") if isinstance(task._metadata, dict) else None
    for path in planned or ():
        check_unchanged(task, path)


def check_unchanged(task: Task, path: str) -> None:
    """Refuse to read ``path`` if it was removed, truncated or replaced after the run
    listed it and planned its partitions (``input_changed``): its byte ranges would no
    longer hold what was planned, and a run would end "complete" with part of a file,
    or with another file's records under the planned ranges."""
    planned = task._metadata.get("planned", {}).get(path)
    if planned is None:
        return
    how = ("restore it and rerun the same command to resume; if the change is meant, "
           "remove the checkpoint and rerun")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CuratorError("input_changed",
                           f"{path} was removed after the run listed it: {how}",
                           path=path) from None
    size, mtime_ns = planned
    if st.st_size != size:
        raise CuratorError("input_changed",
                           f"{path} changed after the run listed it ({size} bytes then, "
                           f"{st.st_size} now): {how}", path=path)
    if st.st_mtime_ns != mtime_ns:
        raise CuratorError("input_changed",
                           f"{path} was modified after the run listed it (same size, a "
                           f"new modification time): {how}", path=path)


def _resolve_remote(url: str, extensions: Sequence[str] | None) -> list[str]:
    """The files a URL names, as :func:`resolve_input_files` resolves a local path."""
    try:
        if glob.has_magic(url):
            files = storage.glob(url)
        elif storage.isdir(url):
            files = storage.walk_files(url, SIDE_DIRS)
        elif storage.isfile(url):
            files = [url]
        else:
            raise CuratorError("input_matched_no_files", f"input path {url!r} does not exist")
    except CuratorError:
        raise
    except Exception as exc:  # the store's own errors: credentials, permissions, network
        raise CuratorError("object_storage_error",
                           f"cannot list {url!r}: {type(exc).__name__}: {exc}",
                           url=url) from exc
    return [f for f in files if extensions is None or has_extension(f, extensions)]


MAX_SIZE = 1 << 40  # 1 TiB: a larger partition is a typo, not a plan
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)", re.IGNORECASE)
# before pydantic's ByteSize, a bare K, M or G meant 2**10, 2**20, 2**30 here (ByteSize
# reads 10**3, ...): the same spelling keeps its meaning
_BARE_BINARY = {"k": "KiB", "m": "MiB", "g": "GiB"}
_BYTE_SIZE = TypeAdapter(ByteSize)


def parse_size(value: int | str | None) -> int | None:
    """``"64MB"`` (10**6), ``"256MiB"`` (2**20), ``"64M"`` (2**20), ``1048576`` -> bytes,
    read by pydantic's ``ByteSize``; ``None`` stays ``None``. Anything else, or a size
    outside 1 byte .. 1 TiB, is a :class:`PydanticCustomError` (a ``ValueError``), which
    the config models turn into ``config_error`` (:data:`curator.config.ByteSizeSpelling`)."""
    if value is None:
        return None
    size: int
    if isinstance(value, str):
        match = _SIZE.fullmatch(value.strip())
        if match is None:
            raise _size_error(value)
        number, unit = match.groups()
        try:
            size = int(_BYTE_SIZE.validate_python(number + _BARE_BINARY.get(unit.lower(), unit)))
        except ValidationError as exc:  # an unknown unit
            raise _size_error(value, f"a size in known units ({exc.errors()[0]['msg']})") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        raise _size_error(value)
    if not 1 <= size <= MAX_SIZE:
        raise _size_error(value, "a size from 1 byte to 1 TiB")
    return size


def _size_error(value: object, expected: str = "a size such as 64MB, 256MiB or a "
                "number of bytes") -> PydanticCustomError:
    return PydanticCustomError("byte_size", "should be {expected}, not {value}",
                               {"expected": expected, "value": repr(value)[:100]})


@dataclass
class FilePartitioningStage(ProcessingStage[EmptyTask, FileGroupTask]):
    """Plan source partitions over input files.

    - ``files_per_partition``: group this many files per partition (sorted order);
    - ``blocksize`` (bytes or ``"64MB"``): group small files up to this size, and split
      an uncompressed JSONL file larger than it into byte-range partitions, so one huge
      file still parallelises. A line belongs to the range holding its first byte.
    With neither, every file is its own partition.
    """

    file_paths: PathSpec = ""
    files_per_partition: int | None = None
    blocksize: int | str | None = None
    file_extensions: Sequence[str] | None = JSONL_EXTENSIONS
    split_files: bool = True
    name: str = "file_partitioning"

    def process(self, task: EmptyTask) -> list[FileGroupTask]:
        files = resolve_input_files(self.file_paths, self.file_extensions)
        if not files:
            raise CuratorError(
                "input_matched_no_files", f"no input files match {self.file_paths!r}"
            )
        block = parse_size(self.blocksize)
        groups: list[FileGroupTask] = []
        if self.files_per_partition:
            n = self.files_per_partition
            groups = [FileGroupTask(data=files[i : i + n]) for i in range(0, len(files), n)]
        elif block:
            current: list[str] = []
            current_bytes = 0
            for path in files:
                size = storage.size(path)
                if self.split_files and size > block and _splittable(path):
                    for start in range(0, size, block):
                        groups.append(
                            FileGroupTask(
                                data=[path],
                                _metadata={"byte_range": (start, min(start + block, size))},
                            )
                        )
                    continue
                if current and current_bytes + size > block:
                    groups.append(FileGroupTask(data=current))
                    current, current_bytes = [], 0
                current.append(path)
                current_bytes += size
            if current:
                groups.append(FileGroupTask(data=current))
        else:
            groups = [FileGroupTask(data=[path]) for path in files]
        names: dict[str, str] = {}  # per file, not per partition: one file may give
        stamps: dict[str, list[int] | None] = {}  # a million byte ranges
        for group in groups:
            first = group.data[0]
            name = names.get(first)
            if name is None:
                name = names[first] = Path(first).parent.name
            group.dataset_name = name
            group._metadata.setdefault("source_files", list(group.data))
            stamp_inputs(group, stamps)
        return groups


def _splittable(path: str) -> bool:
    lower = path.lower()  # an object is read whole: one GET, never split into ranges
    return (not storage.is_remote(path) and not lower.endswith(COMPRESSED_SUFFIXES)
            and has_extension(path, JSONL_EXTENSIONS))
