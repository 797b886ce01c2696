"""Hold a two-node local Ray cluster open until stdin closes.

    python _ray_cluster.py "$RAY_TMPDIR/ray"

A head and one worker node (``ray.cluster_utils.Cluster``), one CPU each, a small
object store, bound to 127.0.0.1 (the caller sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
and a short ``RAY_TMPDIR``; see tests/integration/_support.py, ``ray_env``); the head's
temp dir must be ``$RAY_TMPDIR/ray``, where Ray also writes its address file. Prints one
JSON line, ``{"address": GCS address, "nodes": [head id, worker id]}``, then waits;
when stdin reaches EOF (the test is done, or died) the cluster is shut down. A process
of its own, so it never meets a Ray that the test session started.
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
        cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        nodes = [cluster.head_node.node_id, *(n.node_id for n in cluster.worker_nodes)]
        print(json.dumps({"address": cluster.address, "nodes": nodes}), flush=True)
        sys.stdin.read()  # until the test closes the pipe
    finally:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
