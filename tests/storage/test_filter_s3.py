"""The filter reads an ingested corpus from, and writes its output to, a local S3 server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.steps.filter import FilterConfig, run_filter
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo import generate_demo_corpus
from tests.steps._worlds import KEYS, data_files
from tests.storage.conftest import s3_objects, upload_dir

FILTER = KEYS["filter"][0]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ingested")
    generate_demo_corpus(folder / "raw", docs=240, seed=7)
    run_ingest(IngestConfig(**KEYS["ingest"][0], input=str(folder / "raw"),
                            output_dir=str(folder / "out"), execution={"executor": "inline"}))
    return folder / "out"


def _kept(files: dict[str, bytes]) -> bytes:
    names = sorted((k for k in files if k.startswith("part_") and k.endswith(".jsonl")),
                   key=lambda k: int(k[len("part_"):-len(".jsonl")]))
    return b"".join(files[k] for k in names)


def _rejected(files: dict[str, bytes], input_prefix: str) -> list[bytes]:
    return sorted(line.replace(input_prefix.encode(), b"IN")
                  for k, v in files.items() if k.startswith("rejected/")
                  for line in v.splitlines())


def test_filter_s3_to_s3_writes_the_bytes_of_a_local_run(
        ingested: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    local = tmp_path / "filtered"
    run_filter(FilterConfig(**FILTER, input_glob=str(ingested / "part_*.jsonl"),
                            output_dir=str(local), execution={"executor": "inline"}))
    upload_dir(s3_server, ingested, bucket, "ingested")
    url = f"s3://{bucket}/filtered"
    manifest = run_filter(FilterConfig(
        **FILTER, input_glob=f"s3://{bucket}/ingested/part_*.jsonl", output_dir=url,
        execution={"executor": "local", "workers": 2,
                   "checkpoint_path": str(tmp_path / "ckpt")}))
    assert manifest["producer"]["completed_at"] and manifest["producer"]["output_dir"] == url
    objects = s3_objects(s3_server, bucket, "filtered/")
    # a local file larger than partition_size is split into byte ranges, an object
    # never is: the same records, in the same order, over fewer shards
    assert _kept(objects) == _kept(data_files(local)) and _kept(objects)
    assert (_rejected(objects, f"s3://{bucket}/ingested")
            == _rejected(data_files(local), str(ingested)))
    local_manifest = json.loads((local / "run_manifest.json").read_text())
    remote_manifest = json.loads(objects["run_manifest.json"])
    assert remote_manifest["producer"]["completed_at"]
    for key in ("n_input", "n_kept"):
        if key in local_manifest:
            assert remote_manifest[key] == local_manifest[key]
    assert str(tmp_path / "ckpt") not in objects["run_manifest.json"].decode()
