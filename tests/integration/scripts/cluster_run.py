"""Run one pipeline on a two-node Ray cluster and on the local process pool.

    python cluster_run.py --workdir DIR --ray-tmp SHORT_DIR

A head and one worker node (``ray.cluster_utils.Cluster``), each with one CPU,
a small object store and the short temp dir, bound to 127.0.0.1. Writes
``<workdir>/ray-out`` and ``<workdir>/local-out`` from the same inputs and prints
a JSON summary: the cluster's node ids and the node each partition ran on.
Run as its own process so it never meets a Ray that a test session started.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator_testing.jsonl import DocumentBatch, JsonlWriter, jsonl_reader
from executors import LocalExecutor, RayExecutor


@dataclass
class WhereAmI(ProcessingStage[DocumentBatch, DocumentBatch]):
    """Sleep a little (so partitions spread over nodes); note the Ray node in metadata."""

    delay: float = 0.3
    name: str = "where_am_i"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        time.sleep(self.delay)
        ray = sys.modules.get("ray")  # imported in a Ray worker; never imported here otherwise
        if ray is not None and ray.is_initialized():
            task._metadata["node_id"] = ray.get_runtime_context().get_node_id()
        return task


def pipeline(workdir: Path, out: str) -> Pipeline:
    return Pipeline(
        f"cluster-{out}",
        [
            *jsonl_reader(str(workdir / "input"), files_per_partition=1),
            WhereAmI(),
            JsonlWriter(path=str(workdir / out)),
        ],
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--ray-tmp", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
    workdir = args.workdir.resolve()

    # Ray's own files (the head's temp dir, the address file) go under the short dir.
    # The caller also sets RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, without which Ray 2.60
    # rewrites the head's 127.0.0.1 to this machine's routable IP when the driver joins,
    # and cannot reach a head that listens on loopback only.
    os.environ["RAY_TMPDIR"] = args.ray_tmp
    temp_dir = Path(args.ray_tmp) / "ray"
    temp_dir.mkdir(parents=True, exist_ok=True)
    from ray.cluster_utils import Cluster

    node_args = {
        "num_cpus": 1,
        "object_store_memory": 100 * 1024 * 1024,
        "node_ip_address": "127.0.0.1",
        "include_dashboard": False,
    }
    cluster = Cluster(
        initialize_head=True, head_node_args={**node_args, "temp_dir": str(temp_dir)}
    )
    try:
        cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        # The executor joins the cluster by address and leaves it when closed.
        with RayExecutor(address=cluster.address, workers=2) as executor:
            ray_run = pipeline(workdir, "ray-out").run(
                executor=executor, checkpoint_path=workdir / "ray-ckpt"
            )
        nodes = [cluster.head_node.node_id, *(n.node_id for n in cluster.worker_nodes)]
    finally:
        cluster.shutdown()

    local_run = pipeline(workdir, "local-out").run(
        executor=LocalExecutor(workers=2), checkpoint_path=workdir / "local-ckpt"
    )
    print(json.dumps({
        "nodes": nodes,
        "ran_on": sorted(t._metadata.get("node_id", "") for t in ray_run.tasks),
        "ray_completed": ray_run.sources_completed,
        "local_completed": local_run.sources_completed,
        "local_ran_on": sorted(t._metadata.get("node_id", "") for t in local_run.tasks),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
