"""profile, decontamination, subset and audit, S3 to S3, SIGKILLed twice and resumed.

For each step, with its input and ``output_dir`` on the session's moto server (no call
patched), ``curate <command> --config FILE`` runs on the process pool (2 workers;
decontamination inline too) as a real subprocess in a session of its own, and its
whole process group is SIGKILLed:

1. in an engine pass, once the pass's checkpoint has durably recorded some partitions
   and others are still to come (the driver holds still right after the LMDB commit:
   ``scripts/curate_pause.py``; the workers go on with what they were handed, their
   outputs unrecorded). Every file went up as it was written (``curator.io.shared``),
   so the bucket holds what the recorded partitions wrote, but no completion artifact;
2. the same command, which resumes those partitions (its log says how many it skipped),
   killed again right before it lists what it published: every file, the completion
   artifact too, is up, the list is not;
3. the same command, plain ``curate``, runs to the end.

Then the published objects equal an uninterrupted local run's files (as
``test_steps_s3.py`` compares them: data byte for byte, reports with the local paths
mapped to the URLs), the report counts every partition as resumed, and nothing is left
behind: no local copy, no checkpoint, no hidden object but the list of what was
published, no unfinished multipart upload, no temp file (the pool's
``curate-chain-*.pkl`` a run killed in a pass leaves is removed by the next pool start).
The default suite runs decontamination inline (12 s at load 4); the four steps on the
pool (27 to 42 s each on the shared 2-core machine) run with ``CURATE_STORAGE_FULL=1``.

``test_objects_of_a_publication_killed_midway_do_not_outlive_a_fresh_run`` is a bug
this file found (docs/reliability.md): a publication killed midway left objects no list
named, which a later fresh run of another configuration never removed. Fixed in
``curator/io/storage.py``: a fresh run snapshots the output's objects before it writes
(``.curate-run-<step>.json``), and the next fresh run removes whatever appeared since.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.checkpoint import METADATA_DIRNAME, read_checkpoint_files
from curator.io import storage
from curator.steps.audit import AuditConfig, run_audit
from curator.steps.ingest import IngestConfig, run_ingest
from curator.steps.profile import ProfileConfig, run_profile
from curator.steps.subset import SubsetConfig, run_subset
from curator_demo import generate_demo_corpus
from tests.ingest._support import Cli
from tests.steps._worlds import KEYS, decontamination_world, filtered_world
from tests.storage.conftest import s3_objects, upload_dir
from tests.storage.test_steps_s3 import (
    _decontaminated_locally_and_uploaded,
    _largest,
    _local,
    _same,
    _visible,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

REPO = Path(__file__).resolve().parents[2]
PAUSE = Path(__file__).resolve().parent / "scripts" / "curate_pause.py"
INLINE = {"executor": "inline"}
_SKIPPED = re.compile(r"(\S+): (\d+) source partitions: (\d+) pending, (\d+) skipped as complete")


class Run(Cli):
    """``curate <command> --config FILE`` in its own session (the group killed on exit);
    ``pause``: through ``scripts/curate_pause.py`` with its ``KILLTEST_*`` variables."""

    def __init__(self, config: Path, logs: Path, tag: str, command: str,
                 env: dict[str, str], pause: dict[str, str] | None = None) -> None:
        super().__init__(config, logs, tag, command=command)
        if pause is not None:
            self.argv = [sys.executable, str(PAUSE), *self.argv[1:]]
        self.env = {**os.environ, **env, **(pause or {})}

    def __enter__(self) -> Run:
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=err, env=self.env,
                                          cwd=self.cwd, start_new_session=True)
        return self


@dataclass
class World:
    """One step's case: its local reference run and its S3 config."""

    key: str
    command: str
    phase: str  # the pass the first kill lands in
    after: int  # ... once this many of its partitions are recorded
    report: str  # the completion artifact
    remote: dict[str, Any]  # the config, URLs for input and output_dir
    local: Path  # the uninterrupted local run's output
    pairs: list[tuple[str, str]]  # local paths -> URLs, to compare the reports
    reports: tuple[str, ...]
    named: tuple[str, ...] = ()
    exit_code: int = 0
    extra_pairs: Callable[[dict[str, Any]], list[tuple[str, str]]] = field(
        default=lambda report: [])


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kill-world") / "raw"
    generate_demo_corpus(folder, docs=240, seed=7)
    return folder


def _profile(raw: Path, s3: str, bucket: str, tmp: Path) -> World:
    keys = {**KEYS["profile"][0], "signals": ["word_count", "stopword_ratio"]}
    local = tmp / "local"
    mine = run_profile(ProfileConfig(**keys, input_glob=str(raw), output_dir=str(local),
                                     execution=INLINE))
    upload_dir(s3, raw, bucket, "raw")
    url = f"s3://{bucket}/out"
    return World(
        "profile", "profile", "scores", 2, "profile_report.json",
        {**keys, "input_glob": f"s3://{bucket}/raw", "output_dir": url}, local,
        [(str(raw), f"s3://{bucket}/raw"), (str(local), url)], ("profile_report.json",),
        # the digest covers the report, which names its input: a folder, a URL
        extra_pairs=lambda report: [(mine["profile_digest"], report["profile_digest"])])


def _decontamination(raw: Path, s3: str, bucket: str, tmp: Path) -> World:
    keys, train, holdout, local = _decontaminated_locally_and_uploaded(
        tmp / "world", s3, bucket, tmp, files=5, docs=20)
    url = f"s3://{bucket}/out"
    return World(
        "decontamination", "decontaminate", "scan", 1, "decontamination_report.json",
        {**keys, "train_glob": f"s3://{bucket}/train",
         "holdout_glob": f"s3://{bucket}/holdout", "output_dir": url}, local,
        [(str(train), f"s3://{bucket}/train"), (str(holdout), f"s3://{bucket}/holdout"),
         (str(local), url)], ("decontamination_report.json",), ("removed/",))


def _subset(raw: Path, s3: str, bucket: str, tmp: Path) -> World:
    ingested = tmp / "ingested"  # small shards: more partitions than the steps' world
    run_ingest(IngestConfig(**{**KEYS["ingest"][0], "shard_size": 50}, input=str(raw),
                            output_dir=str(ingested), execution=INLINE))
    keys = {**KEYS["subset"][0], "partition_size": _largest(ingested)}
    local = tmp / "local"
    run_subset(SubsetConfig(**keys, input_glob=str(ingested), output_dir=str(local),
                            execution=INLINE))
    upload_dir(s3, ingested, bucket, "ingested")
    url = f"s3://{bucket}/out"
    return World(
        "subset", "subset", "write", 1, "subset_report.json",
        {**keys, "input_glob": f"s3://{bucket}/ingested", "output_dir": url}, local,
        [(str(ingested), f"s3://{bucket}/ingested"), (str(local), url)],
        ("subset_report.json", "plan.json"))


def _audit(raw: Path, s3: str, bucket: str, tmp: Path) -> World:
    filtered = filtered_world(raw, tmp / "filtered")
    f, r = f"s3://{bucket}/filtered", f"s3://{bucket}/raw"

    def keys(target: str, reference: str) -> dict[str, Any]:
        return {"target_glob": target, "declared_manifest": f"{target}/run_manifest.json",
                "ledger_glob": f"{target}/curation_ledger.json", "reference_glob": reference,
                "rejected_dir": f"{target}/rejected", "digest_root": target, "id_field": "url",
                "mode": "all", "comparison_fields": ["url", "text"]}

    local = tmp / "local"
    run_audit(AuditConfig(**keys(str(filtered), str(raw)), output_dir=str(local),
                          execution=INLINE))  # passes: no audit_findings raised
    upload_dir(s3, filtered, bucket, "filtered")
    upload_dir(s3, raw, bucket, "raw")
    url = f"s3://{bucket}/out"
    return World("audit", "audit", "scan", 3, "audit_report.json",
                 {**keys(f, r), "output_dir": url}, local,
                 [(str(filtered), f), (str(raw), r), (str(local), url)], ("audit_report.json",))


CASES = {"profile": _profile, "decontamination": _decontamination, "subset": _subset,
         "audit": _audit}


def _checkpointed(ckpt: Path, key: str, phase: str) -> set[str]:
    """The partitions the phase's LMDB files hold as completed, read from outside."""
    files = sorted((ckpt / key / phase / METADATA_DIRNAME).glob("*.mdb"))
    done: set[str] = set()
    for result in read_checkpoint_files(files, with_stats=False).values():
        assert not isinstance(result, BaseException), result
        done |= result[0]
    return done


def _multipart_uploads(s3: str, bucket: str) -> list[str]:
    import boto3

    listed = boto3.client("s3", endpoint_url=s3).list_multipart_uploads(Bucket=bucket)
    return [u["Key"] for u in listed.get("Uploads", [])]


#: on the pool (three CLI runs, each starting two workers) every case takes over 20 s on
#: the shared 2-core machine; the default suite runs decontamination inline (12 s at load 4)
FULL = pytest.mark.skipif(not os.environ.get("CURATE_STORAGE_FULL"),
                          reason="over 20 s on the pool: CURATE_STORAGE_FULL=1")


@pytest.mark.parametrize(("step", "executor"), [
    *(pytest.param(key, "local", marks=FULL, id=f"{key}-pool") for key in CASES),
    pytest.param("decontamination", "inline", id="decontamination-inline")])
def test_sigkill_in_a_pass_then_in_the_publication_then_resume(
        step: str, executor: str, raw: Path, s3_server: str, bucket: str,
        tmp_path: Path) -> None:
    world = CASES[step](raw, s3_server, bucket, tmp_path)
    key, url, ckpt = world.key, world.remote["output_dir"], tmp_path / "ckpt"
    copy = storage.local_copy_dir(url, str(ckpt), key)
    config = tmp_path / f"{key}.yaml"
    config.write_text(yaml.safe_dump({**world.remote, "execution": {
        "executor": executor, "workers": 2, "checkpoint_path": str(ckpt)}}), encoding="utf-8")
    temp = tmp_path / "tmp"  # the runs' temp directory, to see what they leave there
    temp.mkdir()
    env = {"CURATE_PREFECT": "never", "PYTHONPATH": str(REPO), "TMPDIR": str(temp)}
    logs, marker = tmp_path / "logs", tmp_path / "held.json"

    # 1. killed in a pass: some partitions recorded, others not; nothing published
    pause = {"KILLTEST_MARKER": str(marker), "KILLTEST_PHASE": world.phase,
             "KILLTEST_AFTER": str(world.after)}
    with Run(config, logs, "killed-in-pass", world.command, env, pause) as run:
        run.kill_when(marker.is_file, f"{world.after} partitions of {world.phase}")
    held = json.loads(marker.read_text())
    completed, planned = held["completed"], held["planned"]
    total = planned[f"{key}-{world.phase}"]
    assert world.after <= len(completed) < total, f"not cut midway: {held}"
    assert _checkpointed(ckpt, key, world.phase) == set(completed)  # durable, on disk
    assert (copy / f".{key}-work").is_dir()  # the local copy, kept for the resume
    objects = s3_objects(s3_server, bucket, "out/")
    assert world.report not in objects  # a killed run completes nothing
    assert f".curate-run-{key}.json" in objects  # what a fresh run would remove, known
    left_by_kill = sorted(p.name for p in temp.iterdir())
    marker.unlink()

    # 2. the same command resumes them, and is killed before it lists what it put
    pause = {"KILLTEST_MARKER": str(marker), "KILLTEST_LISTING": "1"}
    with Run(config, logs, "killed-publishing", world.command, env, pause) as run:
        run.kill_when(marker.is_file, "the list of the publication")
        log = run.stderr()
    skipped = {name: (int(n), int(pending), int(done))
               for name, n, pending, done in _SKIPPED.findall(log)}
    assert skipped[f"{key}-{world.phase}"] == (total, total - len(completed), len(completed))
    held = json.loads(marker.read_text())
    partitions = sum(held["planned"].values())  # every pass's partitions
    published = s3_objects(s3_server, bucket, "out/")
    assert world.report in published and f".curate-published-{key}.json" not in published

    # 3. the same command, plain curate, runs to the end
    with Run(config, logs, "resumed", world.command, env) as run:
        assert run.wait(300) == world.exit_code, run.stderr()[-3000:]
    objects = s3_objects(s3_server, bucket, "out/")
    report = json.loads(objects[world.report])
    assert report["producer"]["completed_at"] and report["producer"]["output_dir"] == url
    assert report["producer"]["resumed_partitions"] == partitions > 0  # nothing recomputed
    assert "error" not in report or report["error"] is None
    _same(_visible(objects), _local(world.local), world.reports,
          world.pairs + world.extra_pairs(report), world.named)

    # nothing left behind
    assert sorted(k for k in objects if k not in _visible(objects)) == [
        f".curate-published-{key}.json"]
    assert json.loads(objects[f".curate-published-{key}.json"])["files"][-1] == world.report
    assert _multipart_uploads(s3_server, bucket) == []
    assert not copy.exists() and list(ckpt.iterdir()) == []  # no checkpoint, lock, copy
    # the killed driver's pool chain file is removed by the next pool start
    # (executors/local.py), and the resumed runs leave nothing of their own
    assert sorted(p.name for p in temp.iterdir()) == [
        n for n in left_by_kill if not n.startswith("curate-chain-")], (
        "temp files left behind")


def test_objects_of_a_publication_killed_midway_do_not_outlive_a_fresh_run(
        raw: Path, s3_server: str, bucket: str, tmp_path: Path) -> None:
    """Decontamination S3 to S3 in eight shards is killed once it has put eight files
    (shards and removals, before its list and its report); the same output is then made afresh by
    another configuration, in three shards. The bucket must hold the new run's shards
    only: a consumer of ``out/part_*.jsonl`` would otherwise read five shards of the
    killed run beside the new report (documents twice)."""
    train, holdout = decontamination_world(tmp_path / "world", files=8, docs=12)
    upload_dir(s3_server, train, bucket, "train")
    upload_dir(s3_server, holdout, bucket, "holdout")
    url, ckpt = f"s3://{bucket}/out", tmp_path / "ckpt"
    keys = {**KEYS["decontamination"][0], "train_glob": f"s3://{bucket}/train",
            "holdout_glob": f"s3://{bucket}/holdout", "output_dir": url,
            "execution": {"executor": "inline", "checkpoint_path": str(ckpt)}}
    env = {"CURATE_PREFECT": "never", "PYTHONPATH": str(REPO)}
    logs, marker = tmp_path / "logs", tmp_path / "held.json"
    eight, three = tmp_path / "eight.yaml", tmp_path / "three.yaml"
    eight.write_text(yaml.safe_dump({**keys, "partition_size": _largest(train)}))
    three.write_text(yaml.safe_dump({**keys, "partition_size": 3 * _largest(train)}))

    pause = {"KILLTEST_MARKER": str(marker), "KILLTEST_PUTS": "8"}
    with Run(eight, logs, "killed-publishing", "decontaminate", env, pause) as run:
        run.kill_when(marker.is_file, "eight puts")
    shards = sorted(k for k in s3_objects(s3_server, bucket, "out/") if k.startswith("part_"))
    # put as written (each unit its shard and its removals), listed nowhere; more than
    # the fresh run's three, so one the fresh run does not rewrite must still go
    assert shards == [f"part_{i}.jsonl" for i in range(len(shards))] and len(shards) > 3
    assert ".curate-published-decontamination.json" not in s3_objects(s3_server, bucket, "out/")

    with Run(three, logs, "fresh", "decontaminate", env) as run:
        assert run.wait(300) == 0, run.stderr()[-3000:]
    objects = s3_objects(s3_server, bucket, "out/")
    report = json.loads(objects["decontamination_report.json"])
    assert report["producer"]["completed_at"] and report["producer"]["resumed_partitions"] == 0
    listed = json.loads(objects[".curate-published-decontamination.json"])["files"]
    assert sorted(k for k in _visible(objects)) == sorted(listed), (
        "objects on the bucket that no run listed: "
        f"{sorted(set(_visible(objects)) - set(listed))}")
