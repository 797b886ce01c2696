"""A local S3 server for tests and benchmarks: ``python -m moto.server`` as a subprocess.

Nothing is patched: code talks HTTP to the server on a free loopback port through
s3fs/botocore, as it would to S3. :meth:`MotoServer.env` is what reaches every process
(pool workers, Ray workers, CLI subprocesses): the endpoint and fake credentials in
fsspec's and botocore's usual environment variables (``docs/storage.md``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class MotoServer:
    """A running moto server: its process (a session of its own), port and log."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path | None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The fake credentials and the endpoint, for botocore and fsspec."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint,
                "FSSPEC_S3_ENDPOINT_URL": self.endpoint}

    def client(self):  # type: ignore[no-untyped-def]
        """A boto3 S3 client of this server (not through fsspec)."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint,
                            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                            region_name=CREDENTIALS["AWS_DEFAULT_REGION"])

    def stop(self, grace: float = 10) -> None:
        """SIGTERM the server's process group, SIGKILL it after ``grace`` seconds."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def start_moto(log: Path | None = None, timeout: float = 60) -> MotoServer:
    """Start a moto server on a free loopback port and wait until it accepts connections.

    Its output goes to ``log`` (discarded when None); raises ``RuntimeError`` with the
    log when it exits or does not listen within ``timeout`` seconds.
    """
    port = free_port()
    with open(log if log is not None else os.devnull, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = MotoServer(proc, port, log)
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop(grace=1)
                text = log.read_text() if log is not None and log.exists() else ""
                raise RuntimeError(f"moto server did not start: {text}") from None
            time.sleep(0.1)


@contextlib.contextmanager
def environment(server: MotoServer) -> Iterator[None]:
    """This process's environment (and fsspec's config) pointed at ``server``; restored
    on exit. Spawned workers and subprocesses inherit it."""
    env = server.env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import fsspec.config

    # fsspec read FSSPEC_* when it was imported, perhaps before this was entered
    fsspec.config.conf.setdefault("s3", {})["endpoint_url"] = server.endpoint
    try:
        yield
    finally:
        fsspec.config.conf.get("s3", {}).pop("endpoint_url", None)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def moto_server(log: Path | None = None) -> Iterator[MotoServer]:
    """A moto server for the block, this process's environment pointed at it."""
    server = start_moto(log)
    try:
        with environment(server):
            yield server
    finally:
        server.stop()
