"""profile, decontamination, subset and audit read from, and publish to, a local S3
server (moto, started by the conftest; nothing patched), and write what a local run on
the same input writes.

The data files (shards, rejections, tiers, plan, sample manifest, candidate policy) are
compared byte for byte; the reports, which name their paths and times, are compared
with the paths mapped (the local input folder to its URL) and the producer block and
timings left out. Each run goes S3 to S3, with its checkpoint on the local disk.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator.io import storage
from curator.pipeline import Progress
from curator.steps.audit import AuditConfig, run_audit
from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from curator.steps.profile import ProfileConfig, run_profile
from curator.steps.subset import SubsetConfig, SubsetRun, run_subset
from curator_demo import generate_demo_corpus
from tests.steps._worlds import (
    KEYS,
    decontamination_world,
    filtered_world,
    ingested_world,
)
from tests.storage.conftest import s3_objects, upload_dir

pytestmark = [pytest.mark.timeout(300)]
INLINE = {"executor": "inline"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("world")
    generate_demo_corpus(folder / "raw", docs=240, seed=7)
    return folder


def _largest(folder: Path) -> int:
    """A ``partition_size`` no file of ``folder`` exceeds: a local file larger than it is
    split into byte ranges, an object never is; at this size both runs group the same
    files into the same partitions (and so the same shards)."""
    return max(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _visible(objects: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in objects.items()
            if not any(p.startswith(".") for p in k.split("/"))}


def _local(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not any(s.startswith(".") for s in p.relative_to(out).parts)}


def _text(data: bytes, pairs: list[tuple[str, str]]) -> str:
    text = data.decode()
    for local, url in pairs:
        text = text.replace(local, url)
    return text


def _mapped(data: bytes, pairs: list[tuple[str, str]]) -> Any:
    """A JSON report with its local paths mapped to URLs, without what says when and
    where it ran (producer, timings, the config digest of a config naming paths)."""
    body = json.loads(_text(data, pairs))
    for key in ("producer", "started_at", "completed_at", "config_hash", "seconds"):
        body.pop(key, None)
    holdout = body.get("splits", {}).get("holdout", {})
    for key in ("content_digest", "content_digest_after"):  # over the files' names too
        holdout.pop(key, None)
    return body


def _same(remote: dict[str, bytes], local: dict[str, bytes], reports: tuple[str, ...],
          pairs: list[tuple[str, str]], named: tuple[str, ...] = ()) -> None:
    """The same files; data byte for byte; ``reports`` (JSON) and the files that name
    the input (summaries, a policy, files under ``named`` folders: removals name the
    input file they came from) with the local paths mapped to the URLs."""
    assert sorted(remote) == sorted(local)
    for name in local:
        if name in reports:
            assert _mapped(remote[name], pairs) == _mapped(local[name], pairs), name
        elif name.endswith((".md", ".yaml")) or name.startswith(named):
            assert _text(remote[name], pairs) == _text(local[name], pairs), name
        elif not name.endswith(".png"):  # pictures: the same names (matplotlib metadata)
            assert remote[name] == local[name], name


def test_profile_s3_to_s3_writes_the_bytes_of_a_local_run(
        world: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    keys = {**KEYS["profile"][0], "signals": ["word_count", "stopword_ratio"]}  # fewer plots
    local = tmp_path / "profile"
    run_profile(ProfileConfig(**keys, input_glob=str(world / "raw"), output_dir=str(local),
                              execution=INLINE))
    upload_dir(s3_server, world / "raw", bucket, "raw")
    url = f"s3://{bucket}/profile"
    report = run_profile(ProfileConfig(
        **keys, input_glob=f"s3://{bucket}/raw", output_dir=url,
        execution={**INLINE, "checkpoint_path": str(tmp_path / "ckpt")}))
    assert report["producer"]["completed_at"] and report["producer"]["output_dir"] == url
    objects = s3_objects(s3_server, bucket, "profile/")
    pairs = [(str(world / "raw"), f"s3://{bucket}/raw"), (str(local), url)]
    # the profile's digest covers its report, which names its input: a folder, a URL
    mine = json.loads((local / "profile_report.json").read_text())["profile_digest"]
    pairs.append((mine, report["profile_digest"]))
    _same(_visible(objects), _local(local), ("profile_report.json",), pairs)
    assert {"candidate_policies.yaml", "sample_manifest.json"} <= set(objects)
    published = json.loads(objects[".curate-published-profile.json"])["files"]
    assert published[-1] == "profile_report.json"


def _decontaminated_locally_and_uploaded(world: Path, s3_server: str, bucket: str,
                                         tmp_path: Path, files: int = 3, docs: int = 150
                                         ) -> tuple[dict, Path, Path, Path]:
    """The decontamination world (``files`` shards of ``docs``) run locally (inline: the
    reference bytes) and its training and holdout files uploaded to ``train/`` and
    ``holdout/``: ``(keys, train, holdout, the local output)``."""
    train, holdout = decontamination_world(world / "decon", files=files, docs=docs)
    keys = {**KEYS["decontamination"][0], "partition_size": _largest(train)}
    local = tmp_path / "decon"
    run_decontamination(DecontaminationConfig(
        **keys, train_glob=str(train), holdout_glob=str(holdout), output_dir=str(local),
        execution=INLINE))
    upload_dir(s3_server, train, bucket, "train")
    upload_dir(s3_server, holdout, bucket, "holdout")
    return keys, train, holdout, local


def test_decontamination_s3_to_s3_writes_the_bytes_of_a_local_run(
        world: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    keys, train, holdout, local = _decontaminated_locally_and_uploaded(
        world, s3_server, bucket, tmp_path)
    url = f"s3://{bucket}/decon"
    report = run_decontamination(DecontaminationConfig(
        **keys, train_glob=f"s3://{bucket}/train", holdout_glob=f"s3://{bucket}/holdout",
        output_dir=url, execution={**INLINE, "checkpoint_path": str(tmp_path / "ckpt")}))
    assert report["producer"]["completed_at"]
    assert report["paths"]["removed_dir"] == f"{url}/removed"
    assert report["splits"]["holdout"]["modified"] is False
    objects = _visible(s3_objects(s3_server, bucket, "decon/"))
    assert any(k.startswith("removed/") for k in objects)  # the planted copies went
    pairs = [(str(train), f"s3://{bucket}/train"), (str(holdout), f"s3://{bucket}/holdout"),
             (str(local), url)]
    _same(objects, _local(local), ("decontamination_report.json",), pairs, ("removed/",))
    assert any(k.startswith("part_") for k in objects)


def test_subset_s3_to_s3_writes_the_bytes_of_a_local_run(
        world: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    ingested = ingested_world(world / "raw", world / "ingested")
    keys = {**KEYS["subset"][0], "partition_size": _largest(ingested)}
    local = tmp_path / "subset"
    run_subset(SubsetConfig(**keys, input_glob=str(ingested), output_dir=str(local),
                            execution=INLINE))
    upload_dir(s3_server, ingested, bucket, "ingested")
    url = f"s3://{bucket}/subset"
    report = run_subset(SubsetConfig(
        **keys, input_glob=f"s3://{bucket}/ingested", output_dir=url,
        execution={**INLINE, "checkpoint_path": str(tmp_path / "ckpt")}))
    assert report["producer"]["completed_at"] and report["nesting_verified"]
    assert [t["output"] for t in report["tiers"]] == [
        f"{url}/budget_{b}_words" for b in keys["token_budgets"]]
    objects = _visible(s3_objects(s3_server, bucket, "subset/"))
    assert any(k.startswith("budget_3000_words/part_") for k in objects)
    pairs = [(str(ingested), f"s3://{bucket}/ingested"), (str(local), url)]
    _same(objects, _local(local), ("subset_report.json", "plan.json"), pairs)


def test_audit_reads_a_filter_output_on_s3_as_a_local_one(
        world: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    """The filter's shards, manifest, ledger and rejections on the bucket, the reference
    corpus too: the same findings, counts and strengths as the local audit."""
    filtered = filtered_world(world / "raw", world / "filtered")
    upload_dir(s3_server, filtered, bucket, "filtered")
    upload_dir(s3_server, world / "raw", bucket, "raw")
    f, r = f"s3://{bucket}/filtered", f"s3://{bucket}/raw"

    def audit(target: str, raw: str, out: str, **execution: Any) -> dict[str, Any]:
        config = AuditConfig(
            target_glob=target, declared_manifest=f"{target}/run_manifest.json",
            ledger_glob=f"{target}/curation_ledger.json", reference_glob=raw,
            rejected_dir=f"{target}/rejected", digest_root=target, output_dir=out,
            id_field="url", mode="all", comparison_fields=["url", "text"],
            execution={**INLINE, **execution})
        try:
            return run_audit(config)
        except CuratorError as exc:  # findings: the complete report is written
            assert exc.error_id == "audit_findings", exc
            return {}

    local = tmp_path / "audit"
    audit(str(filtered), str(world / "raw"), str(local))
    url = f"s3://{bucket}/audit"
    audit(f, r, url, checkpoint_path=str(tmp_path / "ckpt"))
    objects = _visible(s3_objects(s3_server, bucket, "audit/"))
    pairs = [(str(filtered), f), (str(world / "raw"), r), (str(local), url)]
    _same(objects, _local(local), ("audit_report.json",), pairs)
    report = json.loads(objects["audit_report.json"])
    assert report["producer"]["completed_at"] and report["target"]["file_count"] > 0
    assert report["target"]["row_count"] > 0 and report["passed"] is True
    assert [s["level"] for s in report["strengths"] if s["made"]] == [1, 2, 3, 4]


def test_an_interrupted_subset_resumes_to_the_bytes_of_an_uninterrupted_run(
        world: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    """Interrupted in the write phase (a Ctrl-C from its progress hook): the failed
    report is published with its error and no completion; the rerun resumes its
    partitions from the local checkpoint and copy and publishes the same bytes."""
    ingested = ingested_world(world / "raw", world / "ingested")
    upload_dir(s3_server, ingested, bucket, "ingested")
    keys = {**KEYS["subset"][0], "partition_size": "8KB"}
    source = f"s3://{bucket}/ingested/part_*.jsonl"
    run_subset(SubsetConfig(**keys, input_glob=source, output_dir=f"s3://{bucket}/ref",
                            execution=INLINE))
    url, ckpt = f"s3://{bucket}/out", tmp_path / "ckpt"
    config = SubsetConfig(**keys, input_glob=source, output_dir=url,
                          execution={**INLINE, "checkpoint_path": str(ckpt)})

    def interrupt(phase: str, progress: Progress) -> None:
        if phase == "write" and progress.done >= 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SubsetRun(config, on_progress=interrupt).run()
    copy = storage.local_copy_dir(url, str(ckpt), "subset")
    assert (copy / "plan.json").is_file()  # kept on the local disk for the resume
    failed = json.loads(s3_objects(s3_server, bucket, "out/")["subset_report.json"])
    assert failed["error"]["error_id"] == "interrupted_sigint"
    assert "completed_at" not in failed["producer"]

    report = run_subset(config)
    assert report["producer"]["resumed_partitions"] >= 1
    objects = _visible(s3_objects(s3_server, bucket, "out/"))
    expected = _visible(s3_objects(s3_server, bucket, "ref/"))
    pairs = [(f"s3://{bucket}/out", f"s3://{bucket}/ref")]
    _same(objects, expected, ("subset_report.json", "plan.json"), pairs)
    assert sum(k.startswith("budget_") for k in objects) >= 2
    assert not copy.exists()


@pytest.mark.skipif(not os.environ.get("CURATE_STORAGE_FULL"),
                    reason="the process-pool variant: CURATE_STORAGE_FULL=1")
def test_on_the_process_pool_decontamination_and_subset_publish_the_same_bytes(
        world: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    """Two pool workers read the training objects (and the subset's input objects)
    themselves and write into the local copy; the published bytes are a local inline
    run's."""
    pool = {"executor": "local", "workers": 2, "checkpoint_path": str(tmp_path / "ckpt")}
    keys, train, holdout, local = _decontaminated_locally_and_uploaded(
        world, s3_server, bucket, tmp_path)
    url = f"s3://{bucket}/decon"
    run_decontamination(DecontaminationConfig(
        **keys, train_glob=f"s3://{bucket}/train", holdout_glob=f"s3://{bucket}/holdout",
        output_dir=url, execution=pool))
    pairs = [(str(train), f"s3://{bucket}/train"), (str(holdout), f"s3://{bucket}/holdout"),
             (str(local), url)]
    _same(_visible(s3_objects(s3_server, bucket, "decon/")), _local(local),
          ("decontamination_report.json",), pairs, ("removed/",))

    skeys = {**KEYS["subset"][0], "partition_size": _largest(local)}
    mine = tmp_path / "subset"
    run_subset(SubsetConfig(**skeys, input_glob=str(local / "part_*.jsonl"),
                            output_dir=str(mine), execution=INLINE))
    surl = f"s3://{bucket}/subset"
    run_subset(SubsetConfig(**skeys, input_glob=f"{url}/part_*.jsonl", output_dir=surl,
                            execution=pool))
    _same(_visible(s3_objects(s3_server, bucket, "subset/")), _local(mine),
          ("subset_report.json", "plan.json"), [(str(local), url), (str(mine), surl)])


def test_a_holdout_object_changed_during_the_run_is_holdout_modified(
        world: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    """The holdout's digest before and after the scan reads the objects: one rewritten
    by another writer while the training objects are scanned fails the run
    (``holdout_modified``, exit 3) and the published report says so."""
    import boto3

    from curator.steps.decontamination import DecontaminationRun

    train, holdout = decontamination_world(world / "decon")
    upload_dir(s3_server, train, bucket, "train")
    upload_dir(s3_server, holdout, bucket, "holdout")
    name = sorted(p.name for p in holdout.iterdir())[0]
    url = f"s3://{bucket}/decon"
    config = DecontaminationConfig(
        **KEYS["decontamination"][0], train_glob=f"s3://{bucket}/train",
        holdout_glob=f"s3://{bucket}/holdout", output_dir=url,
        execution={**INLINE, "checkpoint_path": str(tmp_path / "ckpt")})
    changed: list[bool] = []

    def rewrite(phase: str, progress: Progress) -> None:
        if phase == "scan" and not changed:
            boto3.client("s3", endpoint_url=s3_server).put_object(
                Bucket=bucket, Key=f"holdout/{name}",
                Body=(holdout / name).read_bytes() + b'{"id": "late", "text": "late"}\n')
            changed.append(True)

    with pytest.raises(CuratorError) as err:
        DecontaminationRun(config, on_progress=rewrite).run()
    assert changed and err.value.error_id == "holdout_modified" and err.value.exit_code == 3
    report = json.loads(s3_objects(s3_server, bucket, "decon/")["decontamination_report.json"])
    assert report["splits"]["holdout"]["modified"] is True
    assert report["error"]["error_id"] == "holdout_modified"
    assert "completed_at" not in report["producer"]
