"""``curate flow``, measure then apply, on the shared-nothing cluster (issue 26), S3 to S3.

The two runs of ``tests/storage/test_flow_s3.py`` (measure: ingest, profile; apply:
approve, filter, audit, decontamination, subset with its Parquet copy) as
``python -m flows.entry flow --config FILE``: once by a driver on the inline executor
(the local run, one machine) into ``s3://<bucket>/ref``, once by a driver on the cluster
(``executor: ray``; the head runs no unit, so every unit of every step runs on a worker
node that cannot see the driver's disk) into ``s3://<bucket>/cluster``. Every step's
objects must be the local run's: data byte for byte; reports, rejections and removals
with the one root's names read as the other's, without what says when and where they
ran. The smallest world: the demo corpus of that test (160 documents), a few partitions.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from curator.checkpoint_mirror import SCRATCH_DIR_ENV
from curator.flow.plan import MARKER
from curator.io.storage import COPY_DIR_ENV
from tests.cluster._harness import SharedNothingCluster
from tests.flow._support import demo_corpus
from tests.storage.test_flow_s3 import (
    DOCS,
    STEPS,
    SUBDIRS,
    VOLATILE,
    _configs,
    _digest,
    _text,
    _visible,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1200)]

#: what differs between an inline and a Ray run of the same config besides the root
RUN_SPECIFIC = VOLATILE | {"execution", "output_dir"}


def _fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _fields(v) for k, v in value.items() if k not in RUN_SPECIFIC}
    if isinstance(value, list):
        return [_fields(v) for v in value]
    return value


def _differences(ref: dict[str, bytes], got: dict[str, bytes], names: dict[str, str]
                 ) -> list[str]:
    """Names whose content differs: data byte for byte; reports field by field and the
    records that name their input (rejections, removals) as text, ``names`` applied."""
    differ = []
    for name, data in ref.items():
        if name.endswith(".json"):
            same = (_fields(json.loads(_text(got[name], names)))
                    == _fields(json.loads(_text(data, names))))
        elif name.endswith((".md", ".yaml")) or name.startswith(("rejected/", "removed/")):
            same = _text(got[name], names) == _text(data, names)
        elif name.endswith((".png", ".html")):  # a picture's metadata: the same name
            same = True
        else:
            same = got[name] == data
        if not same:
            differ.append(name)
    return differ


def _flow(cluster: SharedNothingCluster, config: dict[str, Any], folder: Path, tag: str,
          disk: Path) -> None:
    path = folder / f"{tag}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    env = {SCRATCH_DIR_ENV: str(disk / "scratch"), COPY_DIR_ENV: str(disk / "copies")}
    done = cluster.run_driver("flow", path, folder / "logs", tag, timeout=900, env=env)
    assert done.returncode == 0, f"{tag}: exit {done.returncode}\n{done.stderr[-4000:]}"


def test_the_flow_on_the_cluster_publishes_the_bytes_of_a_local_run(
        cluster: SharedNothingCluster, tmp_path: Path) -> None:
    from curator_demo.holdout import write_holdout

    raw = demo_corpus(tmp_path / "raw", docs=DOCS)
    write_holdout(raw, tmp_path / "holdout")
    bucket = cluster.new_bucket()
    cluster.upload(raw, bucket, "raw")
    cluster.upload(tmp_path / "holdout", bucket, "holdout")
    raw_url, holdout_url = f"s3://{bucket}/raw", f"s3://{bucket}/holdout/holdout.jsonl"
    roots = {"ref": f"s3://{bucket}/ref", "cluster": f"s3://{bucket}/cluster"}
    timings = {}
    for where, execution in (("ref", {"executor": "inline"}),
                             ("cluster", {"executor": "ray", "workers": 2})):
        for run, config in zip(("measure", "apply"),
                               _configs(raw_url, holdout_url, roots[where]), strict=True):
            t0 = time.monotonic()
            _flow(cluster, {**config, "execution": execution}, tmp_path, f"{where}-{run}",
                  tmp_path / f"disk-{where}")
            timings[f"{where} {run}"] = round(time.monotonic() - t0, 1)
    print(f"\nflow timings (s): {timings}")

    ref, got = cluster.objects(bucket, "ref"), cluster.objects(bucket, "cluster")
    # what names one root in the other's objects: the roots, each driver's local copy of
    # its root, and the digests of the profile's report and the approved policy (its
    # report names its output, and the policy names the report's digest)
    names = {roots["ref"]: roots["cluster"]}
    for where in roots:
        for copy in (tmp_path / f"disk-{where}" / "copies").glob(".flow-output-*"):
            names[str(copy)] = roots["cluster"]
    for name in ("profile/profile_report.json", "policy/approved_policy.yaml"):
        names[_digest(ref[name])] = _digest(got[name])
    names[json.loads(ref["profile/profile_report.json"])["profile_digest"]] = \
        json.loads(got["profile/profile_report.json"])["profile_digest"]
    for subdir in SUBDIRS:
        mine, theirs = _visible(ref, subdir), _visible(got, subdir)
        assert mine and sorted(theirs) == sorted(mine), subdir
        assert not _differences(mine, theirs, names), subdir
        assert f"{subdir}/{MARKER}" in got, subdir
    assert any(n.startswith("parquet/budget_") and n.endswith(".parquet")
               for n in _visible(got, "subset"))
    assert _text(got["policy/approved_policy.yaml"], names) == \
        _text(ref["policy/approved_policy.yaml"], names)
    flow = json.loads(got["flow_report.json"])
    assert flow["output_root"] == roots["cluster"] and flow["status"] == "ok"
    status = {s["step_id"]: s["status"] for s in flow["steps"]}
    assert status["curate/ingest"] == "skipped" and status["curate/profile"] == "disabled"
    assert all(status[f"curate/{k}"] == "ok" for k in STEPS[2:]), status
    # every step's units ran on the worker nodes (the head has no CPU)
    for subdir, report in (("ingested", "ingest_report.json"),
                           ("filtered_jsonl", "run_manifest.json"),
                           ("subset", "subset_report.json")):
        execution = json.loads(got[f"{subdir}/{report}"])["producer"]["execution"]
        assert execution["executor"] == "ray", (subdir, execution)
