"""profile, decontamination, subset and audit on the shared-nothing cluster (issue 26),
through the command line, S3 to S3.

Each step runs twice with the same keys: inline in one driver (the reference) and on the
cluster (``executor: ray``, a head that runs no unit, so every unit runs on a worker node
that cannot see the driver's disk). Both publish under the module's bucket; the cluster's
objects must be the reference's: data byte for byte, JSON reports as
``test_steps.normalised`` reads them (the output URL mapped, what says when and where it
ran left out), and without ``config_hash``, the digest of a config that names its own
output URL (tests/storage/test_steps_s3.py's ``_mapped`` leaves it out too).

Inputs: the demo corpus ingested inline (``ref/ingested``, 3 shards) and filtered inline
with ``id_field: id`` (``ref/filtered``: its rejected records carry their ids, so the
audit accounts for every record by id), and decontamination's world (3 training shards
and a planted holdout, ``tests/steps/_worlds.py``): a few partitions each.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curator_demo import generate_demo_corpus
from tests.cluster._harness import SharedNothingCluster
from tests.cluster.test_steps import (
    World,
    filter_keys,
    ingest_keys,
    normalised,
    on_cluster,
    producer,
    write_config,
)
from tests.steps._worlds import KEYS, decontamination_world

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

INLINE = {"executor": "inline"}
#: seconds of each run, printed at the end of the module (``-s``)
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def world(shared_nothing_cluster: SharedNothingCluster,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The demo corpus under ``raw/``, ingested and filtered (by id) inline under ``ref/``;
    decontamination's training shards and holdout under ``train/`` and ``holdout/``."""
    cluster = shared_nothing_cluster
    folder = tmp_path_factory.mktemp("cluster-more")
    generate_demo_corpus(folder / "raw", docs=240, seed=7)
    world = World(cluster.new_bucket(), folder)
    cluster.upload(folder / "raw", world.bucket, "raw")
    for step, keys in (("ingest", ingest_keys(world, world.url("ref/ingested"))),
                       ("filter", {**filter_keys(world, world.url("ref/filtered")),
                                   "id_field": "id"})):
        config = write_config(folder / f"ref-{step}.yaml", keys, INLINE)
        done = cluster.run_driver(step, config, folder / "logs", f"ref-{step}")
        assert done.returncode == 0, f"{step}: {done.stderr[-4000:]}"
    train, holdout = decontamination_world(folder / "decon")
    cluster.upload(train, world.bucket, "train")
    cluster.upload(holdout, world.bucket, "holdout")
    yield world
    if TIMINGS:
        print("\n" + "\n".join(f"{k}: {v:.1f} s" for k, v in TIMINGS.items()))


def inline_then_cluster(cluster: SharedNothingCluster, world: World, verb: str,
                        keys: dict[str, Any], prefix: str, tmp_path: Path) -> None:
    """``keys`` run inline to ``<prefix>/ref``, then on the cluster to
    ``<prefix>/cluster`` (``curate <verb>``, a local checkpoint); both must exit 0."""
    for where, execution in (("ref", INLINE), ("cluster", on_cluster(str(tmp_path / "ckpt")))):
        config = write_config(tmp_path / f"{where}.yaml",
                              {**keys, "output_dir": world.url(f"{prefix}/{where}")}, execution)
        t0 = time.monotonic()
        done = cluster.run_driver(verb, config, tmp_path / "logs", where, timeout=600)
        TIMINGS[f"{verb} {where}"] = time.monotonic() - t0
        assert done.returncode == 0, f"{verb} {where}: exit {done.returncode}\n" + (
            done.stderr[-4000:])


def comparable(data: bytes, url: str, ref: str) -> Any:
    """:func:`normalised`, and without ``config_hash`` at any depth."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "config_hash"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(normalised(data, url, ref))


def assert_same(cluster: SharedNothingCluster, world: World, prefix: str,
                data: tuple[str, ...]) -> dict[str, bytes]:
    """``<prefix>/cluster`` holds ``<prefix>/ref``'s objects, compared as
    ``test_steps.assert_same_output`` compares them (the same names, the list of what
    was published included; data byte for byte; reports :func:`comparable`); ``data``:
    prefixes of names that must be there (not every step writes ``part_*`` at the top)."""
    got = cluster.objects(world.bucket, f"{prefix}/cluster")
    want = cluster.objects(world.bucket, f"{prefix}/ref")
    url, ref = world.url(f"{prefix}/cluster"), world.url(f"{prefix}/ref")
    assert sorted(got) == sorted(want)
    assert all(any(k.startswith(d) for k in want) for d in data), sorted(want)
    for name, body in want.items():
        if name.endswith(".json"):
            assert comparable(got[name], url, ref) == comparable(body, url, ref), name
        elif not name.endswith(".png"):
            assert got[name] == body.replace(ref.encode(), url.encode()), name
    return got


def test_profile_on_the_cluster_writes_the_bytes_of_an_inline_run(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    keys = {**KEYS["profile"][0], "input_glob": world.ingested}
    inline_then_cluster(cluster, world, "profile", keys, "p", tmp_path)
    got = assert_same(cluster, world, "p", ("profile_report.json", "candidate_policies.yaml",
                                            "sample_manifest.json", "plots/"))
    assert producer(got, "profile_report.json")["execution"]["executor"] == "ray"


def test_decontamination_on_the_cluster_writes_the_bytes_of_an_inline_run(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    keys = {**KEYS["decontamination"][0], "train_glob": world.url("train"),
            "holdout_glob": world.url("holdout")}
    inline_then_cluster(cluster, world, "decontaminate", keys, "d", tmp_path)
    got = assert_same(cluster, world, "d", ("part_", "removed/"))  # planted copies went
    report = json.loads(got["decontamination_report.json"])
    assert report["producer"]["execution"]["executor"] == "ray"
    assert report["splits"]["holdout"]["modified"] is False


def test_subset_on_the_cluster_writes_the_bytes_of_an_inline_run(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    keys = {**KEYS["subset"][0], "input_glob": world.ingested}
    inline_then_cluster(cluster, world, "subset", keys, "s", tmp_path)
    got = assert_same(cluster, world, "s", tuple(f"budget_{b}_words/part_"
                                                 for b in keys["token_budgets"]))
    report = json.loads(got["subset_report.json"])
    assert report["nesting_verified"] and report["producer"]["execution"]["executor"] == "ray"


def test_audit_on_the_cluster_writes_the_report_of_an_inline_run(
        cluster: SharedNothingCluster, world: World, tmp_path: Path) -> None:
    """Every check (mode ``all``: integrity, digest, containment, record accounting by
    id) of the filter's output on the bucket against the ingested shards it read: it
    passes, with its four strengths, on the cluster as inline."""
    target = world.url("ref/filtered")
    keys = {"target_glob": target, "declared_manifest": f"{target}/run_manifest.json",
            "ledger_glob": f"{target}/curation_ledger.json", "reference_glob": world.ingested,
            "digest_root": target, "id_field": "id", "source_field": "source",
            "mode": "all", "comparison_fields": ["id", "text"]}
    inline_then_cluster(cluster, world, "audit", keys, "a", tmp_path)
    got = assert_same(cluster, world, "a", ("audit_report.json", "audit_summary.md"))
    report = json.loads(got["audit_report.json"])
    assert report["producer"]["execution"]["executor"] == "ray"
    assert report["passed"] is True and report["findings"] == []
    assert [s["level"] for s in report["strengths"] if s["made"]] == [1, 2, 3, 4]
    assert report["target"]["file_count"] > 0 and report["target"]["row_count"] > 0
