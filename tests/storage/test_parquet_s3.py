"""``output_format: jsonl+parquet`` with the output on object storage (the local moto S3
server): the Parquet copy is published with the shards, its bytes are a local run's, and
the completion artifact lists it under the bucket's URL."""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest

from curator.steps.subset import SubsetConfig, run_subset
from curator_demo import generate_demo_corpus
from tests.steps._worlds import KEYS, ingested_world
from tests.storage.conftest import s3_objects, upload_dir

pytestmark = [pytest.mark.timeout(300)]
INLINE = {"executor": "inline"}


def test_the_subset_publishes_its_parquet_copy_with_the_bytes_of_a_local_run(
        s3_server: str, bucket: str, tmp_path: Path) -> None:
    generate_demo_corpus(tmp_path / "raw", docs=240, seed=7)
    ingested = ingested_world(tmp_path / "raw", tmp_path / "ingested")
    largest = max(p.stat().st_size for p in ingested.rglob("*") if p.is_file())
    keys = {**KEYS["subset"][0], "partition_size": largest, "output_format": "jsonl+parquet"}
    local = tmp_path / "subset"
    local_report = run_subset(SubsetConfig(**keys, input_glob=str(ingested),
                                           output_dir=str(local), execution=INLINE))
    upload_dir(s3_server, ingested, bucket, "ingested")
    url = f"s3://{bucket}/subset"
    report = run_subset(SubsetConfig(
        **keys, input_glob=f"s3://{bucket}/ingested", output_dir=url,
        execution={**INLINE, "checkpoint_path": str(tmp_path / "ckpt")}))

    assert report["parquet"] == local_report["parquet"]  # names relative: no paths differ
    objects = s3_objects(s3_server, bucket, "subset/")
    listed = {e["name"]: e for e in report["parquet"]["shards"]}
    assert listed and all(name.startswith("parquet/budget_") for name in listed)
    for name, entry in listed.items():
        assert objects[name] == (local / name).read_bytes(), name
        frame = pl.read_parquet(io.BytesIO(objects[name]))
        assert frame.height == entry["rows"]
        assert frame["id"].to_list() == [
            json.loads(line)["id"] for line in objects[entry["from"]].splitlines()]
    published = json.loads(objects["subset_report.json"])
    assert published["parquet"] == report["parquet"]
    assert not any(".tmp-" in k for k in objects)
