"""One real S3-speaking server for the session: moto in server mode, as a subprocess.

Nothing is patched: the code under test talks HTTP to ``moto.server`` on a free
loopback port through s3fs/botocore, as it would to S3. The endpoint and the fake
credentials reach every process (pool workers, Ray workers, CLI subprocesses) through
fsspec's and botocore's usual environment variables (``docs/storage.md``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("moto", reason="moto[server] (the test extra) runs the local S3 server")
pytest.importorskip("s3fs", reason="s3fs reads and writes s3:// URLs")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The endpoint URL of a moto S3 server that lives for the whole session."""
    port = _free_port()
    logs = tmp_path_factory.mktemp("moto")
    with open(logs / "moto.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"moto server did not start: {(logs / 'moto.log').read_text()}"
                    ) from None
                time.sleep(0.1)
        env = {
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
            "FSSPEC_S3_ENDPOINT_URL": endpoint,
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # spawned workers and subprocesses inherit it
        import fsspec.config

        # fsspec read FSSPEC_* when it was imported, perhaps before this fixture
        fsspec.config.conf.setdefault("s3", {})["endpoint_url"] = endpoint
        try:
            yield endpoint
        finally:
            fsspec.config.conf.get("s3", {}).pop("endpoint_url", None)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def bucket(s3_server: str) -> str:
    """A fresh, empty bucket on the session's server; its name."""
    import boto3

    name = f"t-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=name)
    return name


def s3_objects(endpoint: str, bucket: str, prefix: str = "") -> dict[str, bytes]:
    """Every object under ``prefix`` and its bytes, read with boto3 (not through fsspec)."""
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint)
    out: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            out[key[len(prefix):].lstrip("/")] = client.get_object(
                Bucket=bucket, Key=key)["Body"].read()
    return out


def upload_dir(endpoint: str, local: Path, bucket: str, prefix: str) -> None:
    """Every file under ``local`` to ``s3://bucket/prefix/...`` with boto3."""
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(local).as_posix()}",
                          Body=path.read_bytes())
