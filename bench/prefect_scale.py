"""Prefect at scale: a flow of many tiny partitions against a real local Prefect server.

A source stage emits ``--partitions`` tiny source tasks (100,000 by default) and one
trivial stage passes each through; the pipeline runs through
``flows.engine.run_pipeline_flow`` on ``LocalExecutor(workers=2)`` with a checkpoint,
against a Prefect API server started here on a SQLite file (so its growth can be
weighed). Reported: the flow's wall time, the same pipeline run directly
(``Pipeline.run``, no Prefect) for comparison, the task runs the server recorded, and
the database's growth (the SQLite file and its WAL, before the flow and after the
server has recorded everything, i.e. its CPU has gone quiet), per partition.

``--task-runs`` is the bound on Prefect task runs per pass (``CURATE_PREFECT_TASK_RUNS``;
256 by default); a bound of at least ``--partitions`` gives one task run per partition,
as before the bound existed. ``--engine-file`` runs another ``flows/engine.py`` (an
older one: ``git show 4dba6a8:flows/engine.py > /tmp/engine_before.py``) with this
checkout's everything else.

Prefect's own logging is left at its defaults (INFO, sent to the API), as a user's
would be, unlike the other benchmarks' hermetic setting: the task runs' state lines
are part of what the server stores.

    .venv/bin/python bench/prefect_scale.py                          # 100,000 partitions
    .venv/bin/python bench/prefect_scale.py --partitions 10000 --task-runs 10000
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import _common as C

from curator.stages import ProcessingStage
from curator.tasks import EmptyTask, Task

NAME = "prefect_scale"


@dataclass
class IdTask(Task[str]):
    """A tiny source task whose source id is its payload."""

    data: str = ""

    def get_deterministic_id(self) -> str:
        return self.data


@dataclass
class IdSource(ProcessingStage[EmptyTask, IdTask]):
    """Emits ``count`` source tasks ``p0000000``, ``p0000001``, ..."""

    count: int = 0
    name: str = "id_source"

    def process(self, task: EmptyTask) -> list[IdTask]:
        return [IdTask(dataset_name="bench", data=f"p{i:07d}") for i in range(self.count)]


@dataclass
class Touch(ProcessingStage[IdTask, IdTask]):
    """Passes a partition through, counting it."""

    name: str = "touch"

    def process(self, task: IdTask) -> IdTask:
        self.stat_update("partitions", 1)
        return task


def stages(count: int) -> list[ProcessingStage]:
    return [IdSource(count=count), Touch()]


def db_bytes(db: Path) -> int:
    """The database's files: the SQLite file, its WAL and shared memory."""
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def db_used_bytes(db: Path) -> int:
    """The pages in use (the file less its free list), read through SQLite."""
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        pages, free, size = (con.execute(f"PRAGMA {p}").fetchone()[0]
                             for p in ("page_count", "freelist_count", "page_size"))
    return (pages - free) * size


def settle(server_pid: int, quiet: float = 0.05, max_wait: float = 1800.0) -> float:
    """Wait until the server's CPU stays below ``quiet`` for 1 s (its backlog done)."""
    import psutil

    proc = psutil.Process(server_pid)
    start = time.perf_counter()
    proc.cpu_percent(None)
    calm = 0
    while time.perf_counter() - start < max_wait and calm < 4:
        time.sleep(0.25)
        calm = calm + 1 if proc.cpu_percent(None) < quiet * 100 else 0
    return time.perf_counter() - start


def count_runs(api: str, flow_name: str) -> dict[str, int]:
    import httpx

    flows = {"flows": {"name": {"any_": [flow_name]}}}
    return {kind: int(httpx.post(f"{api}/{kind}/count", json=flows, timeout=60).json())
            for kind in ("task_runs", "flow_runs")}


def load_engine(path: Path | None) -> ModuleType:
    """``flows.engine``, or the module in ``path`` (an older engine, say)."""
    if path is None:
        from flows import engine

        return engine
    spec = importlib.util.spec_from_file_location("engine_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--task-runs", type=int, default=256,
                        help="bound on Prefect task runs per pass (CURATE_PREFECT_TASK_RUNS)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-direct", action="store_true",
                        help="skip the run without Prefect")
    parser.add_argument("--engine-file", type=Path, default=None,
                        help="run_pipeline_flow from this file instead of flows/engine.py")
    parser.add_argument("--quiet-wait", type=float, default=60)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    with C.temp_dir(NAME, keep=args.keep) as tmp:
        env = C.prefect_env(tmp)
        for key in ("PREFECT_LOGGING_LEVEL", "PREFECT_LOGGING_TO_API_ENABLED"):
            env.pop(key)  # Prefect's defaults: INFO, sent to the API
        db = tmp / "prefect.db"
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = f"sqlite+aiosqlite:///{db}"
        env["CURATE_PREFECT_TASK_RUNS"] = str(args.task_runs)
        os.environ.update(env)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.environ.get("PYTHONPATH", ""), str(C.REPO), str(C.BENCH_DIR)) if p)

        from prefect.server.api.server import SubprocessASGIServer
        from prefect.settings import PREFECT_API_URL, temporary_settings

        from curator.pipeline import Pipeline
        from executors import LocalExecutor
        engine = load_engine(args.engine_file)
        run_pipeline_flow = engine.run_pipeline_flow

        bound = getattr(engine, "task_run_bound", lambda: None)()
        print(f"engine {engine.__file__}: bound on task runs per pass {bound}")
        t0 = time.perf_counter()
        server = SubprocessASGIServer()
        server.start(timeout=180)
        os.environ["PREFECT_API_URL"] = server.api_url
        pid = server.server_process.pid
        print(f"prefect API server up in {time.perf_counter() - t0:.1f}s (not counted)")
        C.wait_for_quiet(args.quiet_wait)
        result: dict[str, object] = {"partitions": args.partitions,
                                     "task_run_bound": bound, "engine": engine.__file__}
        try:
            with temporary_settings({PREFECT_API_URL: server.api_url}):
                logging.getLogger("curator").setLevel(logging.WARNING)
                if not args.no_direct:
                    executor = LocalExecutor(workers=args.workers)
                    try:
                        start = time.perf_counter()
                        Pipeline("prefect-scale", stages(args.partitions)).run(
                            executor=executor, checkpoint_path=tmp / "direct-ckpt")
                        result["direct_s"] = time.perf_counter() - start
                    finally:
                        executor.close()
                    print(f"direct: {result['direct_s']:.1f}s", flush=True)
                settle(pid)
                before, used_before = db_bytes(db), db_used_bytes(db)
                flow_name = "prefect-scale"
                executor = LocalExecutor(workers=args.workers)
                try:
                    start = time.perf_counter()
                    run = run_pipeline_flow(
                        Pipeline("prefect-scale", stages(args.partitions)), executor,
                        tmp / "flow-ckpt", flow_name=flow_name, artifact_key="prefect-scale")
                    result["flow_s"] = time.perf_counter() - start
                finally:
                    executor.close()
                assert run.sources_completed == args.partitions, run
                result["backlog_s"] = settle(pid)
                after, used_after = db_bytes(db), db_used_bytes(db)
                result.update(count_runs(server.api_url, flow_name))
                result.update({"db_before_bytes": before, "db_after_bytes": after,
                               "db_growth_bytes": after - before,
                               "db_growth_per_partition_bytes": (after - before) / args.partitions,
                               "db_used_growth_bytes": used_after - used_before,
                               "flow_s_per_1000_partitions": result["flow_s"] / args.partitions
                               * 1e3})
        finally:
            from prefect.events.worker import EventsWorker
            from prefect.logging.handlers import APILogWorker

            APILogWorker.drain_all(timeout=5)
            EventsWorker.drain_all(timeout=5)
            server.stop()

    print()
    C.print_table(
        ["partitions", "bound", "task runs", "direct s", "flow s", "server backlog s",
         "db growth MB", "db pages used +MB", "bytes/partition"],
        [[args.partitions, bound, result["task_runs"], result.get("direct_s", "-"),
          result["flow_s"], result["backlog_s"], result["db_growth_bytes"] / 1e6,
          result["db_used_growth_bytes"] / 1e6,
          result["db_growth_per_partition_bytes"]]])
    C.write_result(NAME, {"target": "bounded Prefect task runs per pass (no numeric target)",
                          "params": {k: (str(v) if isinstance(v, Path) else v)
                                     for k, v in vars(args).items()},
                          "results": result}, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
