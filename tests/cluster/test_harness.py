"""The harness itself: a file the driver writes to its /tmp is not on a worker node's
disk, every unit runs on a worker node, and every node reaches the S3 server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cluster._harness import SharedNothingCluster, finish

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]

#: a driver: four probes spread over the cluster, each reporting its node, whether it
#: sees the driver's file, what it reads from the bucket, and a put of its own
PROBE = r"""
import json, os, sys
import fsspec, ray

planted, bucket = sys.argv[1], sys.argv[2]

@ray.remote(num_cpus=1, scheduling_strategy="SPREAD")
def probe(i):
    fs = fsspec.filesystem("s3")
    seen = fs.cat(f"{bucket}/from-driver.txt").decode()
    fs.pipe(f"{bucket}/from-task-{i}.txt", f"task {i}".encode())
    return {"node": ray.get_runtime_context().get_node_id(), "sees": os.path.exists(planted),
            "dir": os.path.exists(os.path.dirname(planted)), "read": seen}

ray.init(log_to_driver=False)
print(json.dumps({"driver_sees": os.path.exists(planted),
                  "driver_node": ray.get_runtime_context().get_node_id(),
                  "probes": ray.get([probe.remote(i) for i in range(4)])}))
"""


@pytest.mark.parametrize("fresh", [False, True], ids=["driver", "fresh-driver"])
def test_workers_cannot_see_driver_files(cluster: SharedNothingCluster, tmp_path: Path,
                                         fresh: bool) -> None:
    planted = tmp_path / "driver-file.txt"  # under the driver's /tmp
    planted.write_text("the driver's own file")
    bucket = cluster.new_bucket()
    cluster.s3().put_object(Bucket=bucket, Key="from-driver.txt", Body=b"hello from S3")
    proc = cluster.spawn([sys.executable, "-c", PROBE, str(planted), bucket],
                         tmp_path / "logs", "probe", fresh=fresh)
    done = finish(proc, tmp_path / "logs", "probe", 180)
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    # a driver in a fresh namespace (an empty disk) does not see it either
    assert seen["driver_sees"] is (not fresh)
    nodes = {n["id"]: n for n in cluster.nodes()}
    assert nodes[seen["driver_node"]]["head"]  # a driver joins the head's raylet
    ran_on = {p["node"] for p in seen["probes"]}
    assert ran_on == {i for i, n in nodes.items() if not n["head"]}  # both workers, never the head
    for p in seen["probes"]:
        assert p["sees"] is False, p
        # nor its folder (the test's own: another test's runs may have made the shared
        # parents, e.g. a local copy at the driver's path, on a worker)
        assert p["dir"] is False, p
        assert p["read"] == "hello from S3"
    put = cluster.objects(bucket, "")
    assert {k: v for k, v in put.items() if k.startswith("from-task-")} == {
        f"from-task-{i}.txt": f"task {i}".encode() for i in range(4)}
