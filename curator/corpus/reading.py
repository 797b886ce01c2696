"""Reading a corpus: the one JSONL line reader and the record reader.

**Lines.** A JSONL file (plain, ``.gz`` or ``.zst``; see :mod:`curator.corpus.formats`)
or a byte range of a plain one is read as lines split on ``\\n`` only (U+2028 and
friends are not line ends); a line keeps any other byte, a trailing ``\\r`` included (a
JSON parser reads it as whitespace). Each line comes with its byte offset in the file
(for a compressed file, in the decompressed stream). A UTF-8 byte order mark at the
start of a file is not part of its first line. A line of ASCII whitespace only is
blank: it is not a record, so it is neither yielded nor counted. A byte range holds the
lines that *start* in it (the first one may start before the range).

**Records.** :func:`iter_records` classifies every line (or Parquet row) with
:func:`curator.corpus.records.classify_line`: a record, or a rejection with its reason.

Ingest parses with its own, inlined loop for speed, over the same lines and with the
same classification (``curator/ingest/records.py``, tested against this module).
"""

from __future__ import annotations

import gzip
import mmap
from collections.abc import Iterator
from typing import Any

from curator.corpus.formats import GZIP_SUFFIX, ZSTD_SUFFIX, is_compressed, is_parquet
from curator.corpus.records import RecordSpec, Rejection, classify_line, classify_record

UTF8_BOM = b"\xef\xbb\xbf"
#: Parquet rows are converted to records this many at a time
PARQUET_BATCH_ROWS = 8192

ByteRange = tuple[int, int]


def _remote(path: str) -> bool:
    """Whether ``path`` is a URL (read through :mod:`curator.io.storage`, imported only
    then: ``curator.io`` imports this module)."""
    if "://" not in path:
        return False
    from curator.io import storage

    return storage.is_remote(path)


def _storage() -> Any:
    from curator.io import storage

    return storage


def read_bytes(path: str, byte_range: ByteRange | None = None) -> bytes:
    """The bytes of a (possibly .gz/.zst) file, or of the whole lines starting in a range
    (a compressed file is always read whole). A URL (``s3://...``) is read through
    :mod:`curator.io.storage`: one GET of the whole object."""
    if _remote(path):
        return _read_remote(path, byte_range)
    if is_compressed(path):
        with open(path, "rb") as raw:
            return decompress(raw.read(), path)
    with open(path, "rb") as f:
        if byte_range is None:
            return f.read()
        start, end = byte_range
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                f.readline()  # the line holding `start` belongs to the previous range
        pos = f.tell()
        if pos >= end:
            return b""
        data = f.read(end - pos)
        if data and not data.endswith(b"\n"):
            data += f.readline()
        return data


class DamagedStream(OSError):
    """A compressed file whose stream is not one its format can decode (an ``OSError``,
    like a bad gzip header, so every reader that reports an unreadable file reports it)."""


def decompress(data: bytes, path: str) -> bytes:
    """The decompressed bytes of a ``.gz`` or ``.zst`` file (``path`` names the format),
    every member or frame of it. A stream cut short raises ``EOFError`` (zstandard's
    stream reader returned what it had, silently: a truncated ``.zst`` read as empty);
    a damaged one :class:`DamagedStream`."""
    import zlib

    import zstandard

    try:
        if path.lower().endswith(GZIP_SUFFIX):
            return gzip.decompress(data)  # EOFError when cut short
        assert path.lower().endswith(ZSTD_SUFFIX), path
        out = []
        while data:  # frame after frame
            frame = zstandard.ZstdDecompressor().decompressobj()
            out.append(frame.decompress(data))
            if not frame.eof:
                raise EOFError("compressed file ended before the end of its last frame")
            data = frame.unused_data
        return b"".join(out)
    except (zlib.error, zstandard.ZstdError) as exc:
        raise DamagedStream(f"{type(exc).__name__}: {exc}") from exc


def _read_remote(url: str, byte_range: ByteRange | None) -> bytes:
    data = _storage().read(url)
    if is_compressed(url):
        return decompress(data, url)
    if byte_range is None:
        return data
    start, end = byte_range  # whole lines starting in the range, as for a local file
    if start > 0 and data[start - 1:start] != b"\n":
        nl = data.find(b"\n", start)
        start = len(data) if nl < 0 else nl + 1
    if start >= end:
        return b""
    nl = data.find(b"\n", end - 1)
    return data[start:len(data) if nl < 0 else nl + 1]


def map_lines(path: str, byte_range: ByteRange | None = None
              ) -> tuple[bytes | mmap.mmap, int, int]:
    """What :func:`read_bytes` returns, as ``(buffer, start, end)``: the bytes are
    ``buffer[start:end]``.

    For an uncompressed, non-empty file the buffer is a read-only memory map of the
    whole file (pre-faulted with ``MAP_POPULATE`` where there is one): no copy of
    the file into fresh memory, which costs about a tenth of what parsing it does.
    As with any memory map (polars maps its input too), the file must not be
    truncated while the buffer is in use. Otherwise the buffer is ``read_bytes``'.
    """
    if is_compressed(path) or _remote(path):
        data = read_bytes(path, byte_range)
        return data, 0, len(data)
    with open(path, "rb") as f:
        try:
            mm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                           prot=mmap.PROT_READ)
        except ValueError:  # an empty file cannot be mapped
            return b"", 0, 0
        except (AttributeError, TypeError, OSError):  # no POSIX mmap flags: read it
            data = read_bytes(path, byte_range)
            return data, 0, len(data)
    size = len(mm)
    if byte_range is None:
        return mm, 0, size
    start, end = byte_range
    if start > 0 and mm[start - 1] != 10:  # the line holding `start` belongs to the previous range
        nl = mm.find(b"\n", start)
        start = size if nl < 0 else nl + 1
    end = min(end, size)
    if start >= end:
        return b"", 0, 0
    if mm[end - 1] != 10:
        nl = mm.find(b"\n", end)
        end = size if nl < 0 else nl + 1
    return mm, start, end


def read_block(path: str, byte_range: ByteRange | None) -> tuple[int, bytes]:
    """(offset of the first byte, bytes) of the whole lines starting in ``byte_range``.

    For a compressed file the offsets are in the decompressed stream (and a compressed
    file is never split into ranges).
    """
    if (byte_range is None or byte_range[0] == 0 or is_compressed(path)
            or _remote(path)):  # an object is never split into ranges
        return 0, read_bytes(path, byte_range)
    with open(path, "rb") as f:
        f.seek(byte_range[0] - 1)
        if f.read(1) != b"\n":
            f.readline()
        start = f.tell()
    return start, read_bytes(path, byte_range)


def split_lines(data: bytes, base_offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` of every non-blank line of ``data`` (which starts at
    ``base_offset`` in its file; at offset 0 a UTF-8 BOM is skipped)."""
    pos = 0
    if base_offset == 0 and data.startswith(UTF8_BOM):
        data, pos = data[len(UTF8_BOM):], len(UTF8_BOM)
    for line in data.split(b"\n"):
        offset = base_offset + pos
        pos += len(line) + 1
        if line.strip():
            yield offset, line


def iter_lines(path: str, byte_range: ByteRange | None = None) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for every non-blank line of a JSONL file (or of the lines
    starting in ``byte_range``), without its newline. Reads the whole block first, so a
    damaged file (a truncated .gz) raises before the first line."""
    base, data = read_block(path, byte_range)
    return split_lines(data, base)


def iter_parquet_rows(path: str) -> Iterator[dict[str, Any]]:
    """Every row of a Parquet file as a dict, in file order."""
    import pyarrow.parquet as pq

    if _remote(path):
        with _storage().open_read(path) as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=PARQUET_BATCH_ROWS):
                yield from batch.to_pylist()
        return
    for batch in pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS):
        yield from batch.to_pylist()


def parquet_column_names(path: str) -> list[str]:
    """The column names of a Parquet file (local or a URL)."""
    import pyarrow.parquet as pq

    if _remote(path):
        with _storage().open_read(path) as f:
            return list(pq.read_schema(f).names)
    return list(pq.read_schema(path).names)


def iter_records(path: str, byte_range: ByteRange | None, spec: RecordSpec
                 ) -> Iterator[tuple[int, bytes | None, dict[str, Any] | Rejection]]:
    """``(position, line, record or rejection)`` for every line of a JSONL file (position:
    the byte offset) or every row of a Parquet file (position: the row; line: None)."""
    if is_parquet(path):
        for row, obj in enumerate(iter_parquet_rows(path)):
            yield row, None, classify_record(obj, spec)
        return
    for offset, line in iter_lines(path, byte_range):
        yield offset, line, classify_line(line, spec)
