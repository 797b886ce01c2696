"""The corpus kernel's one line splitter (curator/corpus/lines.py) and its chunked file
reader (``FileChunks``): every way of reading gives the lines ``bytes.split(b"\\n")``
gives, blank exactly when ``bytes.strip`` leaves nothing, a leading BOM skipped."""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path
from typing import Any

import pytest

from curator.corpus import reading
from curator.corpus.lines import UTF8_BOM, line_blocks, line_index, line_windows, split_lines
from curator.corpus.reading import FileChunks, UnreadableFile

BOM = UTF8_BOM
DATA = {
    "empty": b"",
    "newline": b"\n",
    "one line": b'{"a":1}',
    "lines": b'{"a":1}\n{"b":2}\n',
    "bom": BOM + b'{"a":1}\n{"b":2}',
    "bom alone": BOM,
    "blanks": b"\n \n\t\r\n\x0b\x0c\n  x \n\r\n\n",
    "crlf": b'{"a":1}\r\n{"b":2}\r\n\r\n',
    "u2028": '{"a":"x\u2028y"}\n{"b":"\u2029"}\n'.encode(),
    "nbsp only": "\u00a0\n".encode(),  # not ASCII whitespace: a row
    "not utf-8": b"\xff\xfe\n\xc3\n",
    "long": b"x" * 50 + b"\n" + b"y" * 3 + b"\n" + b"z" * 70,
}


def _lines(data: bytes, start: int = 0) -> list[tuple[int, bytes, bool]]:
    """(offset, line, blank) as bytes.split and bytes.strip give them."""
    out, pos = [], start
    for line in data[start:].split(b"\n"):
        out.append((pos, line, not line.strip()))
        pos += len(line) + 1
    return out


def _spans(data: bytes | bytearray, index: Any, base: int = 0) -> list[tuple[int, bytes, bool]]:
    return [(base + s, bytes(data[s:e]), b) for s, e, b in
            zip(index.starts.tolist(), index.ends.tolist(), index.blank.tolist(), strict=True)]


@pytest.mark.parametrize("name", sorted(DATA))
def test_the_index_is_bytes_split_and_strip(name: str) -> None:
    data = DATA[name]
    for start in range(min(len(data), 5) + 1):
        assert _spans(data, line_index(data, start)) == _lines(data, start), (name, start)


@pytest.mark.parametrize("name", sorted(DATA))
def test_windows_of_a_buffer_are_the_whole_index(name: str) -> None:
    """A buffer indexed a window of whole lines at a time (a line longer than the window
    alone) gives the lines of one index over it."""
    data = DATA[name]
    want = _lines(data)
    for size in (1, 2, 3, 7, 16, 64, len(data) + 1):
        got = [line for index in line_windows(data, 0, len(data), size)
               for line in _spans(data, index)]
        assert got == want, (name, size)


@pytest.mark.parametrize("name", sorted(DATA))
def test_chunks_give_the_lines_of_the_whole(name: str) -> None:
    """A file read in chunks into one reused buffer: the same lines, a block at a time, a
    line split across chunks joined; the final line alone in the last block."""
    data = DATA[name]
    start = len(BOM) if data.startswith(BOM) else 0
    want = _lines(data, start)
    for size in (1, 2, 3, 5, 64, len(data) or 1):
        if size < start:  # a BOM is in the first chunk (FileChunks reads 3 bytes or more)
            continue
        buf = bytearray(size)

        def chunks(size: int = size, buf: bytearray = buf) -> Any:
            for i in range(0, len(data), size):
                part = data[i:i + size]
                buf[:len(part)] = part  # the one buffer, read into again
                yield buf if len(part) == size else buf[:len(part)]

        got, blocks = [], 0
        for block in line_blocks(chunks(), start):
            got += _spans(block.data, block.index, block.offset)  # used before the next
            blocks += 1
        assert got == want, (name, size)
        assert len(block.index.blank) == 1 and (blocks > 1) == (b"\n" in data[start:])


@pytest.mark.parametrize("name", sorted(DATA))
def test_split_lines_yields_the_rows_with_their_offsets(name: str) -> None:
    data = DATA[name]
    start = len(BOM) if data.startswith(BOM) else 0
    assert list(split_lines(data)) == [(o, line) for o, line, blank in _lines(data, start)
                                       if not blank]
    # past a file's start, a BOM is bytes of a line
    assert list(split_lines(data, 10)) == [(10 + o, line) for o, line, blank in _lines(data)
                                           if not blank]


@pytest.mark.parametrize(("data", "unterminated"), [
    (b"", None), (b"\n", None), (b'{"a":1}\n', None), (b'{"a":1}', 0),
    (b'{"a":1}\n{"b"', 8), (b"\n  ", 1), (BOM, 0), (BOM + b"x", 0), (BOM + b"x\n", None),
    (BOM + b"x\ny", 5)])
@pytest.mark.parametrize("chunk", [1, 4, 1 << 20])
def test_a_file_read_in_chunks(tmp_path: Path, data: bytes, unterminated: int | None,
                               chunk: int) -> None:
    """Its lines (a BOM skipped, whichever the chunk size), its size and sha256, and where
    a final line without a newline starts (0 when the file has no newline)."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    reader = FileChunks(str(path), digest=True, chunk_bytes=chunk)
    start = len(BOM) if data.startswith(BOM) else 0
    got = [line for block in reader.blocks()
           for line in _spans(block.data, block.index, block.offset)]
    assert got == _lines(data, start)
    assert reader.size == len(data)
    assert reader.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    assert reader.unterminated == unterminated
    gz = tmp_path / "a.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    reader = FileChunks(str(gz), chunk_bytes=chunk)
    assert [line for block in reader.blocks()
            for line in _spans(block.data, block.index, block.offset)] == got
    assert (reader.size, reader.sha256) == (len(gz.read_bytes()), None)
    assert reader.unterminated == unterminated


def test_a_file_that_fails_midway_or_is_cut_short_is_unreadable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An I/O error after some chunks, or a compressed file cut short: ``UnreadableFile``
    (not an OSError: an error in what handles the bytes is never taken for one)."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a":1}\n' * 20)

    class Failing(io.BytesIO):
        reads = 0

        def readinto(self, buffer: Any) -> int:
            Failing.reads += 1
            if Failing.reads > 2:
                raise OSError(5, "Input/output error")
            return super().readinto(buffer)

    monkeypatch.setattr(reading, "open", lambda p, mode: Failing(Path(p).read_bytes()),
                        raising=False)
    seen = []
    with pytest.raises(UnreadableFile, match=r"OSError: \[Errno 5\] Input/output error"):
        for block in FileChunks(str(path), chunk_bytes=16).blocks():
            seen.append(block)
    assert seen and Failing.reads == 3
    monkeypatch.undo()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"a":1}\n' * 20)[:-9])
    with pytest.raises(UnreadableFile, match="EOFError"):
        list(FileChunks(str(cut)).blocks())
    assert not issubclass(UnreadableFile, OSError)
