"""Hold a two-node local Ray cluster open; remove its worker node on request.

    python tests/deployments/_ray_cluster.py "$RAY_TMPDIR/ray"

The one cluster holder of the tests (tests/deployments/test_prefect_ray.py and
tests/chaos/test_ray_node.py). A head and one worker node (``ray.cluster_utils.Cluster``),
one CPU each, a small object store, bound to 127.0.0.1 (the caller sets
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` and a short ``RAY_TMPDIR``; see
tests/integration/_support.py, ``ray_env``); the head's temp dir is the argument
(``$RAY_TMPDIR/ray``), where Ray also writes its address file. Prints one JSON line:

    {"address": GCS address, "nodes": [head id, worker id],
     "raylet_pids": [head raylet, worker raylet], "worker_raylet_pids": [worker raylet]}

(a node's Ray worker processes are its raylet's children). Then reads stdin: the line
``remove`` kills the worker node (its raylet and every worker process on it, not
gracefully, as a lost machine would) and prints ``removed``; EOF (the test is done, or
died) shuts the cluster down. A process of its own, so it never meets a Ray that the
test session started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def raylet_pids(node: Any) -> list[int]:
    return [p.pid for kind, p in node.live_processes() if kind == "raylet"]


def main() -> int:
    temp_dir = Path(sys.argv[1])
    temp_dir.mkdir(parents=True, exist_ok=True)
    from ray.cluster_utils import Cluster

    node_args = {"num_cpus": 1, "object_store_memory": 100 * 1024 * 1024,
                 "node_ip_address": "127.0.0.1", "include_dashboard": False}
    cluster = Cluster(initialize_head=True,
                      head_node_args={**node_args, "temp_dir": str(temp_dir)})
    try:
        worker = cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        head = cluster.head_node
        print(json.dumps({"address": cluster.address,
                          "nodes": [head.node_id, worker.node_id],
                          "raylet_pids": [*raylet_pids(head), *raylet_pids(worker)],
                          "worker_raylet_pids": raylet_pids(worker)}), flush=True)
        for line in sys.stdin:  # until the caller closes the pipe
            if line.strip() == "remove":
                cluster.remove_node(worker, allow_graceful=False)
                print("removed", flush=True)
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
