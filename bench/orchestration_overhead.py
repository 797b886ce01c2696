"""Orchestration overhead: the pipeline through the Prefect flow vs Pipeline.run directly.

The same stages - jsonl_reader(blocksize) -> TextStats (polars expressions: char
count, word count, alphanumeric / uppercase / whitespace shares, mean word length,
line count) -> JsonlWriter (curator_testing.jsonl) - on >= 500 MB of JSONL, run

- directly: ``pipeline.run(executor=...)``;
- through Prefect: ``flows.engine.run_pipeline_flow(pipeline, executor=...)``
  (one flow run, one Prefect task run per source partition);

on LocalExecutor(workers=2) and RayExecutor(workers=2). One Prefect API server is
started first (PREFECT_API_URL exported) and one small Ray is initialised first,
so neither start-up is counted. Direct and flow runs alternate; every run writes
to a fresh output directory. Two partition sizes (default 32 MB and 8 MB) give
the overhead per partition and the fixed overhead per run (a least-squares line
through the overhead at both partition counts), from which the smallest
partition that keeps the overhead under 5% follows.

Target (project issue): orchestration overhead < 5%.

    .venv/bin/python bench/orchestration_overhead.py
    .venv/bin/python bench/orchestration_overhead.py --files 4 --blocksizes 32MB --reps 2
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import _common as C

NAME = "orchestration_overhead"
TARGET = 0.05


def text_stats_stage():
    import polars as pl

    from curator.stages import ProcessingStage
    from curator_testing.jsonl import DocumentBatch

    @dataclass
    class TextStats(ProcessingStage[DocumentBatch, DocumentBatch]):
        """Per-document text statistics as vectorised polars expressions."""

        name: str = "text_stats"

        def process(self, task: DocumentBatch) -> DocumentBatch:
            text = pl.col("text")
            n_chars = text.str.len_chars()
            df = task.to_polars().with_columns(
                n_chars=n_chars,
                n_words=text.str.count_matches(r"\S+"),
                n_lines=text.str.count_matches("\n") + 1,
                alnum_share=text.str.count_matches(r"[[:alnum:]]") / n_chars,
                upper_share=text.str.count_matches(r"[[:upper:]]") / n_chars,
                space_share=text.str.count_matches(r"\s") / n_chars,
            ).with_columns(
                mean_word_len=(pl.col("n_chars") * pl.col("alnum_share")) / pl.col("n_words"),
            )
            self.stat_update("docs", df.height)
            return DocumentBatch(dataset_name=task.dataset_name, data=df,
                                 _metadata=dict(task._metadata))

    return TextStats


def build(inp: Path, out: Path, blocksize: str, stage_cls):
    from curator.pipeline import Pipeline
    from curator_testing.jsonl import JsonlWriter, jsonl_reader

    return Pipeline("orchestration-bench", [
        *jsonl_reader(str(inp), blocksize=blocksize),
        stage_cls(),
        JsonlWriter(path=str(out)),
    ])


def make_executor(kind: str, workers: int):
    if kind == "ray":
        from executors import RayExecutor

        return RayExecutor(workers=workers)
    from executors import LocalExecutor

    return LocalExecutor(workers=workers)


def cpu_snapshot() -> tuple[float, dict[int, float]]:
    """CPU seconds of this process + reaped children, and of every live descendant.

    Pool workers live within one run and are reaped (RUSAGE_CHILDREN); the Prefect
    server, Ray's raylet and Ray's workers live across runs (per-pid deltas).
    """
    import resource

    import psutil

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    live: dict[int, float] = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            t = proc.cpu_times()
            live[proc.pid] = t.user + t.system
        except psutil.Error:
            pass
    return own, live


def cpu_delta(a: tuple[float, dict[int, float]], b: tuple[float, dict[int, float]],
              only: int | None = None) -> float:
    if only is not None:
        return b[1].get(only, 0.0) - a[1].get(only, 0.0)
    live = sum(v - a[1].get(pid, 0.0) for pid, v in b[1].items())
    return b[0] - a[0] + live


def settle(server_pid: int, quiet: float = 0.05, max_wait: float = 60.0) -> float:
    """Wait until the Prefect server's own CPU use drops below ``quiet`` (its backlog done)."""
    import psutil

    proc = psutil.Process(server_pid)
    start = time.perf_counter()
    proc.cpu_percent(None)
    calm = 0
    while time.perf_counter() - start < max_wait and calm < 2:
        time.sleep(0.25)
        calm = calm + 1 if proc.cpu_percent(None) < quiet * 100 else 0
    return time.perf_counter() - start


def one_run(mode: str, kind: str, args, inp: Path, work: Path, blocksize: str, stage_cls,
            server_pid: int):
    from flows.engine import run_pipeline_flow

    out = C.fresh(work / "out")
    pipeline = build(inp, out, blocksize, stage_cls)
    executor = make_executor(kind, args.workers)
    settle(server_pid)  # the previous run's server backlog is not this run's cost
    cpu0 = cpu_snapshot()
    try:
        start = time.perf_counter()
        if mode == "flow":
            result = run_pipeline_flow(pipeline, executor=executor)
        else:
            result = pipeline.run(executor=executor)
        wall = time.perf_counter() - start
        cpu1 = cpu_snapshot()
    finally:
        # The local pool outlives run() (kept for a next run); closed here, untimed, so
        # no run leaves workers behind. A Ray that this script started is left alone.
        executor.close()
    backlog = settle(server_pid)  # the server still recording this run's task runs
    cpu2 = cpu_snapshot()
    assert result.sources_completed == result.sources_total and not result.sources_pending
    return {"wall_s": wall, "partitions": result.sources_total,
            "docs": result.stats.get("text_stats.docs", 0),
            "cpu_s": cpu_delta(cpu0, cpu2),  # driver, workers, server (incl. its backlog)
            "server_cpu_s": cpu_delta(cpu0, cpu2, only=server_pid),
            "server_backlog_s": backlog if mode == "flow" else 0.0,
            "cpu_during_run_s": cpu_delta(cpu0, cpu1)}


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x; with one point, a = 0."""
    if len(set(xs)) < 2:
        return 0.0, ys[0] / xs[0]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs)
    return my - b * mx, b


def partition_model(counts: list[float], overheads: list[float], cost_per_mb: float,
                    corpus_mb: float) -> dict[str, float | None]:
    """Overhead = a + b * partitions; the smallest partition (MB) keeping it under 5%.

    ``cost_per_mb`` is the direct run's cost (wall or CPU seconds) per MB, so the
    overhead share is a / (cost_per_mb * corpus) + b / (cost_per_mb * partition_mb).
    """
    a, b = fit_line(counts, overheads)
    fixed_share = a / (cost_per_mb * corpus_mb)
    this = None
    if b > 0 and fixed_share < TARGET:
        this = b / cost_per_mb / (TARGET - fixed_share)
    return {"fixed_s": a, "per_partition_ms": b * 1e3, "fixed_share_pct": fixed_share * 100,
            "min_partition_mb_this_corpus": this if b > 0 else 0.0 if fixed_share < TARGET
            else None,
            "min_partition_mb_large_corpus": b / cost_per_mb / TARGET if b > 0 else 0.0}


def _mb(value: float | None) -> str:
    if value is None:
        return "none (fixed cost alone > 5%)"
    return "any" if value == 0 else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8, help="input files")
    parser.add_argument("--file-mb", type=float, default=63.9, help="size of each input file")
    parser.add_argument("--blocksizes", default="32MB,8MB", help="partition sizes to measure")
    parser.add_argument("--executors", default="local,ray", help="local, ray")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3, help="measured runs per mode and size")
    parser.add_argument("--no-heartbeat", action="store_true",
                        help="turn the flow-run heartbeat off (PREFECT_FLOWS_HEARTBEAT_FREQUENCY)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--quiet-wait", type=float, default=60,
                        help="wait up to this many seconds for other CPU load to settle")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    with C.temp_dir(NAME, keep=args.keep) as tmp:
        os.environ.update(C.prefect_env(tmp))
        # workers spawned by the pool import the project and the stage from here
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(C.REPO), str(C.BENCH_DIR), os.environ.get("PYTHONPATH", "")) if p)
        if not (C.REPO / "flows" / "engine.py").exists():
            print("flows/engine.py is missing: nothing to compare", file=sys.stderr)
            return 2
        inp = tmp / "input"
        t0 = time.perf_counter()
        total = C.write_corpus(inp, args.files, seed=args.seed,
                               bytes_per_file=int(args.file_mb * 1e6))
        print(f"corpus: {args.files} files, {total / 1e6:.0f} MB "
              f"(generated in {time.perf_counter() - t0:.1f}s)")

        from prefect.server.api.server import SubprocessASGIServer
        from prefect.settings import (
            PREFECT_API_URL,
            PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
            temporary_settings,
        )

        t0 = time.perf_counter()
        server = SubprocessASGIServer()
        server.start(timeout=120)
        os.environ["PREFECT_API_URL"] = server.api_url
        server_pid = server.server_process.pid
        print(f"prefect API server up in {time.perf_counter() - t0:.1f}s (not counted)")
        overrides = {PREFECT_API_URL: server.api_url}
        if args.no_heartbeat:
            overrides[PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
        stage_cls = text_stats_stage()
        C.wait_for_quiet(args.quiet_wait)
        results: dict[str, dict[str, object]] = {}
        ray_started = False
        try:
            with temporary_settings(overrides):
                logging.getLogger("prefect").setLevel(logging.WARNING)
                for kind in args.executors.split(","):
                    if kind == "ray" and not ray_started:
                        import ray

                        t0 = time.perf_counter()
                        ray.init(**C.ray_init_kwargs(tmp / "ray", num_cpus=args.workers))
                        ray_started = True
                        print(f"ray up in {time.perf_counter() - t0:.1f}s (not counted)")
                    for i, bs in enumerate(args.blocksizes.split(",")):
                        for mode in ("direct", "flow") if i == 0 else ():  # warm-up
                            one_run(mode, kind, args, inp, tmp, bs, stage_cls, server_pid)
                        runs: dict[str, list[dict[str, float]]] = {"direct": [], "flow": []}
                        for rep in range(args.reps):
                            order = ("direct", "flow") if rep % 2 == 0 else ("flow", "direct")
                            for mode in order:
                                runs[mode].append(one_run(mode, kind, args, inp, tmp, bs,
                                                          stage_cls, server_pid))
                        d = C.median([r["wall_s"] for r in runs["direct"]])
                        f = C.median([r["wall_s"] for r in runs["flow"]])
                        n = runs["flow"][0]["partitions"]
                        paired = C.median([b["wall_s"] - a["wall_s"] for a, b in
                                           zip(runs["direct"], runs["flow"], strict=True)])
                        dcpu = C.median([r["cpu_s"] for r in runs["direct"]])
                        fcpu = C.median([r["cpu_s"] for r in runs["flow"]])
                        results[f"{kind}@{bs}"] = {
                            "executor": f"{kind}(workers={args.workers})",
                            "kind": kind,
                            "blocksize": bs,
                            "partitions": n,
                            "partition_mb": total / 1e6 / n,
                            "direct_s": [r["wall_s"] for r in runs["direct"]],
                            "flow_s": [r["wall_s"] for r in runs["flow"]],
                            "median_direct_s": d,
                            "median_flow_s": f,
                            "overhead_s": f - d,
                            "median_paired_overhead_s": paired,
                            "overhead_pct": (f - d) / d * 100,
                            "overhead_per_partition_ms": (f - d) / n * 1e3,
                            "direct_mb_per_s": total / 1e6 / d,
                            "direct_cpu_s": [r["cpu_s"] for r in runs["direct"]],
                            "flow_cpu_s": [r["cpu_s"] for r in runs["flow"]],
                            "median_direct_cpu_s": dcpu,
                            "median_flow_cpu_s": fcpu,
                            "cpu_overhead_s": fcpu - dcpu,
                            "cpu_overhead_pct": (fcpu - dcpu) / dcpu * 100,
                            "cpu_overhead_per_partition_ms": (fcpu - dcpu) / n * 1e3,
                            "median_flow_server_cpu_s":
                                C.median([r["server_cpu_s"] for r in runs["flow"]]),
                            "median_direct_server_cpu_s":
                                C.median([r["server_cpu_s"] for r in runs["direct"]]),
                            "median_server_backlog_s":
                                C.median([r["server_backlog_s"] for r in runs["flow"]]),
                            "target_met": (f - d) / d < TARGET,
                        }
                        print(f"  {kind} {bs}: direct {d:.2f}s, flow {f:.2f}s, "
                              f"{(f - d) / d * 100:+.1f}% wall, "
                              f"{(fcpu - dcpu) / dcpu * 100:+.1f}% CPU ({n} partitions)",
                              flush=True)
        finally:
            try:
                from prefect.events.worker import EventsWorker
                from prefect.logging.handlers import APILogWorker

                APILogWorker.drain_all(timeout=5)
                EventsWorker.drain_all(timeout=5)
            except Exception:  # best effort at shutdown
                pass
            server.stop()
            if ray_started:
                import ray

                ray.shutdown()

    # fixed cost per run and cost per partition, per executor, from the sizes measured
    mb = total / 1e6
    model: dict[str, dict[str, dict[str, float | None]]] = {}
    for kind in args.executors.split(","):
        rows = [r for r in results.values() if r["kind"] == kind]
        counts = [float(r["partitions"]) for r in rows]
        model[kind] = {
            "wall": partition_model(counts, [r["overhead_s"] for r in rows],
                                    C.median([r["median_direct_s"] for r in rows]) / mb, mb),
            "cpu": partition_model(counts, [r["cpu_overhead_s"] for r in rows],
                                   C.median([r["median_direct_cpu_s"] for r in rows]) / mb, mb),
        }

    print(f"\n{total / 1e6:.0f} MB of JSONL, medians of {args.reps}; overhead = flow - direct")
    C.print_table(
        ["executor", "blocksize", "partitions", "direct s", "flow s", "overhead s",
         "overhead %", "ms/partition", "< 5%?"],
        [[r["executor"], r["blocksize"], r["partitions"], r["median_direct_s"],
          r["median_flow_s"], r["overhead_s"], r["overhead_pct"],
          r["overhead_per_partition_ms"], "yes" if r["target_met"] else "NO"]
         for r in results.values()],
    )
    print()
    C.print_table(
        ["executor", "cpu s direct", "cpu s flow", "cpu overhead %", "cpu ms/partition",
         "server cpu s", "server backlog s"],
        [[r["executor"] + "@" + r["blocksize"], r["median_direct_cpu_s"], r["median_flow_cpu_s"],
          r["cpu_overhead_pct"], r["cpu_overhead_per_partition_ms"],
          r["median_flow_server_cpu_s"], r["median_server_backlog_s"]]
         for r in results.values()],
    )
    print("\noverhead = fixed per run + per partition (line through the partition counts);"
          " smallest partition for < 5%")
    C.print_table(
        ["executor", "basis", "fixed s/run", "ms/partition", "min MB (this corpus)",
         "min MB (large corpus)"],
        [[k, basis, m["fixed_s"], m["per_partition_ms"], _mb(m["min_partition_mb_this_corpus"]),
          _mb(m["min_partition_mb_large_corpus"])]
         for k, bases in model.items() for basis, m in bases.items()],
    )
    C.write_result(NAME, {
        "target": "orchestration overhead (Prefect flow vs Pipeline.run) < 5%",
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "corpus_bytes": total,
        "results": results,
        "model": model,
    }, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
