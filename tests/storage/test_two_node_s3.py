"""A two-node Ray cluster (head + one worker node) runs ingest from and to the local S3
server: the bucket ends with the bytes an inline run publishes. With
``CURATE_STORAGE_FULL=1`` the filter runs next on the cluster, reading the ingested
shards from the bucket (about 20 s more; the filter on S3 is tested on the process pool
in the default suite)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from curator.steps.filter import FilterConfig, run_filter
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo import generate_demo_corpus
from tests.integration._support import Proc, ray_env, rmtree_quiet, short_tmp
from tests.steps._worlds import KEYS
from tests.storage.conftest import s3_objects, upload_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
SCRIPT = Path(__file__).resolve().parent / "scripts" / "two_node_s3.py"


def _data(objects: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in objects.items() if not k.endswith((".json", ".png"))}


def test_two_node_ray_cluster_writes_to_s3(tmp_path: Path, s3_server: str, bucket: str
                                           ) -> None:
    generate_demo_corpus(tmp_path / "raw", docs=240, seed=7)
    upload_dir(s3_server, tmp_path / "raw", bucket, "raw")
    ingest_keys, filter_keys = KEYS["ingest"][0], KEYS["filter"][0]
    # the reference: the same steps inline, from the same objects, to another prefix
    run_ingest(IngestConfig(**ingest_keys, input=f"s3://{bucket}/raw",
                            output_dir=f"s3://{bucket}/ref/ingested",
                            execution={"executor": "inline"}))
    full = bool(os.environ.get("CURATE_STORAGE_FULL"))
    steps = (("ingest", "ingested"), ("filter", "filtered")) if full else (
        ("ingest", "ingested"),)
    if full:
        run_filter(FilterConfig(**filter_keys,
                                input_glob=f"s3://{bucket}/ref/ingested/part_*.jsonl",
                                output_dir=f"s3://{bucket}/ref/filtered",
                                execution={"executor": "inline"}))

    ray_tmp = short_tmp()
    try:
        argv = [sys.executable, str(SCRIPT), "--input", f"s3://{bucket}/raw",
                "--output", f"s3://{bucket}/ray", "--checkpoint", str(tmp_path / "ckpt"),
                "--ray-tmp", str(ray_tmp), "--ingest", json.dumps(ingest_keys),
                *(["--filter", json.dumps(filter_keys)] if full else [])]
        with Proc(argv, tmp_path / "logs", "two-node", env=ray_env(ray_tmp)) as proc:
            code = proc.wait(240)
            assert code == 0, proc.stderr()[-5000:]
            summary = json.loads(proc.stdout().strip().splitlines()[-1])
    finally:
        rmtree_quiet(ray_tmp)

    assert len(set(summary["nodes"])) == 2
    assert sorted(k for k in summary if k != "nodes") == sorted(s for s, _ in steps)
    for step, folder in steps:
        producer = summary[step]
        assert producer["execution"]["executor"] == "ray" and producer["completed_at"]
        assert producer["output_dir"] == f"s3://{bucket}/ray/{folder}"
        got = s3_objects(s3_server, bucket, f"ray/{folder}/")
        # the filter's rejections name the shard they came from, under ref/ or ray/
        want = {k: v.replace(f"s3://{bucket}/ref/".encode(), f"s3://{bucket}/ray/".encode())
                for k, v in s3_objects(s3_server, bucket, f"ref/{folder}/").items()}
        assert _data(got) == _data(want) and any(k.startswith("part_") for k in want), folder
        assert sorted(got) == sorted(want)
