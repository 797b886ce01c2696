"""Ingest from S3 to S3, interrupted, resumes from its local checkpoint and local copy
and publishes exactly the bytes of an uninterrupted run; an interrupted run never leaves
a completion artifact on the bucket.

In the default suite the run is interrupted in-process (a ``KeyboardInterrupt`` from
its progress hook in the shard phase, as a Ctrl-C lands). The SIGKILL variant (a real
``curate ingest`` process group killed in the parse phase, then in the shard phase; about
100 s on the shared 2-core machine) runs with ``CURATE_STORAGE_FULL=1``.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.io import storage
from curator.pipeline import Progress
from curator.steps.ingest import IngestConfig, IngestRun, run_ingest
from tests.ingest._support import Cli, write_config
from tests.storage.conftest import s3_objects, upload_dir

pytestmark = [pytest.mark.timeout(300)]
FULL = pytest.mark.skipif(not os.environ.get("CURATE_STORAGE_FULL"),
                          reason="the SIGKILL variant (about 100 s): CURATE_STORAGE_FULL=1")

KEYS = {"on_duplicate": "drop", "partition_size": "16KB", "shard_size": 40,
        "keep_fields": ["url", "n"]}


def make_corpus(folder: Path, files: int = 24, lines: int = 120) -> None:
    """Small JSONL files (one partition each) with bad lines and duplicates."""
    rnd = random.Random(16)
    words = ["alpha", "beta", "gamma", "delta", "caf\u00e9", "omega", "sigma", "tau"]
    folder.mkdir(parents=True)
    for f in range(files):
        out = []
        for n in range(lines):
            if n % 37 == 3:
                out.append('{"text": "cut off')
            else:
                url = f"https://site/{n}" if n % 29 == 0 else f"https://site/{f}/{n}"
                text = "dup" if n % 29 == 0 else " ".join(rnd.choice(words) for _ in range(30))
                out.append(json.dumps({"text": text, "url": url, "n": n}))
        (folder / f"shard-{f:02d}.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")


def _data(objects: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in objects.items() if not k.endswith(".json")}


def test_interrupted_run_resumes_and_publishes_the_same_bytes(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    make_corpus(tmp_path / "raw", files=8, lines=80)
    upload_dir(s3_server, tmp_path / "raw", bucket, "raw")
    cfg = {**KEYS, "shard_size": 20, "input": f"s3://{bucket}/raw"}
    ref = run_ingest(IngestConfig(**cfg, output_dir=f"s3://{bucket}/ref",
                                  execution={"executor": "inline"}))
    url, ckpt = f"s3://{bucket}/out", tmp_path / "ckpt"
    config = IngestConfig(**cfg, output_dir=url,
                          execution={"executor": "inline", "checkpoint_path": str(ckpt)})

    def interrupt(phase: str, progress: Progress) -> None:
        if phase == "shards" and progress.done >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        IngestRun(config, on_progress=interrupt).run()
    copy = storage.local_copy_dir(url, str(ckpt), "ingest")
    assert len(list(copy.glob("part_*.jsonl"))) >= 3  # written locally, kept for the resume
    # the interrupted run published its failed report (with the error), not its data
    objects = s3_objects(s3_server, bucket, "out/")
    assert json.loads(objects["ingest_report.json"])["completed_normally"] is False
    assert json.loads(objects["ingest_report.json"])["error"]["error_id"] == "interrupted_sigint"

    report = run_ingest(config)
    objects = s3_objects(s3_server, bucket, "out/")
    expected = _data(s3_objects(s3_server, bucket, "ref/"))
    assert _data(objects) == expected and len([k for k in expected if "part_" in k]) > 3
    assert report["was_resumed"] is True and report["partitions"]["skipped_resumed"] >= 3
    assert report["counts"] == ref["counts"] and report["shards"] == ref["shards"]
    assert json.loads(objects["ingest_report.json"])["completed_normally"] is True
    assert not copy.exists()


@FULL
def test_sigkill_twice_then_resume_publishes_the_same_bytes(
        tmp_path: Path, s3_server: str, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURATE_PREFECT", "never")
    make_corpus(tmp_path / "raw")
    upload_dir(s3_server, tmp_path / "raw", bucket, "raw")
    source = f"s3://{bucket}/raw"
    ref = run_ingest(IngestConfig(**KEYS, input=source, output_dir=f"s3://{bucket}/ref",
                                  execution={"executor": "inline"}))
    total = ref["partitions"]["parse"]
    assert total == 24 and len(ref["shards"]) >= 10

    url, ckpt = f"s3://{bucket}/out", tmp_path / "ckpt"
    copy = storage.local_copy_dir(url, str(ckpt), "ingest")
    cfg = write_config(tmp_path / "ingest.yaml", {
        "input": source, "output_dir": url, **KEYS,
        "execution": {"executor": "local", "workers": 2, "checkpoint_path": str(ckpt)}})

    def staged() -> int:
        return len([p for p in (copy / ".staging").glob("*.parquet")
                    if not p.name.startswith("_")])

    # 1. killed while parsing: partitions staged (on the disk and, as written, on the
    # bucket's hidden work area), nothing a reader would take
    with Cli(cfg, tmp_path / "logs", "killed-parse") as cli:
        cli.kill_when(lambda: staged() >= 3, "three staged partitions", timeout=120)
    assert 3 <= staged() < total, "not cut midway"
    objects = s3_objects(s3_server, bucket, "out/")  # staged work, parse rejections
    assert not [k for k in objects if k.startswith("part_") or k == "ingest_report.json"]
    assert list((ckpt / "ingest" / "parse").glob("*/*.mdb"))

    # 2. the rerun resumes the parse and is killed writing shards: no completion artifact
    with Cli(cfg, tmp_path / "logs", "killed-shards") as cli:
        cli.kill_when(lambda: len(list(copy.glob("part_*.jsonl"))) >= 2, "two shards",
                      timeout=120)
    assert staged() == total
    assert "ingest_report.json" not in s3_objects(s3_server, bucket, "out/")

    # 3. the third run finishes and publishes the bytes of the uninterrupted run
    with Cli(cfg, tmp_path / "logs", "resumed") as cli:
        assert cli.wait(180) == 0, cli.stderr()[-3000:]
    objects = s3_objects(s3_server, bucket, "out/")
    expected = _data(s3_objects(s3_server, bucket, "ref/"))
    assert _data(objects) == expected and any(k.startswith("part_") for k in expected)
    report = json.loads(objects["ingest_report.json"])
    assert report["completed_normally"] and report["was_resumed"] is True
    assert report["partitions"]["skipped_resumed"] >= total
    assert report["counts"] == ref["counts"] and report["shards"] == ref["shards"]
    assert report["output_dir"] == url
    assert not copy.exists() and not (ckpt / "ingest").exists()  # published: gone


def test_a_fresh_run_removes_what_the_last_one_published(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """A new configuration (fewer, larger shards) leaves no shard of the old one behind;
    files on the bucket that no run published are left alone."""
    make_corpus(tmp_path / "raw", files=4, lines=60)
    upload_dir(s3_server, tmp_path / "raw", bucket, "raw")
    url = f"s3://{bucket}/out"
    storage.write_bytes(f"{url}/README.txt", b"not ours")
    cfg = {**KEYS, "input": f"s3://{bucket}/raw", "output_dir": url}
    first = run_ingest(IngestConfig(**cfg, execution={"executor": "inline"}))
    second = run_ingest(IngestConfig(**{**cfg, "shard_size": 1000},
                                     execution={"executor": "inline"}))
    assert len(first["shards"]) > 1 and len(second["shards"]) == 1
    objects = s3_objects(s3_server, bucket, "out/")
    assert sorted(k for k in objects if k.startswith("part_")) == ["part_0.jsonl"]
    assert objects["README.txt"] == b"not ours"
    published = json.loads(objects[".curate-published-ingest.json"])["files"]
    assert published[-1] == "ingest_report.json" and "README.txt" not in published


def test_an_unreachable_output_bucket_fails_before_any_work(
        tmp_path: Path, s3_server: str, bucket: str) -> None:
    """The output bucket does not exist yet: every file goes up as it is written
    (curator.io.shared), so the run fails at its first write, object_storage_error naming
    the URL, before any partition runs and with no report; once the bucket exists the
    rerun runs and publishes."""
    import boto3

    make_corpus(tmp_path / "raw", files=3, lines=40)
    upload_dir(s3_server, tmp_path / "raw", bucket, "raw")
    missing = f"{bucket}-later"
    url, ckpt = f"s3://{missing}/out", tmp_path / "ckpt"
    config = IngestConfig(**KEYS, input=f"s3://{bucket}/raw", output_dir=url,
                          execution={"executor": "inline", "checkpoint_path": str(ckpt)})
    with pytest.raises(CuratorError) as err:
        run_ingest(config)
    assert err.value.error_id == "object_storage_error" and url in err.value.message
    copy = storage.local_copy_dir(url, str(ckpt), "ingest")
    assert not (copy / "ingest_report.json").exists() and not list(copy.glob("part_*"))

    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=missing)
    report = run_ingest(config)
    assert report["producer"]["completed_at"]
    objects = s3_objects(s3_server, missing, "out/")
    assert json.loads(objects["ingest_report.json"])["producer"]["completed_at"]
    assert len([k for k in objects if k.startswith("part_")]) == len(report["shards"])
    assert not any(k.startswith((".staging", ".curate-run")) for k in objects)
    assert not copy.exists()
