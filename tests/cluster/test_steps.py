"""Steps on the shared-nothing cluster (issue 26), through the command line, S3 to S3.

Every run on the cluster is ``python -m flows.entry <step> --config FILE`` joined to a
head that runs no unit (``num_cpus=0``): every unit runs on a worker node that cannot
see the driver's disk. Each must publish the bytes that a local inline run of the same
config publishes (the reference, made once per module, to ``ref/``): data files byte
for byte, the reports with the output URL mapped and what says when and where it ran
left out. Then: a worker node SIGKILLed mid-step, the driver SIGKILLed mid-step and a
new driver with an empty disk resuming from a checkpoint on the bucket, and files
planted in the driver's scratch root (the output's local copy) never read by a worker.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.checkpoint import read_checkpoint_file
from curator.io import storage
from curator_demo import generate_demo_corpus
from tests.cluster._harness import SharedNothingCluster, kill_group
from tests.ingest._support import RESUME, without
from tests.steps._worlds import KEYS

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(600)]

INGEST, FILTER = KEYS["ingest"][0], KEYS["filter"][0]
#: the engine's line for each phase of a run: how many partitions a resume skipped
SKIPPED = re.compile(r"(\d+) skipped as complete")
#: what says when, where and how a run ran (not what it made)
VARYING = ("producer", "started_at", "completed_at", "seconds", "run_id")


@dataclass
class World:
    """The module's bucket: the demo corpus under ``raw/``, and the inline runs' output
    (the reference) under ``ref/ingested`` and ``ref/filtered``."""

    bucket: str
    folder: Path

    def url(self, prefix: str) -> str:
        return f"s3://{self.bucket}/{prefix}"

    @property
    def ingested(self) -> str:
        """The filter's input: the reference ingest's shards."""
        return f"{self.url('ref/ingested')}/part_*.jsonl"


def write_config(path: Path, keys: dict[str, Any], execution: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({**keys, "execution": execution}), encoding="utf-8")
    return path


def ingest_keys(world: World, out: str) -> dict[str, Any]:
    return {**INGEST, "input": world.url("raw"), "output_dir": out}


def filter_keys(world: World, out: str) -> dict[str, Any]:
    return {**FILTER, "input_glob": world.ingested, "output_dir": out}


def on_cluster(checkpoint: str) -> dict[str, Any]:
    """Ray on the cluster (``RAY_ADDRESS``), a unit per worker node."""
    return {"executor": "ray", "workers": 2, "checkpoint_path": checkpoint}


@pytest.fixture(scope="module")
def world(shared_nothing_cluster: SharedNothingCluster,
          tmp_path_factory: pytest.TempPathFactory) -> World:
    cluster = shared_nothing_cluster
    folder = tmp_path_factory.mktemp("cluster-world")
    generate_demo_corpus(folder / "raw", docs=240, seed=7)
    world = World(cluster.new_bucket(), folder)
    cluster.upload(folder / "raw", world.bucket, "raw")
    inline = {"executor": "inline"}
    for step, keys in (("ingest", ingest_keys(world, world.url("ref/ingested"))),
                       ("filter", filter_keys(world, world.url("ref/filtered")))):
        config = write_config(folder / f"ref-{step}.yaml", keys, inline)
        done = cluster.run_driver(step, config, folder / "logs", f"ref-{step}")
        assert done.returncode == 0, f"reference {step}: {done.stderr[-4000:]}"
    return world


def normalised(data: bytes, url: str, ref: str, resumed: bool = False) -> Any:
    """A JSON report with the reference's URL read as this run's, without
    :data:`VARYING` (at any depth); ``resumed``: nor what says a run was resumed
    (``tests/ingest/_support.py`` RESUME)."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in VARYING}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    body = strip(json.loads(data.decode().replace(ref, url)))
    return without(body, RESUME) if resumed else body


def assert_same_output(cluster: SharedNothingCluster, world: World, prefix: str,
                       ref_prefix: str, resumed: bool = False) -> dict[str, bytes]:
    """The objects under ``prefix`` are the reference's: the same names (the list of
    what was published included), data byte for byte, reports as :func:`normalised`."""
    got = cluster.objects(world.bucket, prefix)
    want = cluster.objects(world.bucket, ref_prefix)
    url, ref = world.url(prefix), world.url(ref_prefix)
    assert sorted(got) == sorted(want)
    assert any(k.startswith("part_") for k in want)
    for name, data in want.items():
        if name.endswith(".json"):
            assert (normalised(got[name], url, ref, resumed)
                    == normalised(data, url, ref, resumed)), name
        elif not name.endswith(".png"):
            assert got[name] == data.replace(ref.encode(), url.encode()), name
    return got


def producer(objects: dict[str, bytes], report: str) -> dict[str, Any]:
    return dict(json.loads(objects[report])["producer"])


def wait_until(what: str, ready: Callable[[], bool], proc: Any, logs: Path, tag: str,
               timeout: float = 240) -> None:
    """Poll ``ready`` while the driver ``proc`` runs; fail, with its log, if it ends
    first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(
                f"the driver ended (exit {proc.returncode}) before {what}:\n"
                + (logs / f"{tag}.err").read_text(errors="replace")[-4000:])
        if time.monotonic() > deadline:
            kill_group(proc)
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.2)


def completed_on_bucket(cluster: SharedNothingCluster, bucket: str, prefix: str,
                        into: Path) -> set[str]:
    """The partitions the checkpoint mirrored under ``prefix`` records as completed:
    its writers' LMDB files (``*.mdb``) downloaded to ``into`` and read from outside."""
    done: set[str] = set()
    for name, data in cluster.objects(bucket, prefix).items():
        if name.endswith(".mdb"):
            path = into / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            with contextlib.suppress(Exception):  # a writer file with nothing yet
                done |= read_checkpoint_file(path, with_stats=False)[0]
    return done


# -- (a), (b): the bytes of an inline run ----------------------------------------------------


def test_ingest_s3_to_s3_on_the_cluster_writes_the_bytes_of_an_inline_run(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    config = write_config(tmp_path / "ingest.yaml", ingest_keys(world, world.url("a/ingested")),
                          on_cluster(str(tmp_path / "ckpt")))
    done = cluster.run_driver("ingest", config, tmp_path / "logs", "ingest")
    assert done.returncode == 0, done.stderr[-4000:]
    got = assert_same_output(cluster, world, "a/ingested", "ref/ingested")
    assert producer(got, "ingest_report.json")["execution"]["executor"] == "ray"


def test_filter_s3_to_s3_on_the_cluster_writes_the_bytes_of_an_inline_run(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    config = write_config(tmp_path / "filter.yaml", filter_keys(world, world.url("b/filtered")),
                          on_cluster(str(tmp_path / "ckpt")))
    done = cluster.run_driver("filter", config, tmp_path / "logs", "filter")
    assert done.returncode == 0, done.stderr[-4000:]
    got = assert_same_output(cluster, world, "b/filtered", "ref/filtered")
    assert producer(got, "run_manifest.json")["execution"]["executor"] == "ray"


# -- (d) the driver killed, a new one with an empty disk resumes --------------------------------


def test_a_new_driver_with_an_empty_disk_resumes_a_killed_one(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    """``execution.checkpoint_path`` on the bucket. The driver is SIGKILLed (its process
    group) once the checkpoint on the bucket records a completed partition; the same command,
    run by a driver in a fresh mount namespace (nothing of the first driver's disk:
    empty /tmp, /dev/shm and home caches), resumes the recorded partitions and
    publishes the inline run's bytes."""
    ckpt_prefix = "d/ckpt"
    config = write_config(tmp_path / "ingest.yaml", ingest_keys(world, world.url("d/ingested")),
                          on_cluster(world.url(ckpt_prefix)))
    logs = tmp_path / "logs"
    # both drivers keep their local files under the same path (CURATE_SCRATCH_DIR): the
    # first's on this disk, the second's on its own empty /tmp
    env = {"CURATE_SCRATCH_DIR": str(tmp_path / "scratch")}

    def recorded() -> bool:
        return bool(completed_on_bucket(cluster, world.bucket, ckpt_prefix, tmp_path / "peek"))

    first = cluster.driver("ingest", config, logs, "first", env=env)
    try:
        wait_until("a partition recorded in the checkpoint on the bucket", recorded,
                   first, logs, "first")
    finally:
        kill_group(first)
    assert first.returncode == -9  # killed, not finished
    assert "ingest_report.json" not in cluster.objects(world.bucket, "d/ingested")

    done = cluster.run_driver("ingest", config, logs, "resumed", fresh=True, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    got = assert_same_output(cluster, world, "d/ingested", "ref/ingested", resumed=True)
    report = json.loads(got["ingest_report.json"])
    assert report["was_resumed"] and report["producer"]["resumed_partitions"] >= 1
    assert max((int(n) for n in SKIPPED.findall(done.stderr)), default=0) >= 1, (
        done.stderr[-4000:])
    # a completed run's checkpoint goes (docs/architecture.md, StepRun step 6), on the
    # bucket too: nothing a later run on another node could resume from
    left = cluster.objects(world.bucket, ckpt_prefix)
    assert left == {}, f"a completed run left its checkpoint's objects: {sorted(left)}"


# -- (e) the driver's scratch root is never read by a worker ------------------------------------


PLANTED = {"planted-by-test.jsonl": b'{"text": "planted in the scratch root", "id": "x"}\n',
           ".staging/planted-by-test.jsonl": b'{"text": "planted in staging", "id": "y"}\n'}


def test_files_planted_in_the_driver_scratch_root_are_never_read_by_a_worker(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    """The scratch root (the output's local copy, ``storage.local_copy_dir``) gets
    planted files on the driver's disk and, at the same path, on every worker node's
    disk (as if every node mounted it), with an access time in 2000; the worker
    nodes' /tmp is ``strictatime``. After the run: the output is the inline run's and
    names no planted file, and on every worker node each planted file and directory is
    there, unchanged, and unread (access time as planted)."""
    url, ckpt = world.url("e/ingested"), tmp_path / "ckpt"
    scratch = storage.local_copy_dir(url, str(ckpt), "ingest")
    for name, data in PLANTED.items():
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_bytes(data)
    before = []
    for i in range(len(cluster.workers)):
        cluster.plant_in_worker(i, scratch, PLANTED)
        before.append(cluster.planted_state(i, scratch, PLANTED))
        assert all(v is not None and v[0] < 1e9 for v in before[-1].values()), before[-1]
    config = write_config(tmp_path / "ingest.yaml", ingest_keys(world, url),
                          on_cluster(str(ckpt)))
    done = cluster.run_driver("ingest", config, tmp_path / "logs", "planted")
    assert done.returncode == 0, done.stderr[-4000:]
    got = assert_same_output(cluster, world, "e/ingested", "ref/ingested")
    assert not any("planted" in k or b"planted in" in v for k, v in got.items())
    for i in range(len(cluster.workers)):
        after = cluster.planted_state(i, scratch, PLANTED)
        assert after == before[i], f"worker node {i}: {before[i]} -> {after}"


# -- (c) a worker node killed ------------------------------------------------------------------


def test_a_worker_node_killed_mid_step_the_step_finishes_on_the_other(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    """Once a unit runs on each worker node, worker node 0 (its ``ray start``, raylet
    and Ray workers) is SIGKILLed: the same command goes on to the end on node 1 and
    publishes the inline run's bytes. (Last in the file: the next test that asks for
    the cluster starts the node again, ~10 to 20 s.)"""
    config = write_config(tmp_path / "ingest.yaml", ingest_keys(world, world.url("c/ingested")),
                          on_cluster(str(tmp_path / "ckpt")))
    logs = tmp_path / "logs"
    proc = cluster.driver("ingest", config, logs, "killed-node")
    try:
        wait_until("a unit running on each worker node",
                   lambda: cluster.units_on(0) > 0 and cluster.units_on(1) > 0,
                   proc, logs, "killed-node")
        cluster.kill_worker(0)
        code = proc.wait(300)
    finally:
        kill_group(proc)
    assert code == 0, (logs / "killed-node.err").read_text(errors="replace")[-4000:]
    assert_same_output(cluster, world, "c/ingested", "ref/ingested")
