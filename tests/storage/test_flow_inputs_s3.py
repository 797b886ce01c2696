"""``curate flow`` with its corpus (and decontamination's holdout) on a bucket: a rerun
skips the finished steps, and a rewritten input object makes the steps that read it
run again. The flow runs without Prefect (``flows.direct``), its output_root local
(docs/storage.md), its input on the moto S3 server of the conftest; nothing patched."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from flows.direct import run_flow_direct
from tests.flow._support import read_json, statuses

pytestmark = pytest.mark.timeout(300)

WORDS = ("river", "stone", "quiet", "market", "engine", "window", "paper", "garden",
         "signal", "harbor", "winter", "copper", "lantern", "meadow", "circuit", "valley",
         "orchard", "bridge", "canvas", "thunder")


def _doc(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _corpus() -> tuple[dict[str, bytes], str]:
    """Three objects of 20 documents, and the text of one of them (the holdout's)."""
    rng = random.Random(5)
    objects = {}
    for f in range(3):
        rows = [{"text": f"doc {f}-{d} " + _doc(rng, 40), "url": f"u/{f}/{d}"}
                for d in range(20)]
        objects[f"raw/part-{f}.jsonl"] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    held = json.loads(objects["raw/part-2.jsonl"].splitlines()[4])["text"]
    return objects, held


def _put(endpoint: str, bucket: str, key: str, body: bytes) -> None:
    import boto3

    boto3.client("s3", endpoint_url=endpoint).put_object(Bucket=bucket, Key=key, Body=body)


def _texts(root: Path, step: str) -> list[str]:
    return [json.loads(line)["text"] for p in sorted((root / step).glob("part_*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()]


def test_a_changed_input_object_reruns_the_steps_that_read_it(
        s3_server: str, bucket: str, tmp_path: Path) -> None:
    objects, held = _corpus()
    for key, body in objects.items():
        _put(s3_server, bucket, key, body)
    _put(s3_server, bucket, "holdout/held.jsonl",
         (json.dumps({"text": held, "url": "held/0", "id": "h0"}) + "\n").encode())
    root = tmp_path / "out"
    config: dict[str, Any] = {
        "corpus": {"input": f"s3://{bucket}/raw", "metadata_fields": ["url"]},
        "output_root": str(root),
        "steps": {"ingest": {"enabled": True, "shard_size": 100},
                  "decontamination": {"enabled": True,
                                      "holdout": f"s3://{bucket}/holdout/held.jsonl"}},
        "execution": {"executor": "inline"},
    }
    ingest, decon = "curate/ingest", "curate/decontamination"

    def run() -> dict[str, str]:
        done = statuses(run_flow_direct(config))
        return {k: v for k, v in done.items() if k in (ingest, decon)}

    assert run() == {ingest: "ok", decon: "ok"}
    assert held in _texts(root, "ingested") and held not in _texts(root, "decontaminated")
    assert len(_texts(root, "decontaminated")) == 59
    assert run() == {ingest: "skipped", decon: "skipped"}

    # one input object rewritten by another writer, same size, one document changed
    old = objects["raw/part-1.jsonl"]
    new = old.replace(b"doc 1-7 ", b"doc 1-X ", 1)
    assert new != old and len(new) == len(old)
    _put(s3_server, bucket, "raw/part-1.jsonl", new)
    assert run() == {ingest: "ok", decon: "ok"}  # both read it (decon through ingest)
    texts = _texts(root, "decontaminated")
    assert any(t.startswith("doc 1-X ") for t in texts)
    assert not any(t.startswith("doc 1-7 ") for t in texts)
    assert run() == {ingest: "skipped", decon: "skipped"}

    # the holdout object rewritten: only decontamination reads it
    other = json.loads(objects["raw/part-0.jsonl"].splitlines()[2])["text"]
    _put(s3_server, bucket, "holdout/held.jsonl",
         (json.dumps({"text": other, "url": "held/0", "id": "h0"}) + "\n").encode())
    assert run() == {ingest: "skipped", decon: "ok"}
    texts = _texts(root, "decontaminated")
    assert held in texts and other not in texts and len(texts) == 59
    assert run() == {ingest: "skipped", decon: "skipped"}
    assert read_json(root / "flow_report.json")["status"] == "ok"
