"""The process pool's workers put what they write to a URL output at once.

A unit on a pool worker writes into the step's local copy; only the area its chain
carries (``WorkerChain.area``) makes each file go up to the URL
(:mod:`curator.io.shared`). A pool that dropped it left the shards and the
per-partition rejections on the local copy, which the run then removed: the report
listed a shard the bucket never got. Ingest S3 to S3 on two pool workers, against the
moto server of the conftest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.steps.ingest import IngestConfig, run_ingest
from executors import make_executor
from tests.flow._support import demo_corpus
from tests.storage.conftest import s3_objects, upload_dir

pytestmark = pytest.mark.timeout(300)


def test_ingest_on_the_pool_publishes_every_file_its_workers_wrote(
        s3_server: str, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURATE_OUTPUT_COPY_DIR", str(tmp_path / "copies"))
    raw = demo_corpus(tmp_path / "raw", docs=60)
    upload_dir(s3_server, raw, bucket, "raw")
    config = IngestConfig(input=f"s3://{bucket}/raw", output_dir=f"s3://{bucket}/out",
                          on_duplicate="drop", partition_size="4KB",
                          execution={"executor": "local", "workers": 2,
                                     "checkpoint_path": str(tmp_path / "ckpt")})
    with make_executor("local", 2, None) as executor:
        report = run_ingest(config, executor)
    objects = s3_objects(s3_server, bucket, "out")
    shards = [s["name"] for s in report["shards"]]
    assert shards and all(name in objects for name in shards)
    assert sum(len(objects[n].splitlines()) for n in shards) == report["documents_accepted"]
    published = json.loads(objects[".curate-published-ingest.json"])["files"]
    assert set(shards) <= set(published)
    rejected = [n for n in objects
                if n.startswith("rejected/") and n != "rejected/duplicates.jsonl"]
    assert rejected  # each parse partition's rejections, written by a worker
