"""Ingest reads its input from, and writes its output to, a real local S3 server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.ingest.report import render
from curator.io import storage
from curator.models import IngestReport
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo import generate_demo_corpus
from tests.steps._worlds import KEYS, data_files
from tests.storage.conftest import s3_objects, upload_dir

INGEST = KEYS["ingest"][0]


def _data(objects: dict[str, bytes]) -> dict[str, bytes]:
    """What data_files keeps of a local output, of the objects of a remote one."""
    return {k: v for k, v in objects.items()
            if not k.endswith((".json", ".png"))
            and not any(p.startswith(".") for p in k.split("/"))}


def _same_corpus(remote: dict[str, bytes], local: dict[str, bytes], raw_url: str,
                 raw: Path) -> None:
    """The same shards, byte for byte, and the same rejections (a local file larger than
    partition_size is split into byte ranges, an object never is: the rejections are
    spread over other files, and name the object's URL)."""
    def shards(d: dict[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in d.items() if k.startswith("part_")}

    def rejections(d: dict[str, bytes], prefix: str) -> list[bytes]:
        return sorted(line.replace(prefix.encode(), b"RAW")
                      for k, v in d.items() if k.startswith("rejected/")
                      for line in v.splitlines())

    assert shards(remote) == shards(local) and shards(local)
    assert rejections(remote, raw_url) == rejections(local, str(raw))
    assert rejections(local, str(raw))


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("raw") / "raw"
    generate_demo_corpus(folder, docs=240, seed=7)
    return folder


@pytest.fixture(scope="module")
def local_ingest(raw: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local") / "ingested"
    run_ingest(IngestConfig(**INGEST, input=str(raw), output_dir=str(out),
                            execution={"executor": "inline"}))
    return out


def test_ingest_s3_to_s3_writes_the_bytes_of_a_local_run(
        raw: Path, local_ingest: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    upload_dir(s3_server, raw, bucket, "raw")
    ckpt = tmp_path / "ckpt"
    report = run_ingest(IngestConfig(
        **INGEST, input=f"s3://{bucket}/raw", output_dir=f"s3://{bucket}/ingested",
        execution={"executor": "inline", "checkpoint_path": str(ckpt)}))
    assert report["completed_normally"] and report["producer"]["completed_at"]
    assert report["output_dir"] == f"s3://{bucket}/ingested"
    # the line the CLI prints names the report's URL (not "s3:/..." as a path would)
    summary = render(IngestReport.model_validate(report)).summary
    assert f"report s3://{bucket}/ingested/ingest_report.json" in summary
    objects = s3_objects(s3_server, bucket, "ingested/")
    _same_corpus(_data(objects), data_files(local_ingest), f"s3://{bucket}/raw", raw)
    remote_report = json.loads(objects["ingest_report.json"])
    assert remote_report["counts"] == json.loads(
        (local_ingest / "ingest_report.json").read_text())["counts"]
    assert remote_report["input"]["files"] > 1
    # the local copy and the checkpoint went once published; nothing hidden was put
    assert not [p for p in ckpt.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    assert sorted(k for k in objects if k.startswith(".")) == [".curate-published-ingest.json"]


def test_a_new_driver_with_an_empty_disk_resumes_from_the_url_checkpoint(
        raw: Path, s3_server: str, bucket: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``checkpoint_path`` on the bucket: ingest S3 to S3 interrupted in its shard phase,
    then run again by a "driver" whose scratch directories (the checkpoint's local copy,
    the output's local copy) are new and empty: it restores the completions from the
    checkpoint's mirror and the work files from the output's URL, redoes no parse
    partition, and writes the bytes of an uninterrupted run. The completed run leaves no
    checkpoint object behind."""
    from curator.pipeline import Progress
    from curator.steps.ingest import IngestRun

    upload_dir(s3_server, raw, bucket, "raw")
    cfg = {**INGEST, "input": f"s3://{bucket}/raw", "shard_size": 40}
    ref = run_ingest(IngestConfig(**cfg, output_dir=f"s3://{bucket}/ref",
                                  execution={"executor": "inline"}))
    config = IngestConfig(**cfg, output_dir=f"s3://{bucket}/out", execution={
        "executor": "inline", "checkpoint_path": f"s3://{bucket}/ckpt"})

    def interrupt(phase: str, progress: Progress) -> None:
        if phase == "shards" and progress.done >= 1:
            raise KeyboardInterrupt

    for name, first in (("a", True), ("b", False)):  # a fresh disk for each driver
        monkeypatch.setenv("CURATE_SCRATCH_DIR", str(tmp_path / name / "ckpt"))
        monkeypatch.setenv(storage.COPY_DIR_ENV, str(tmp_path / name / "copy"))
        if first:
            with pytest.raises(KeyboardInterrupt):
                IngestRun(config, on_progress=interrupt).run()
            assert any(k.endswith(".mdb") for k in s3_objects(s3_server, bucket, "ckpt/"))
        else:
            report = run_ingest(config)
    assert report["was_resumed"] is True
    assert report["partitions"]["skipped_resumed"] >= report["partitions"]["parse"]
    objects, expected = s3_objects(s3_server, bucket, "out/"), s3_objects(s3_server, bucket,
                                                                         "ref/")
    shards = sorted(k for k in expected if k.startswith("part_"))
    assert shards and all(objects[k] == expected[k] for k in shards)
    assert [s["sha256"] for s in report["shards"]] == [s["sha256"] for s in ref["shards"]]
    assert s3_objects(s3_server, bucket, "ckpt/") == {}  # nothing left of the checkpoint


def test_ingest_reads_parquet_and_gzip_objects(s3_server: str, bucket: str,
                                               tmp_path: Path) -> None:
    """Parquet objects (read through a seekable fsspec file) and .jsonl.gz objects give
    the shards a local run gives."""
    import gzip

    import polars as pl

    rows = [{"text": f"document number {i} " * 5, "url": f"https://s/{i}"} for i in range(90)]
    pq_dir, gz_dir = tmp_path / "pq", tmp_path / "gz"
    pq_dir.mkdir()
    gz_dir.mkdir()
    for f in range(3):
        part = rows[f * 30:(f + 1) * 30]
        pl.DataFrame(part).write_parquet(pq_dir / f"p{f}.parquet")
        (gz_dir / f"g{f}.jsonl.gz").write_bytes(gzip.compress(
            "".join(json.dumps(r) + "\n" for r in part).encode()))
    for name, folder in (("pq", pq_dir), ("gz", gz_dir)):
        upload_dir(s3_server, folder, bucket, name)
        local = run_ingest(IngestConfig(input=str(folder), output_dir=str(tmp_path / f"o-{name}"),
                                        execution={"executor": "inline"}))
        remote = run_ingest(IngestConfig(input=f"s3://{bucket}/{name}",
                                         output_dir=f"s3://{bucket}/o-{name}",
                                         execution={"executor": "inline"}))
        assert remote["counts"] == local["counts"] and remote["counts"]["written"] == 90
        assert remote["shards"] == local["shards"]
        assert remote["input"]["format"] == local["input"]["format"]
        objects = s3_objects(s3_server, bucket, f"o-{name}/")
        assert objects["part_0.jsonl"] == (tmp_path / f"o-{name}" / "part_0.jsonl").read_bytes()
    assert sorted(remote["columns_available"]) == sorted(local["columns_available"])
