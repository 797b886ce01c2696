"""Input resolution and partition planning for ingest."""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from curator.corpus.formats import (
    JSONL_EXTENSIONS,
    PARQUET_EXTENSIONS,
    file_format,
    is_compressed,
)
from curator.errors import CuratorError
from curator.io import storage
from curator.io.partitioning import resolve_input_files, stamp_inputs
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask


@dataclass
class InputPlan:
    files: list[str]
    format: str
    skipped_own_output: list[str]


def resolve_inputs(spec: str | list[str], fmt: str, output_dir: Path | str,
                   sidecars: frozenset[str] = frozenset()) -> InputPlan:
    """Resolve ``input``; skip sidecars and files under ``output_dir``; check formats."""
    found = resolve_input_files(spec, (*JSONL_EXTENSIONS, *PARQUET_EXTENSIONS))
    out = (str(output_dir).rstrip("/") + "/" if storage.is_remote(output_dir)  # a URL
           else str(Path(output_dir).resolve()) + os.sep)
    # Real paths: a corpus named through a symlink still contains output_dir.
    own = [p for p in found
           if (p if storage.is_remote(p) else os.path.realpath(p)).startswith(out)]
    skipped = set(own)
    files = [p for p in found if p not in skipped and Path(p).name not in sidecars]
    if not files:
        raise CuratorError(
            "input_matched_no_files",
            f"input {spec!r} matched no JSONL or Parquet files"
            + (f" ({len(own)} inside output_dir were skipped)" if own else ""),
        )
    formats = sorted({file_format(p) for p in files})
    if fmt == "auto" and len(formats) > 1:
        counts = {f: sum(1 for p in files if file_format(p) == f) for f in formats}
        raise CuratorError(
            "mixed_formats",
            f"input mixes formats {counts}; set format: jsonl or format: parquet and point "
            "input at one kind",
        )
    if fmt != "auto" and formats != [fmt]:
        other = [p for p in files if file_format(p) != fmt][:3]
        raise CuratorError(
            "mixed_formats", f"format is {fmt} but input also has other files, e.g. {other}"
        )
    return InputPlan(files=files, format=formats[0], skipped_own_output=own)


def line_aligned_ranges(path: str, block: int) -> list[tuple[int, int, int]]:
    """Split a file into ``(start, end, first_line)`` ranges of about ``block`` bytes.

    Boundaries are moved forward to the next line start, so every range holds
    whole lines and its first line number is exact (1-based).
    """
    size = os.path.getsize(path)
    if size == 0:
        return [(0, 0, 1)]
    ranges: list[tuple[int, int, int]] = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        start, line = 0, 1
        while start < size:
            nominal = min(start + block, size)
            if nominal >= size:
                end = size
            else:
                nl = mm.find(b"\n", nominal - 1)
                end = size if nl < 0 else nl + 1
            ranges.append((start, end, line))
            line += mm[start:end].count(b"\n")
            start = end
    return ranges


@dataclass
class IngestPartitioning(ProcessingStage[EmptyTask, FileGroupTask]):
    """Source stage: consecutive files grouped up to ``block`` bytes; larger
    uncompressed JSONL files split into line-aligned byte ranges."""

    files: list[str]
    block: int
    name: str = "ingest_partitioning"

    def process(self, task: EmptyTask) -> list[FileGroupTask]:
        return [FileGroupTask(data=list(g.data), _metadata=dict(g._metadata))
                for g in self.plan()]

    @cached_property
    def _plan(self) -> list[FileGroupTask]:
        return self._make_plan()

    def plan(self) -> list[FileGroupTask]:
        """The partitions, computed once (splitting large files scans them for lines)."""
        return self._plan

    def _make_plan(self) -> list[FileGroupTask]:
        groups: list[FileGroupTask] = []
        current: list[str] = []
        current_bytes = 0

        def flush() -> None:
            nonlocal current, current_bytes
            if current:
                groups.append(FileGroupTask(data=current))
            current, current_bytes = [], 0

        for path in self.files:  # already sorted: groups stay in global order
            size = storage.size(path)  # an object (s3://...) is read whole, never split
            splittable = (file_format(path) == "jsonl" and not is_compressed(path)
                          and not storage.is_remote(path))
            if splittable and size > self.block:
                flush()
                for start, end, first_line in line_aligned_ranges(path, self.block):
                    groups.append(
                        FileGroupTask(
                            data=[path],
                            _metadata={"byte_range": (start, end), "first_line": first_line},
                        )
                    )
                continue
            if current and current_bytes + size > self.block:
                flush()
            current.append(path)
            current_bytes += size
        flush()
        # the input files as planned: a worker refuses one changed since
        # (input_changed: the engine's curator.io.partitioning.check_planned)
        return [stamp_inputs(g) for g in groups]
