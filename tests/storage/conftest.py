"""One real S3-speaking server for the session: moto in server mode, as a subprocess.

Nothing is patched: the code under test talks HTTP to ``moto.server`` on a free
loopback port through s3fs/botocore, as it would to S3. The endpoint and the fake
credentials reach every process (pool workers, Ray workers, CLI subprocesses) through
fsspec's and botocore's usual environment variables (``docs/storage.md``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from curator_testing.moto import moto_server

pytest.importorskip("moto", reason="moto[server] (the test extra) runs the local S3 server")
pytest.importorskip("s3fs", reason="s3fs reads and writes s3:// URLs")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The endpoint URL of a moto S3 server that lives for the whole session."""
    with moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server.endpoint


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
