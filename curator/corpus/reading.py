"""Reading a corpus: the one JSONL line reader and the record reader.

**Lines.** A JSONL file (plain, ``.gz`` or ``.zst``; see :mod:`curator.corpus.formats`)
or a byte range of a plain one is read as lines split by :mod:`curator.corpus.lines`
(on ``\\n`` only, a leading UTF-8 BOM skipped, lines of ASCII whitespace blank: not
records, so neither yielded nor counted). Each line comes with its byte offset in the
file (for a compressed file, in the decompressed stream). A byte range holds the lines
that *start* in it (the first one may start before the range).

**Records.** :func:`iter_records` classifies every line (or Parquet row) with
:func:`curator.corpus.records.classify_line`: a record, or a rejection with its reason.

**Chunks.** :class:`FileChunks` reads a file once, a chunk at a time into one reused
buffer, with its size and sha256, and gives its lines a block at a time: the audit's
scan, which never holds a file whole.

Ingest parses with its own, inlined loop for speed, over the same lines (the spans of
:func:`curator.corpus.lines.line_windows`) and with the same classification
(``curator/ingest/records.py``, tested against this module).
"""

from __future__ import annotations

import gzip
import hashlib
import mmap
from collections.abc import Iterator
from itertools import chain
from typing import Any

from curator.corpus.formats import GZIP_SUFFIX, ZSTD_SUFFIX, is_compressed, is_parquet
from curator.corpus.lines import UTF8_BOM as UTF8_BOM  # (re-exported, as below)
from curator.corpus.lines import Block, bom_length, line_blocks
from curator.corpus.lines import split_lines as split_lines
from curator.corpus.records import RecordSpec, Rejection, classify_line, classify_record

#: Parquet rows are converted to records this many at a time
PARQUET_BATCH_ROWS = 8192
#: bytes :class:`FileChunks` reads of a local uncompressed file at a time
CHUNK_BYTES = 8 << 20

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


class UnreadableFile(Exception):
    """Reading (or decompressing) a file failed, perhaps midway: raised by
    :class:`FileChunks` only (not an ``OSError``), so an error in what handles the bytes
    is never taken for an unreadable file."""


class FileChunks:
    """A file read once: its bytes (decompressed) a chunk at a time, or its lines a
    :class:`curator.corpus.lines.Block` at a time (:meth:`blocks`).

    A local uncompressed file is read :data:`CHUNK_BYTES` at a time into one
    ``bytearray``, overwritten by the next chunk (the caller is done with a chunk when
    it asks for the next): never held whole. A compressed file or an object is read
    whole (one GET). Once every chunk is read, :attr:`size` and (with ``digest``)
    :attr:`sha256` are of the bytes on disk. An I/O or decompression error, at the
    start or midway, raises :class:`UnreadableFile`.
    """

    def __init__(self, path: str, *, digest: bool = False, chunk_bytes: int | None = None
                 ) -> None:
        self.path, self.digest = path, digest
        self.chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
        self.size = 0
        self.sha256: str | None = None  # "sha256:<hex>"
        self.final: Block | None = None  # the final line's block, once every block is read
        self.newline = False  # the file holds a newline (known with `final`)

    def __iter__(self) -> Iterator[bytes | bytearray]:
        try:
            if is_compressed(self.path) or _remote(self.path):
                yield self._whole()
                return
            h = hashlib.sha256() if self.digest else None
            # one buffer for every chunk: a fresh 8 MB per read was faulted in page by
            # page (about 0.2 s of system time per 1,000 MB)
            buf = bytearray(max(self.chunk_bytes, len(UTF8_BOM)))  # (a BOM is in the first)
            with open(self.path, "rb") as f:
                while n := f.readinto(buf):
                    chunk = buf if n == len(buf) else buf[:n]
                    self.size += n
                    if h is not None:
                        h.update(chunk)
                    yield chunk
            if h is not None:
                self.sha256 = "sha256:" + h.hexdigest()
        except (OSError, EOFError, ValueError) as exc:
            raise UnreadableFile(f"{type(exc).__name__}: {exc}") from exc

    def _whole(self) -> bytes:
        raw = _storage().read_file(self.path)
        self.size = len(raw)
        if self.digest:
            self.sha256 = "sha256:" + hashlib.sha256(raw).hexdigest()
        return decompress(raw, self.path) if is_compressed(self.path) else raw

    def blocks(self) -> Iterator[Block]:
        """The file's lines (:func:`curator.corpus.lines.line_blocks`, a leading BOM
        skipped); the last block holds the final line alone (:attr:`final`)."""
        chunks = iter(self)
        first = next(chunks, b"")  # the whole file, or a chunk of it: a BOM is in it
        count = 0
        for block in line_blocks(chain([first], chunks), bom_length(first)):
            count += 1
            yield block
        self.final, self.newline = block, count > 1  # a block before the final: a newline

    @property
    def unterminated(self) -> int | None:
        """Where the final line starts when the file does not end in a newline (0 when
        it has none; a BOM alone is such a file), else None (an empty file too). Known
        once every block is read."""
        final = self.final
        assert final is not None, "read every block first"
        if final.data or (final.offset and not self.newline):
            return final.offset if self.newline else 0
        return None


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
