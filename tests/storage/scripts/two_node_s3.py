"""Ingest (then, with ``--filter``, the filter) on a two-node Ray cluster, S3 to S3.

    python two_node_s3.py --input URL --output URL --checkpoint DIR --ray-tmp SHORT_DIR
        [--ingest JSON] [--filter JSON]

A head and one worker node (``ray.cluster_utils.Cluster``, one CPU each, bound to
127.0.0.1); the ``RayExecutor`` joins it by address. Ingest reads ``--input`` and
publishes to ``<output>/ingested``; the filter (``--filter``) reads those shards from
the bucket and publishes to ``<output>/filtered``. The S3 endpoint and credentials come from the
environment (fsspec's and botocore's variables), which every Ray worker inherits.
Prints a JSON summary. Run as its own process, away from any Ray a test session started.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from curator.steps.filter import FilterConfig, run_filter
from curator.steps.ingest import IngestConfig, run_ingest
from executors import RayExecutor


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--ray-tmp", required=True)
    parser.add_argument("--ingest", default="{}")
    parser.add_argument("--filter", default=None, help="filter keys (JSON): run it too")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
    os.environ["RAY_TMPDIR"] = args.ray_tmp
    temp_dir = Path(args.ray_tmp) / "ray"
    temp_dir.mkdir(parents=True, exist_ok=True)
    from ray.cluster_utils import Cluster

    node_args = {"num_cpus": 1, "object_store_memory": 100 * 1024 * 1024,
                 "node_ip_address": "127.0.0.1", "include_dashboard": False}
    cluster = Cluster(initialize_head=True,
                      head_node_args={**node_args, "temp_dir": str(temp_dir)})
    execution = {"executor": "ray", "checkpoint_path": args.checkpoint}
    try:
        cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        nodes = [cluster.head_node.node_id, *(n.node_id for n in cluster.worker_nodes)]
        with RayExecutor(address=cluster.address, workers=2) as executor:
            ingest = run_ingest(IngestConfig(
                **json.loads(args.ingest), input=args.input,
                output_dir=f"{args.output}/ingested", execution=execution), executor)
            summary = {"nodes": nodes, "ingest": ingest["producer"]}
            if args.filter is not None:
                summary["filter"] = run_filter(FilterConfig(
                    **json.loads(args.filter),
                    input_glob=f"{args.output}/ingested/part_*.jsonl",
                    output_dir=f"{args.output}/filtered", execution=execution),
                    executor)["producer"]
    finally:
        cluster.shutdown()
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
