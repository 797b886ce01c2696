"""I/O: partitioning (files, blocks, byte ranges), atomic writes, safe output names; the
generic JSONL reader and idempotent writer of ``curator_testing.jsonl`` over them."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import random
import stat
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
import zstandard

from curator.adapter import StageAdapter
from curator.corpus.reading import read_bytes
from curator.errors import CuratorError
from curator.execution import InlineExecutor
from curator.io import FilePartitioningStage, write_atomic
from curator.io.partitioning import parse_size
from curator.io.writers import output_stem, safe_name
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, FileGroupTask
from curator_testing.jsonl import DocumentBatch, JsonlReaderStage, JsonlWriter, jsonl_reader


def partitions(stage: FilePartitioningStage) -> list[FileGroupTask]:
    return StageAdapter(stage, is_source=True).process_batch([EmptyTask()]).tasks


def write_files(root: Path, sizes: list[int], suffix: str = ".jsonl") -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, size in enumerate(sizes):
        path = root / f"f{i}{suffix}"
        path.write_bytes(b"x" * size)
        paths.append(str(path.absolute()))
    return paths


def rows_of(tasks) -> list[dict]:
    return [row for t in tasks for row in t.to_polars().to_dicts()]


# -- partitioning --------------------------------------------------------------------

def test_files_per_partition_groups_sorted_files(tmp_path) -> None:
    paths = write_files(tmp_path / "in", [10] * 5)
    (tmp_path / "in" / "notes.txt").write_text("ignored")
    groups = partitions(FilePartitioningStage(file_paths=str(tmp_path / "in"),
                                              files_per_partition=2))
    assert [g.data for g in groups] == [paths[0:2], paths[2:4], paths[4:5]]
    assert all(g.dataset_name == "in" for g in groups)
    assert all(g._metadata["source_files"] == g.data for g in groups)
    assert len({g.source_id for g in groups}) == 3


def test_blocksize_groups_small_files(tmp_path) -> None:
    paths = write_files(tmp_path / "in", [100, 100, 100, 250, 50])
    groups = partitions(FilePartitioningStage(file_paths=str(tmp_path / "in"), blocksize=250))
    assert [g.data for g in groups] == [paths[0:2], [paths[2]], [paths[3]], [paths[4]]]
    assert all(g.byte_range is None for g in groups)
    flat = [p for g in groups for p in g.data]
    assert sorted(flat) == paths  # every file exactly once


def test_globs_lists_and_compressed_extensions(tmp_path) -> None:
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    for name in ("a.jsonl", "b.jsonl.gz", "c.jsonl.zst", "sub/d.ndjson", "e.parquet", "f.txt"):
        (root / name).write_bytes(b"{}\n")
    found = [Path(g.data[0]).name for g in partitions(
        FilePartitioningStage(file_paths=str(root / "**" / "*"))
    )]
    assert sorted(found) == ["a.jsonl", "b.jsonl.gz", "c.jsonl.zst", "d.ndjson"]
    listed = partitions(FilePartitioningStage(file_paths=[str(root / "a.jsonl")]))
    assert [Path(g.data[0]).name for g in listed] == ["a.jsonl"]
    with pytest.raises(CuratorError) as info:
        partitions(FilePartitioningStage(file_paths=str(tmp_path / "nothing-here")))
    assert info.value.error_id == "input_matched_no_files"


def test_parse_size() -> None:
    assert parse_size("64MB") == 64_000_000
    assert parse_size("1GiB") == 1 << 30
    assert parse_size("512 KiB") == 512 * 1024
    assert parse_size(1234) == 1234
    assert parse_size("100") == 100
    assert parse_size(None) is None


def _big_jsonl(path: Path, n: int, trailing_newline: bool = True) -> list[dict]:
    rnd = random.Random(3)
    docs = [{"id": i, "text": "é" * rnd.randint(0, 40) + "x" * rnd.randint(0, 300)}
            for i in range(n)]
    body = "\n".join(json.dumps(d, ensure_ascii=False) for d in docs)
    path.write_text(body + ("\n" if trailing_newline else ""), encoding="utf-8")
    return docs


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_byte_range_split_reads_every_line_exactly_once(tmp_path, trailing_newline) -> None:
    """One large JSONL file split by bytes: no line lost or duplicated, whatever straddles."""
    path = tmp_path / "big.jsonl"
    docs = _big_jsonl(path, 600, trailing_newline)
    size = path.stat().st_size
    block = 997  # not a line boundary: many lines straddle range boundaries
    groups = partitions(FilePartitioningStage(file_paths=str(path), blocksize=block))
    ranges = [g.byte_range for g in groups]
    assert len(ranges) == -(-size // block)
    assert ranges[0][0] == 0 and ranges[-1][1] == size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert len({g.source_id for g in groups}) == len(groups)
    reader = StageAdapter(JsonlReaderStage())
    rows = [row for g in groups for row in rows_of(reader.process_batch([g]).tasks)]
    assert [r["id"] for r in rows] == list(range(600))
    assert rows == docs


@pytest.mark.parametrize("trailing_newline", [True, False])
def test_byte_ranges_partition_the_bytes_for_every_block_size(tmp_path, trailing_newline) -> None:
    """Concatenating the ranges' reads gives the file back, at every boundary position."""
    path = tmp_path / "small.jsonl"
    lines = [b'{"a":1}', b'{"b":"22"}', b"{}", b'{"c":"\xc3\xa9\xc3\xa9"}', b'{"d":4444}']
    data = b"\n".join(lines) + (b"\n" if trailing_newline else b"")
    path.write_bytes(data)
    for block in range(1, len(data) + 2):
        chunks = [read_bytes(str(path), (s, min(s + block, len(data))))
                  for s in range(0, len(data), block)]
        assert b"".join(chunks) == data, block
        for chunk in chunks:  # whole lines only
            assert chunk == b"" or chunk in data
            assert chunk == b"" or chunk.endswith(b"\n") or chunk == data[-len(chunk):]


def test_compressed_files_are_not_split(tmp_path) -> None:
    path = tmp_path / "big.jsonl.gz"
    with gzip.open(path, "wt") as f:
        for i in range(2000):
            f.write(json.dumps({"id": i, "text": os.urandom(20).hex()}) + "\n")
    assert path.stat().st_size > 4096
    groups = partitions(FilePartitioningStage(file_paths=str(path), blocksize=4096))
    assert len(groups) == 1 and groups[0].byte_range is None


# -- the JSONL reader (curator_testing) ------------------------------------------------

def test_jsonl_reader_plain_gzip_and_zstd(tmp_path) -> None:
    root = tmp_path / "in"
    root.mkdir()
    docs = {name: [{"id": f"{name}-{i}", "text": f"text {i}"} for i in range(3)]
            for name in ("plain", "gz", "zst")}
    (root / "plain.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs["plain"]))
    with gzip.open(root / "gz.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(d) + "\n" for d in docs["gz"]))
    raw = "".join(json.dumps(d) + "\n" for d in docs["zst"]).encode()
    (root / "zst.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    result = Pipeline("read", [*jsonl_reader(str(root))]).run(InlineExecutor())
    assert len(result.tasks) == 3
    got = sorted(rows_of(result.tasks), key=lambda r: r["id"])
    assert got == sorted(docs["plain"] + docs["gz"] + docs["zst"], key=lambda r: r["id"])
    assert all(isinstance(t, DocumentBatch) for t in result.tasks)


def test_jsonl_reader_fields_selects_and_fills_missing(tmp_path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "a", "x": 1}\n{"text": "b", "x": 2}\n')
    result = Pipeline("read", [*jsonl_reader(str(path), fields=["text", "missing"])]).run()
    [task] = result.tasks
    assert task.to_polars().columns == ["text", "missing"]
    assert rows_of([task]) == [{"text": "a", "missing": None}, {"text": "b", "missing": None}]


# -- the JSONL writer (curator_testing) ------------------------------------------------

def _corpus(root: Path) -> Path:
    root.mkdir()
    for f in range(3):
        (root / f"p{f}.jsonl").write_text(
            "".join(json.dumps({"id": f * 10 + i, "text": "t" * i}) + "\n" for i in range(4))
        )
    return root


def _listing(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


def test_the_writer_is_atomic_and_idempotent(tmp_path) -> None:
    src, out = _corpus(tmp_path / "in"), tmp_path / "out"

    def go():
        return Pipeline("w", [*jsonl_reader(str(src)), JsonlWriter(path=str(out))]).run()

    first = go()
    files = _listing(out)
    assert sorted(files) == sorted(f"{t.source_id}.jsonl" for t in first.tasks)
    assert not [n for n in files if n.startswith(".")]  # no temp file left
    assert first.stats["jsonl_writer.rows_written"] == 12
    assert [t.data for t in first.tasks] == [[str(out / n)] for n in
                                              (f"{t.source_id}.jsonl" for t in first.tasks)]
    # a crash left a stale hidden temp beside one output
    stale = out / f".{sorted(files)[0]}.tmp-99999"
    stale.write_bytes(b"half written")
    go()
    assert _listing(out) == files  # overwritten with identical bytes, stale temp gone
    assert not stale.exists()
    read_back = [json.loads(line) for n in files for line in (out / n).read_text().splitlines()]
    assert sorted(r["id"] for r in read_back) == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23]


def test_write_atomic_makes_the_rename_durable(tmp_path, monkeypatch) -> None:
    """The file and its directory entry are fsynced before the checkpoint can record it.

    A power loss cannot be produced here, so ``os.fsync`` is observed (not replaced).
    """
    synced: list[str] = []
    real_fsync = os.fsync

    def observe(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", observe)
    target = write_atomic(tmp_path / "sub" / "x.jsonl", "data\n")
    assert target.read_text() == "data\n"
    assert synced == ["file", "dir"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.jsonl"]


HOSTILE = ["../../etc/x", "..", ".", "/", "a/../../b", "..\\..\\windows", "x\x00y", "",
           "...", "-", "~/.ssh/id", ".hidden", "a" * 500, "é/ü", "C:\\x", "a..b"]


@pytest.mark.parametrize("text", HOSTILE)
def test_safe_name_never_escapes(tmp_path, text) -> None:
    name = safe_name(text)
    assert name and name not in (".", "..")
    assert ".." not in name
    assert not any(sep in name for sep in ("/", "\\", "\x00", os.sep))
    assert not name.startswith(".")
    assert len(name) <= 120
    assert (tmp_path / f"{name}.jsonl").resolve().parent == tmp_path.resolve()


@pytest.mark.parametrize("sid", HOSTILE)
def test_output_stem_of_hostile_source_ids(tmp_path, sid) -> None:
    task = DocumentBatch(data=pa.table({"a": [1]}))
    task._task_id, task._source_id = f"0_{sid}_0", sid
    for t_id in (f"0_{sid}_0", f"0_{sid}_0_3", f"0_{sid}", "r" + "f" * 32):
        task._task_id = t_id
        stem = output_stem(task)
        assert stem and ".." not in stem and "/" not in stem and "\\" not in stem
        assert not stem.startswith(".")
        assert (tmp_path / f"{stem}.jsonl").resolve().parent == tmp_path.resolve()


def test_output_stem_names() -> None:
    task = DocumentBatch()
    task._task_id, task._source_id = "0_abc123_0_0", "abc123"
    assert output_stem(task) == "abc123"
    task._task_id = "0_abc123_0_2_0"
    assert output_stem(task) == "abc123-0-2-0"


def test_hostile_deterministic_id_writes_inside_the_output_dir(tmp_path) -> None:
    @dataclass
    class Evil(DocumentBatch):
        def get_deterministic_id(self) -> str:
            return "../../../escape"

    @dataclass
    class Source(ProcessingStage[EmptyTask, DocumentBatch]):
        def process(self, task: EmptyTask) -> list[DocumentBatch]:
            return [Evil(data=pa.table({"text": ["x"]}))]

    out = tmp_path / "deep" / "out"
    result = Pipeline("w", [Source(), JsonlWriter(path=str(out))]).run(InlineExecutor())
    [written] = result.tasks
    path = Path(written.data[0])
    assert path.parent == out and path.name == "escape.jsonl"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["escape.jsonl"]


def test_writer_paths_are_resolved_where_the_pipeline_is_built(tmp_path, monkeypatch) -> None:
    """A worker may run in another directory (a Ray worker joined by address)."""
    monkeypatch.chdir(tmp_path)
    assert JsonlWriter(path="out").path == str(tmp_path / "out")
    assert JsonlWriter(path="./sub/../jl").path == str(tmp_path / "jl")
