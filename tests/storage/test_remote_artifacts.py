"""A step flow whose ``output_dir`` is on a bucket publishes its report as Prefect
artifacts, as for a local output: ``ingest_flow`` run for real against the session's
Prefect API server (``prefect_api``) and the moto S3 server (``s3_server``), the
artifacts read back through the Prefect client. Nothing is patched."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from typing import Any
from uuid import UUID

import pytest

from curator.errors import CuratorError
from tests.prefect_support import table_rows
from tests.storage.conftest import s3_objects

pytestmark = pytest.mark.timeout(300)


async def _artifacts(flow_run_id: UUID) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async with get_client() as client:
        return await client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))


def _by_key(state: Any) -> dict[str, Any]:
    arts = asyncio.run(_artifacts(state.state_details.flow_run_id))
    return {a.key: a for a in arts if a.key}


def _put_corpus(endpoint: str, bucket: str) -> None:
    """Three objects, 60 documents, one unparsable line and one duplicate id."""
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint)
    for f in range(3):
        lines = [json.dumps({"text": f"file {f} doc {d}", "url": f"u/{f}/{d}"})
                 for d in range(20)]
        if f == 1:
            lines += ['{"text": "cut', json.dumps({"text": "file 0 doc 3", "url": "u/0/3"})]
        client.put_object(Bucket=bucket, Key=f"raw/in-{f}.jsonl",
                          Body=("\n".join(lines) + "\n").encode())


def test_a_step_flow_on_a_bucket_publishes_its_report_and_tables(
        s3_server: str, bucket: str, prefect_api: str, tmp_path: Any) -> None:
    from flows.steps import ingest_flow

    _put_corpus(s3_server, bucket)
    out = f"s3://{bucket}/ingested"
    config: dict[str, Any] = {
        "input": f"s3://{bucket}/raw", "output_dir": out, "on_duplicate": "drop",
        "shard_size": 25,
        "execution": {"executor": "inline", "checkpoint_path": str(tmp_path / "ckpt")}}

    state = ingest_flow(config, return_state=True)
    assert state.is_completed(), state
    report = state.result()
    assert report["documents_seen"] == 62 and report["documents_accepted"] == 60
    assert json.loads(s3_objects(s3_server, bucket, "ingested/")["ingest_report.json"]) \
        == report  # the report the artifacts are made of is the published object
    arts = _by_key(state)
    md = arts["ingest-report"]
    assert md.type == "markdown"
    assert "# Ingest report (complete)" in md.data
    assert "documents seen: 62, accepted: 60, rejected: 2" in md.data
    assert f"- output: `{out}`" in md.data  # the bucket's URL, not the local copy
    assert md.description == "curate/ingest: ingest_report.json"
    rows = table_rows(arts["ingest-rejections"])
    assert {r["reason"]: r["documents"] for r in rows} == {
        "duplicate_id": 1, "unparsable_line": 1}

    # a refused run writes nothing: the report on the bucket is the earlier run's, and
    # is not published again as this run's (its producer.started_at is before it began;
    # to the second: flows.steps.written_since, so the next run begins a second later)
    began = datetime.fromisoformat(report["producer"]["started_at"]).timestamp()
    while time.time() < began + 1:
        time.sleep(0.05)
    refused = ingest_flow({**config, "input": f"s3://{bucket}/absent/*.jsonl"},
                          return_state=True)
    assert refused.is_failed()
    with pytest.raises(CuratorError) as info:
        refused.result()
    assert info.value.error_id == "input_matched_no_files"
    assert json.loads(s3_objects(s3_server, bucket, "ingested/")["ingest_report.json"]) \
        == report
    assert _by_key(refused) == {}

    # a failed run publishes its failed report, from the bucket too
    state = ingest_flow({**config, "on_duplicate": "refuse"}, return_state=True)
    assert state.is_failed()
    failed = json.loads(s3_objects(s3_server, bucket, "ingested/")["ingest_report.json"])
    assert failed["error"]["error_id"] == "duplicate_documents"
    md = _by_key(state)["ingest-report"]
    assert "# Ingest report (FAILED)" in md.data and "`duplicate_documents`" in md.data
