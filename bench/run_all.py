"""Run every benchmark with modest defaults (about 12 minutes on 2 cores) and summarise.

Every script in ``bench/`` other than this one and ``_common.py`` is a benchmark, and
``MODEST`` must name it: the script refuses to run while one is missing, so none is
silently skipped (a one-off study belongs in a decision record under ``docs/decisions/``,
not here). Each benchmark runs as its own process (a fresh interpreter, so one cannot
warm or pollute another); this script then prints one line per target. Pass ``--only
NAME[,NAME]`` to run a subset, or ``--full`` to use each benchmark's own (larger)
defaults instead.

A modest run writes ``bench/results/<name>_modest.json``, so it never replaces
the full-size figures that the docs quote (``<name>.json``, written by
``--full``). The modest ingest and filter runs also keep their data apart
(``/tmp/cb-ingest-data-modest``, ``/tmp/cb-filter-data-modest``): the full runs' data
directories are reused across runs and regenerated when the size differs. The signal
benchmark names its data file by size, so its modest and full data live side by side in
``/tmp/cb-signal-data``.

    .venv/bin/python bench/run_all.py
    .venv/bin/python bench/run_all.py --only memory,resume_startup
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent

#: name -> arguments for the modest run (sizes stay at the issue's minimums; fewer reps)
MODEST: dict[str, list[str]] = {
    "checkpoint_overhead": ["--reps", "5"],
    "resume_startup": ["--reps", "3"],
    "memory": ["--reps", "3"],
    "orchestration_overhead": ["--reps", "2"],
    # 128 MB, one repetition, no profile, its own data directory
    "ingest_throughput": ["--size-mb", "128", "--reps", "1", "--profile-mb", "0",
                          "--data-dir", "/tmp/cb-ingest-data-modest"],
    # 50 MB of text, all 24 signals together only (the per-signal rows are for the docs)
    "signal_throughput": ["--mb", "50", "--no-single"],
    # 64 MB, one repetition, the floor and the whole filter only, its own data directory
    "filter_throughput": ["--mb", "64", "--repeat", "1", "--variants", "floor,filter",
                          "--data-dir", "/tmp/cb-filter-data-modest"],
    # the modest filter run's 64 MB, one repetition, the floor and mode all only
    "audit_throughput": ["--mb", "64", "--repeat", "1", "--variants", "floor,audit:all",
                         "--data-dir", "/tmp/cb-filter-data-modest"],
    # the modest filter run's 64 MB, 2,000 holdout passages, minhash on 4 MB
    "decontaminate_throughput": ["--mb", "64", "--repeat", "1", "--holdout", "2000",
                                 "--planted", "150", "--sample", "100", "--minhash-mb", "4",
                                 "--data-dir", "/tmp/cb-filter-data-modest"],
    # the modest filter run's 64 MB, one repetition, the floor and the cold cl100k step
    "subset_throughput": ["--mb", "64", "--repeat", "1", "--variants", "floor,subset",
                          "--budgets", "1000000,3000000,6000000",
                          "--data-dir", "/tmp/cb-filter-data-modest"],
    # the modest filter run's 64 MB, one repetition: the Parquet copy against the floors
    "parquet_export": ["--mb", "64", "--repeat", "1",
                       "--data-dir", "/tmp/cb-filter-data-modest"],
    # three interleaved repetitions of each start-up mode
    "startup": ["--reps", "3"],
    # ingest and the filter, local against the local S3 server, 16 MB in 4 files
    "storage_s3": ["--mb", "16", "--files", "4", "--repeat", "1"],
    # the profile's 46 plots, fixed margins against tight_layout, one repetition
    "profile_plots": ["--docs", "100", "--repeat", "1"],
    # the six steps on the shared-nothing test cluster, 5 MB (needs root: else skipped)
    "cluster_driver_io": ["--mb", "5"],
    # the checkpoint mirror's push and restore, 1,000 and 10,000 partitions, once each
    "checkpoint_mirror": ["--sizes", "1000", "10000", "--repeat", "1"],
    # 10,000 tiny partitions through the Prefect flow, task runs bounded at 256
    "prefect_scale": ["--partitions", "10000"],
    # the MinHash kernels of curate dedup on 8 MB: ours (numba, numpy); the peers when
    # installed beside (--extra), else their rows say why not
    "minhash_kernels": ["--mb", "8", "--slow-mb", "1", "--variants", "numba,numpy"],
    # every step of the flow as its own process, 20,000 and 100,000 tiny documents
    "driver_scale": ["--sizes", "20000,100000", "--quiet-wait", "5"],
    # the subset's driver alone, this tree, 20,000 and 100,000 tiny documents
    "driver_scale_subset": ["--sizes", "20000,100000"],
    # curate dedup end to end on 32 MB with planted near-duplicates, against the floor
    "dedup_throughput": ["--mb", "32", "--repeat", "1",
                         "--data-dir", "/tmp/cb-dedup-data-modest"],
}

#: files in bench/ that are not benchmarks (chaos.py is ``make chaos``'s driver: hours)
NOT_BENCHMARKS = {"run_all", "_common", "chaos"}


def benchmark_scripts() -> list[str]:
    """Every benchmark script in bench/: each must have an entry in ``MODEST``."""
    return sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in NOT_BENCHMARKS)


def result_path(name: str, full: bool) -> Path:
    return BENCH / "results" / (f"{name}.json" if full else f"{name}_modest.json")


def verdict(name: str, full: bool = False) -> str:
    doc = json.loads(result_path(name, full).read_text())
    if name == "ingest_throughput":
        parts = []
        for v, s in doc["summary"].items():
            ratio = s.get("floor_over_this_per_cpu_s")
            if v.startswith("floor") or not ratio:
                continue
            if s["processes"] > 1 and s["cores_busy"] < 0.5:
                # a pool kept open after the run is never reaped: its CPU is missing
                parts.append(f"{v} not judged (workers' CPU not counted)")
            else:
                parts.append(f"{v} {ratio:.1f}x ({'met' if ratio <= 2.0 else 'NOT met'})")
        return "ingest within 2x of the polars floor per CPU second: " + "; ".join(parts)
    res = doc.get("results") or {}
    if name == "checkpoint_overhead":
        parts = [f"{r['executor']} {r['overhead_pct']:+.1f}% "
                 f"({'met' if r['target_met'] else 'NOT met'})" for r in res.values()]
        return "checkpoint overhead < 2%: " + "; ".join(parts)
    if name == "resume_startup":
        parts = [f"{r['executor']} {r['median_to_first_partition_s']:.2f}s "
                 f"({'met' if r['target_met'] else 'NOT met'})" for r in res.values()]
        return "resume start-up < 2 s: " + "; ".join(parts)
    if name == "memory":
        return (f"8x/1x peak RSS <= 1.25: {doc['ratio_of_medians']:.3f} "
                f"({'met' if doc['target_met'] else 'NOT met'})")
    if name == "orchestration_overhead":
        parts = [f"{r['executor']}@{r['blocksize']} {r['overhead_pct']:+.1f}% "
                 f"({'met' if r['target_met'] else 'NOT met'})" for r in res.values()]
        return "orchestration overhead < 5%: " + "; ".join(parts)
    if name == "signal_throughput":
        mb_s = doc["all_signals_mb_per_s_per_core"]
        return (f"all 24 signals >= {doc['target_mb_per_s_per_core']:g} MB/s per core: "
                f"{mb_s:.1f} ({'met' if doc['meets_target'] else 'NOT met'})")
    if name == "filter_throughput":
        filt = res.get("filter")
        if filt is None:
            return "filter >= 40 MB/s per core, within 6x of the floor: not judged (no filter run)"
        ratio = filt.get("x_floor")
        met = filt["mb_per_cpu_s"] >= 40.0 and ratio is not None and ratio <= 6.0
        versus = f", {ratio:.1f}x the floor" if ratio is not None else ""
        return (f"filter >= 40 MB/s per core, within 6x of the floor: "
                f"{filt['mb_per_cpu_s']:.1f} MB/s{versus} ({'met' if met else 'NOT met'})")
    if name == "audit_throughput":
        audit = res.get("audit:all")
        ratio = (audit or {}).get("x_floor")
        if ratio is None:
            return "audit (all) within 3x of the floor: not judged (no floor or audit run)"
        return (f"audit (all) within 3x of the floor: {audit['mb_per_cpu_s']:.1f} MB/s, "
                f"{ratio:.1f}x ({'met' if ratio <= 3.0 else 'NOT met'})")
    if name == "decontaminate_throughput":
        exact = res.get("exact")
        recall = (doc.get("recall") or {}).get("recall")
        if exact is None:
            return "decontaminate >= 30 MB/s per core, recall 1.0: not judged (no exact run)"
        met = exact["mb_per_cpu_s"] >= 30.0 and recall == 1.0
        return (f"decontaminate >= 30 MB/s per core, recall 1.0: {exact['mb_per_cpu_s']:.1f} "
                f"MB/s, recall {recall} ({'met' if met else 'NOT met'})")
    if name == "subset_throughput":
        tokens = doc.get(f"count:{doc.get('tokenizer')}") or {}
        step = res.get("subset") or {}
        rate, ratio = tokens.get("tokens_per_cpu_s"), step.get("x_floor")
        if rate is None or ratio is None:
            return "subset: not judged (no tokenizer or no subset run)"
        return (f"subset tokenizer >= 1.5 M tokens/s per core: {rate / 1e6:.2f} M "
                f"({'met' if rate >= 1.5e6 else 'NOT met'}); whole step (cold cache) within "
                f"10x of the floor: {ratio:.1f}x ({'met' if ratio <= 10 else 'NOT met'})")
    if name == "startup":
        med = doc["median"]
        direct, served = med.get("direct"), med.get("running server")
        return (f"start-up <= 3 s without a server: {direct:.2f} s "
                f"({'met' if direct <= 3.0 else 'NOT met'}); <= 1 s with one running: "
                f"{served:.2f} s ({'met' if served <= 1.0 else 'NOT met'})")
    if name == "storage_s3":
        parts = [f"{step} {res[f'{step}_s3_s'] / res[f'{step}_local_s']:.2f}x"
                 for step in ("ingest", "filter") if f"{step}_local_s" in res]
        return "S3 against local disk, wall (no target): " + "; ".join(parts)
    if name == "parquet_export":
        copy, own = res.get("export") or {}, res.get("polars_parquet") or {}
        if copy.get("x_floor") is None:
            return "parquet copy: not judged (no floor or export run)"
        versus = (f", {copy['cpu_s'] / own['cpu_s']:.1f}x polars' own conversion"
                  if own.get("cpu_s") else "")
        return (f"parquet copy (no target; docs/benchmarks.md §10): "
                f"{copy['mb_per_cpu_s']:.1f} MB/s, {copy['x_floor']:.1f}x the floor{versus}")
    if name == "profile_plots":
        fixed, tight = res.get("fixed margins") or {}, res.get("tight_layout") or {}
        if not fixed.get("cpu_s") or not tight.get("cpu_s"):
            return "profile plots: not judged (a variant did not run)"
        return (f"profile plots (no target; docs/profile.md): {doc['pngs']} PNGs "
                f"{fixed['cpu_s']:.1f} CPU s, {tight['cpu_s'] / fixed['cpu_s']:.2f}x that "
                f"with tight_layout")
    if name == "checkpoint_mirror":
        big = max(doc["rows"], key=lambda r: r["partitions"])
        return (f"checkpoint mirror at {big['partitions']} partitions: copy "
                f"{big['copy_ms']} ms under the lock, put {big['put_ms']} ms, restore "
                f"{big['restore_ms']} ms")
    if name == "prefect_scale":
        r = res  # one run: its figures
        direct = f", direct {r['direct_s']:.0f} s" if "direct_s" in r else ""
        return (f"prefect at {r['partitions']} partitions (no target; docs/benchmarks.md "
                f"§12): {r['task_runs']} task runs, flow {r['flow_s']:.0f} s{direct}, "
                f"server database +{r['db_growth_bytes'] / 1e6:.1f} MB")
    if name == "minhash_kernels":
        rows = {r["variant"]: r for r in doc.get("results", []) if "mb_per_s_cpu" in r}
        parts = [f"{v} {r['mb_per_s_cpu']:.1f} MB/s per core" for v, r in rows.items()]
        return ("minhash kernels (no target; docs/decisions/minhash-kernel.md): "
                + ", ".join(parts))
    if name == "driver_scale":
        ratios = doc["ratios"]
        sizes = sorted(int(s) for s in doc["results"])
        parts = [f"{v} {r['peak']:.2f}x" for v, r in ratios.items() if v != "approve"]
        met = all(r["peak"] <= 1.25 for r in ratios.values())
        return (f"driver peak RSS {sizes[0]:,} -> {sizes[-1]:,} documents, <= 1.25x "
                f"({'met' if met else 'NOT met'}; the issue's sizes are 1 M -> 10 M): "
                + ", ".join(parts))
    if name == "dedup_throughput":
        dd = res.get("dedup")
        if not dd:
            return f"dedup: not run ({doc.get('note') or 'the step failed'})"
        met = dd["mb_s_per_core"] >= 5.0
        return (f"dedup {dd['mb_s_per_core']:.1f} MB/s per core end to end, >= 5 "
                f"({'met' if met else 'NOT met'}), {dd['x_floor']:.1f}x the floor; driver "
                f"peak {dd['driver_peak_mib']:.0f} MiB; planted recall "
                f"{dd['planted']['recall']}")
    if name == "driver_scale_subset":
        ratios = doc["results"].get("ratios", {})
        return ("subset driver peak RSS, smaller -> larger size (<= 1.25x): " + ", ".join(
            f"{Path(code).name} {r['peak']:.2f}x ({r['driver_bytes_per_extra_doc']:.0f} B "
            "per extra document)" for code, r in ratios.items()))
    if name == "cluster_driver_io":
        if "skipped" in doc:
            return f"cluster driver I/O: skipped ({doc['skipped']})"
        shares = {k: r["share"] for k, r in doc["cluster"].items() if "share" in r}
        worst = max(shares, key=shares.__getitem__)
        met = not doc["over_target"] and len(shares) == 6
        return (f"driver moves <= 1% of each step's input: worst {worst} "
                f"{shares[worst]:.1%} ({'met' if met else 'NOT met'})")
    return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(MODEST), help="comma-separated names")
    parser.add_argument("--full", action="store_true", help="each benchmark's own defaults")
    args = parser.parse_args(argv)
    unregistered = set(benchmark_scripts()) - set(MODEST)
    if unregistered:
        parser.error(f"bench/ has benchmark(s) that run_all.py does not know: "
                     f"{', '.join(sorted(unregistered))}; add them to MODEST and verdict() "
                     f"(a one-off study goes to docs/decisions/ instead)")
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(MODEST)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")

    failed: list[str] = []
    lines: list[str] = []
    start = time.perf_counter()
    for name in names:
        cmd = [sys.executable, str(BENCH / f"{name}.py"),
               *([] if args.full else [*MODEST[name], "--out", str(result_path(name, False))])]
        print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call(cmd)
        took = time.perf_counter() - t0
        if rc != 0:
            failed.append(name)
            lines.append(f"{name}: FAILED (exit {rc}) after {took:.0f}s")
        else:
            lines.append(f"{name} ({took:.0f}s): {verdict(name, args.full)}")
    where = "bench/results/<name>.json" if args.full else "bench/results/<name>_modest.json"
    print(f"\n=== summary ({time.perf_counter() - start:.0f}s in all; figures in {where})")
    for line in lines:
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
