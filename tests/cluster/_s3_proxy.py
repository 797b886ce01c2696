"""A byte-counting HTTP/1.1 proxy in front of an S3 endpoint, for one client process.

Give a process ``AWS_ENDPOINT_URL=http://127.0.0.1:<port>`` (and
``FSSPEC_S3_ENDPOINT_URL``) and every byte it sends to or receives from the store goes
through here, counted per request: bytes *up* (request line, headers and body) and
*down* (the whole response), keyed by method and object key. Requests are parsed (their
bodies by ``Content-Length`` or chunked) so each byte is charged to its request;
responses are relayed as they come and charged to the request in flight on that
connection (S3 clients do not pipeline). ``bench/cluster_driver_io.py`` puts it in front
of the test cluster's S3 server for the driver alone.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import BinaryIO
from urllib.parse import parse_qs, unquote, urlsplit

_CHUNK = 1 << 16


@dataclass
class Traffic:
    """What one request key moved: requests, bytes up, bytes down."""

    requests: int = 0
    up: int = 0
    down: int = 0


@dataclass
class _Conn:
    key: str = "(before a request)"
    lock: threading.Lock = field(default_factory=threading.Lock)


def request_key(method: str, target: str) -> str:
    """``"<METHOD> <bucket>/<key>"``; a listing is ``"LIST <bucket>/<prefix>*"``."""
    parts = urlsplit(target)
    path = unquote(parts.path).lstrip("/")
    bucket, _, key = path.partition("/")
    query = parse_qs(parts.query)
    if not key and method == "GET" and ("list-type" in query or "prefix" in query):
        return f"LIST {bucket}/{query.get('prefix', [''])[0]}*"
    return f"{method} {bucket}/{key}"


def prefix_of(key: str, depth: int = 3) -> str:
    """A request key's object prefix for aggregation: the method and the first
    ``depth`` parts of the key past the bucket, hex digests and numbers collapsed to
    ``#`` (``GET b/run/ingested/.staging/1f0e9a2c4b7d.parquet``, depth 3 ->
    ``GET run/ingested/.staging``; depth 4 -> ``GET run/ingested/.staging/#.parquet``)."""
    method, _, rest = key.partition(" ")
    parts = rest.split("/")[1:]  # without the bucket
    head = "/".join(parts[:depth])
    return f"{method} {re.sub(r'[0-9a-f]{8,}|[0-9]+', '#', head)}"


class CountingProxy:
    """A threaded proxy on a free loopback port, to ``upstream`` (host, port)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._server.getsockname()[1])
        self._lock = threading.Lock()
        self._traffic: dict[str, Traffic] = defaultdict(Traffic)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> CountingProxy:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.close()

    def take(self) -> dict[str, Traffic]:
        """What was counted since the last call (per request key); the counters reset."""
        with self._lock:
            out, self._traffic = dict(self._traffic), defaultdict(Traffic)
        return out

    # -- relaying ---------------------------------------------------------------------
    def _count(self, key: str, up: int = 0, down: int = 0, requests: int = 0) -> None:
        with self._lock:
            t = self._traffic[key]
            t.up += up
            t.down += down
            t.requests += requests

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            conn = _Conn()
            threading.Thread(target=self._requests, args=(client, upstream, conn),
                             daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client, conn),
                             daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket, conn: _Conn) -> None:
        reader = client.makefile("rb")
        try:
            while self._relay_request(reader, upstream, conn):
                pass
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                upstream.shutdown(socket.SHUT_WR)
            reader.close()

    def _relay_request(self, reader: BinaryIO, upstream: socket.socket, conn: _Conn) -> bool:
        """One request (head and body) to ``upstream``; False at the end of the stream."""
        line = reader.readline()
        if not line:
            return False
        head = [line]
        while True:
            h = reader.readline()
            if not h:
                return False
            head.append(h)
            if h in (b"\r\n", b"\n"):
                break
        method, target, *_ = line.decode("latin-1").split(" ")
        headers = {}
        for h in head[1:-1]:
            name, _, value = h.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        key = request_key(method, target)
        with conn.lock:
            conn.key = key
        data = b"".join(head)
        self._count(key, up=len(data), requests=1)
        upstream.sendall(data)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._relay_chunked(reader, upstream, key)
        else:
            self._relay_exact(reader, upstream, key, int(headers.get("content-length", 0)))
        return True

    def _relay_exact(self, reader: BinaryIO, upstream: socket.socket, key: str, n: int) -> None:
        while n > 0:
            data = reader.read(min(n, _CHUNK))
            if not data:
                raise OSError("request body cut short")
            n -= len(data)
            self._count(key, up=len(data))
            upstream.sendall(data)

    def _relay_chunked(self, reader: BinaryIO, upstream: socket.socket, key: str) -> None:
        while True:
            size_line = reader.readline()
            self._count(key, up=len(size_line))
            upstream.sendall(size_line)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, then the blank line
                    t = reader.readline()
                    self._count(key, up=len(t))
                    upstream.sendall(t)
                    if t in (b"\r\n", b"\n", b""):
                        return
            self._relay_exact(reader, upstream, key, size + 2)  # the chunk and its CRLF

    def _responses(self, upstream: socket.socket, client: socket.socket, conn: _Conn) -> None:
        try:
            while True:
                data = upstream.recv(_CHUNK)
                if not data:
                    break
                with conn.lock:
                    key = conn.key
                self._count(key, down=len(data))
                client.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_WR)
            for s in (client, upstream):
                with contextlib.suppress(OSError):
                    s.close()
