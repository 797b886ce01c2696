"""Wall time of one ingest flow run: the thread-pool flow on RayExecutor, or prefect-ray.

    python tests/deployments/_measure_prefect_ray.py steps|ray_runner RAW OUT [PARTITION_SIZE]

``steps``: ``flows.steps:ingest_flow`` with ``execution.executor=ray`` (RayExecutor's own
Ray tasks, one thread-pool observer task run per partition). ``ray_runner``:
``flows.ray_runner:ingest_flow`` (each partition a Prefect task run executed as a Ray
task by prefect-ray's RayTaskRunner). Each run starts its own local Ray (2 CPUs) and
Prefect server, hermetic as the tests are (curator_testing.hermetic_env); the server's
start is not counted, Ray's is. Prints one JSON line. Not a test: the figures are in
docs/engine.md (prefect-ray) and deployments/README.md.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from curator_testing import hermetic_env


def main() -> int:
    mode, raw, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    partition_size = sys.argv[4] if len(sys.argv) > 4 else "64KB"
    home = Path(tempfile.mkdtemp(prefix="mpr-"))
    os.environ.update(hermetic_env(home))
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="mpr-", dir="/tmp")
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        temporary_settings,
    )

    server = SubprocessASGIServer()
    server.start(timeout=300)
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        with temporary_settings({PREFECT_API_URL: server.api_url,
                                 PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            if mode == "steps":
                from flows.steps import ingest_flow
            else:
                from flows.ray_runner import ingest_flow
            config = {"input": str(raw), "output_dir": str(out / "ingested"),
                      "on_duplicate": "drop", "source_from": "source",
                      "partition_size": partition_size,
                      "execution": {"executor": "ray", "workers": 2,
                                    "checkpoint_path": str(out / "checkpoints")}}
            since = time.perf_counter()
            report = ingest_flow(config)
            wall = time.perf_counter() - since
    finally:
        server.stop()
    print(json.dumps({"mode": mode, "partition_size": partition_size,
                      "wall_s": round(wall, 1),
                      "partitions": report["producer"]["execution"]["partitions"],
                      "documents": report.get("documents_accepted"),
                      "load_1min": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
