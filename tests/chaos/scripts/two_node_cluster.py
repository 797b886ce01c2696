"""Hold a two-node local Ray cluster open; remove its worker node on request.

    python two_node_cluster.py "$RAY_TMPDIR/ray"

A head and one worker node (``ray.cluster_utils.Cluster``), one CPU each, bound to
127.0.0.1 (the caller sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` and a short
``RAY_TMPDIR``: tests/integration/_support.py, ``ray_env``). Prints one JSON line,
``{"address": ..., "nodes": [head id, worker id], "worker_raylet_pids": [...]}`` (the
worker processes of the worker node are that raylet's children). Then reads stdin: the line
``remove`` kills the worker node (its raylet and every worker process on it, not
gracefully, as a lost machine would) and prints ``removed``; EOF shuts the cluster down.
A process of its own, so it never meets a Ray that the test session started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


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
        raylets = [p.pid for kind, p in worker.live_processes() if kind == "raylet"]
        print(json.dumps({"address": cluster.address,
                          "nodes": [cluster.head_node.node_id, worker.node_id],
                          "worker_raylet_pids": raylets}), flush=True)
        for line in sys.stdin:
            if line.strip() == "remove":
                cluster.remove_node(worker, allow_graceful=False)
                print("removed", flush=True)
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
