"""Ingest throughput against the floor of reading and writing the same JSONL with polars.

Data: ``--size-mb`` (default 512) of JSONL in ``--files`` files (default 16), made from
``curator_demo.iter_clean_lines`` (the demo corpus's content kinds and proportions,
without the line-level noise a plain JSONL reader would choke on): one block of
``size/files`` MB is generated once, and every file is that block with its URLs put
on another host (``https://r007.<site>/...``), so every record has its own id. The data
is kept under ``--data-dir`` (default ``/tmp/cb-ingest-data``) and reused by every
repetition and by later runs (``--regenerate`` to rebuild).

Variants, each run ``--reps`` times (default 3) in a fresh subprocess, interleaved:

- ``floor``: one process, per file ``pl.read_ndjson`` + ``write_ndjson`` + fsync (every
  curator writer fsyncs, so the floor does too); ``floor_nofsync`` without the fsync;
- ``inline``: ``run_ingest`` with the inline executor (one process);
- ``local``: ``run_ingest`` with ``LocalExecutor(workers=--workers)``;
- ``inline@base``, ``local@base``: the same with the code of ``--baseline DIR`` (a copy of
  the repository, e.g. before a change), so before and after are measured in one run.

Ingest runs with the demo's settings (minted ids, ``source_from: source``,
``keep_fields: [url]``, ``on_duplicate: drop``, default 64 MB partitions and 50,000-row
shards) and a checkpoint, as a user would run it. Reported per variant (medians): wall
seconds, MB/s and docs/s, CPU seconds (user+sys of the process and its workers), and
two per-core rates: MB/s divided by the worker processes (1 for floor and inline), and
MB per CPU second (polars is one process but multi-threaded, so this is the fair one).
The target: ingest within 2x of the floor per core.

Then a profile of the ingest hot path (``--profile-mb``, default 64: one partition):
the parse and shard work timed component by component without a profiler, and the
top functions of a cProfile run of the whole inline ingest.

    .venv/bin/python bench/ingest_throughput.py                       # full: 512 MB, 3 reps
    .venv/bin/python bench/ingest_throughput.py --size-mb 64 --files 4 --reps 1   # quick
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _common as C

NAME = "ingest_throughput"
TARGET_RATIO = 2.0
MB = 1_000_000
URL_PREFIX = b'{"url": "https://'


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


def ensure_data(folder: Path, size_mb: int, files: int, seed: int, regenerate: bool
                ) -> dict[str, Any]:
    """Generate (or reuse) ``files`` JSONL files of ``size_mb / files`` MB each."""
    from curator_demo import iter_clean_lines

    spec = {"size_mb": size_mb, "files": files, "seed": seed, "layout": 1}
    stamp = folder / "DATA.json"
    if not regenerate and stamp.is_file():
        meta = json.loads(stamp.read_text())
        if meta.get("spec") == spec and all((folder / f).is_file() for f in meta["names"]):
            print(f"reusing {meta['bytes'] / MB:.0f} MB of JSONL in {folder}")
            return meta
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    per_file = size_mb * MB // files
    lines, size = [], 0
    for line in iter_clean_lines(seed):
        raw = line.encode("utf-8") + b"\n"
        lines.append(raw)
        size += len(raw)
        if size >= per_file:
            break
    block = b"".join(lines)
    names, total = [], 0
    for i in range(files):
        name = f"part-{i:03d}.jsonl"
        data = block.replace(URL_PREFIX, URL_PREFIX + b"r%03d." % i)
        (folder / name).write_bytes(data)
        names.append(name)
        total += len(data)
    meta = {"spec": spec, "names": names, "bytes": total, "docs": len(lines) * files,
            "docs_per_file": len(lines), "seconds_to_generate": time.perf_counter() - started}
    stamp.write_text(json.dumps(meta, indent=2))
    print(f"generated {total / MB:.0f} MB ({meta['docs']} docs) in {folder} "
          f"in {meta['seconds_to_generate']:.0f} s")
    return meta


# --------------------------------------------------------------------------------------
# One measurement (run in a fresh subprocess: `--measure VARIANT`)
# --------------------------------------------------------------------------------------


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for workers
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _ingest_config(data: Path, work: Path, executor: str, workers: int, limit: int | None = None
                   ) -> Any:
    from curator.steps.ingest import IngestConfig

    files = sorted(str(p) for p in data.glob("part-*.jsonl"))[:limit]
    return IngestConfig(
        input=files, output_dir=str(work / "out"), on_duplicate="drop", source_from="source",
        keep_fields=["url"],
        execution={"executor": executor, "workers": workers,
                   "checkpoint_path": str(work / "ckpt")},
    )


def measure(variant: str, data: Path, work: Path, workers: int) -> dict[str, Any]:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = sorted(data.glob("part-*.jsonl"))
    bytes_in = sum(p.stat().st_size for p in files)
    if variant.startswith("floor"):
        import polars as pl

        pl.DataFrame({"a": [1]}).write_ndjson(io.BytesIO())  # load polars' engine first
        cpu0, t0 = _cpu(), time.perf_counter()
        docs = 0
        for path in files:
            df = pl.read_ndjson(path)
            target = work / path.name
            df.write_ndjson(target)
            if variant == "floor":
                fd = os.open(target, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
            docs += df.height
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        out_bytes = sum(p.stat().st_size for p in work.glob("*.jsonl"))
        return {"wall": wall, "cpu": cpu, "docs": docs, "bytes_in": bytes_in,
                "bytes_out": out_bytes, "processes": 1}
    from curator.steps.ingest import run_ingest
    from executors import make_executor

    executor = "inline" if variant == "inline" else "local"
    cfg = _ingest_config(data, work, executor, workers)
    ex = make_executor(executor, workers)
    cpu0, t0 = _cpu(), time.perf_counter()
    with ex:  # closed inside the timing, as the flow does: workers' CPU is then counted
        report = run_ingest(cfg, ex)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    assert report["balance"]["ok"] and report["documents_rejected"] == 0, report
    out = work / "out"
    return {"wall": wall, "cpu": cpu, "docs": report["documents_accepted"],
            "bytes_in": bytes_in,
            "bytes_out": sum(p.stat().st_size for p in out.glob("part_*.jsonl")),
            "processes": 1 if executor == "inline" else workers,
            "partitions": report["partitions"]}


def run_measure_subprocess(variant: str, data: Path, work: Path, workers: int,
                           baseline: Path | None = None) -> dict[str, Any]:
    """One measurement in a fresh process; ``<variant>@base`` runs ``<variant>`` with the
    code tree ``baseline`` (a copy of the repository) first on ``PYTHONPATH``."""
    env = dict(os.environ)
    if variant.endswith("@base"):
        if baseline is None:
            raise SystemExit(f"{variant} needs --baseline DIR")
        variant = variant.removesuffix("@base")
        env["PYTHONPATH"] = os.pathsep.join([str(baseline), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", variant,
           "--data-dir", str(data), "--work-dir", str(work), "--workers", str(workers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------
# Profile of the hot path
# --------------------------------------------------------------------------------------


class _Clock:
    """Wall and CPU seconds (all threads of this process) per named piece of work."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def __call__(self, name: str, fn: Any, *args: Any, **kw: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        value = fn(*args, **kw)
        self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - w
        self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c
        return value

    def rows(self) -> dict[str, dict[str, float]]:
        return {k: {"wall": round(self.wall[k], 3), "cpu": round(self.cpu[k], 3)}
                for k in self.wall}


def _loop(fn: Any, items: Any) -> None:
    for item in items:
        fn(item)


def components(data: Path, work: Path, limit_files: int) -> dict[str, Any]:
    """One partition through the parse, duplicates and shard phases, piece by piece, no
    profiler; then the alternatives (``what-if``) on the same bytes, each checked to
    give the same bytes as the current code."""
    import hashlib

    import orjson
    import polars as pl

    from curator.artifacts import file_digest
    from curator.corpus.reading import map_lines, read_bytes, split_lines
    from curator.ingest import records as rec
    from curator.ingest.dedup import resolve_duplicates
    from curator.ingest.parse_stage import atomic_file, records_path, staging_bytes
    from curator.ingest.shards import _ends, shard_pieces, write_shard
    from curator.io.writers import write_atomic

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = sorted(str(p) for p in data.glob("part-*.jsonl"))[:limit_files]
    spec = rec.IdentitySpec(source_from="source", keep_fields=("url",))
    clock = _Clock()

    # ---- the current code, phase by phase
    clock("parse: map the files (what ingest does)", _loop, lambda f: map_lines(f)[0], files)
    blobs = [clock("(read file bytes, for the pieces below)", read_bytes, f) for f in files]
    staging = work / "p.parquet"

    def parse_all() -> rec.PartitionRecords:
        with atomic_file(records_path(staging)) as lines:
            records = rec.PartitionRecords(spec, lines=lines)
            for i, (f, blob) in enumerate(zip(files, blobs, strict=True)):
                rec.parse_jsonl(blob, records, path=f, file_index=i)
        return records

    records = clock("parse: parse_jsonl loop + records file (all of the below)", parse_all)
    views = [v for blob in blobs for _, v in split_lines(blob)]
    clock("  line split (the kernel's split_lines; parse_jsonl inlines a find loop)", _loop,
          lambda b: list(split_lines(b)), blobs)
    objs = clock("  orjson.loads", lambda: [orjson.loads(v) for v in views])
    clock("  minted_id (orjson payload + sha256; the loop inlines this)", _loop,
          lambda o: rec.minted_id(o, spec), objs)
    clock("    of which payload orjson.dumps + sha256", _loop, lambda o: hashlib.sha256(
        orjson.dumps([o.get("url"), o.get("text")])).hexdigest(), objs)
    clock("  record_line (orjson; the loop formats the line instead)", _loop,
          lambda o: rec.record_line(o["text"], "0" * 64, o["source"], {"url": o.get("url")}),
          objs)
    fields = rec._value_fields(spec)
    clock("  float check on id/kept fields", _loop, lambda o: any(
        type(v) is not str and v is not None and rec._has_float(v)
        for v in map(o.get, fields)), objs)
    table = clock("parse: staging table (zero-copy)", records.table)
    clock("parse: staging parquet + write_atomic", lambda: write_atomic(
        staging, staging_bytes(table)))
    dedup = clock("dedup: resolve_duplicates (polars)", resolve_duplicates,
                  [("p", str(staging))], "drop", files, "jsonl")
    shard = work / "part_0.jsonl"
    clock("shards: write_shard (copy_file_range + sha256 + fsync)", lambda: write_shard(
        shard, [(records_path(staging), shard_pieces(_ends(staging), 0, records.accepted,
                                                     [], {}))]))
    assert dedup.decisions.is_empty()
    clock("(report: file_digest of the shard; write_shard now gives it)", file_digest, shard)

    # ---- the floor on the same bytes
    def floor() -> None:
        for f in files:
            pl.read_ndjson(f).write_ndjson(work / "floor.jsonl")

    clock("floor: polars read_ndjson + write_ndjson", floor)

    # ---- what-if: a columnar parse (polars) of this clean partition, same shard bytes
    fast = clock("what-if: columnar parse + encode (polars, sha256 over Arrow buffers)",
                 _columnar_lines, blobs)
    assert fast == shard.read_bytes(), "the columnar prototype must give the same shard bytes"
    return {"files": len(files), "bytes": sum(len(b) for b in blobs), "docs": len(views),
            "seconds": clock.rows()}


def _columnar_lines(blobs: list[bytes]) -> bytes:
    """Prototype of a columnar fast path for a clean partition (every line a JSON object
    with string ``text`` and ``url``, no blank lines): polars parses, polars JSON-encodes
    the id payloads (``struct.json_encode`` escapes as ``json.dumps`` does), sha256 runs
    over slices of the Arrow buffer, and polars writes the output lines."""
    import hashlib

    import polars as pl
    import pyarrow as pa

    def enc(col: str) -> pl.Expr:  # the JSON form of a string column, as json.dumps gives it
        return pl.struct(pl.col(col)).struct.json_encode().str.slice(len(col) + 4).str.head(-1)

    out = io.BytesIO()
    for data in blobs:
        df = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None)
        payload = df.select(pl.concat_str([pl.lit("["), enc("url").fill_null("null"),
                                           pl.lit(","), enc("text"), pl.lit("]")]))
        arr = payload.to_series().to_arrow().cast(pa.large_string())
        offsets = memoryview(arr.buffers()[1]).cast("q")[arr.offset: arr.offset + len(arr) + 1]
        values = memoryview(arr.buffers()[2])
        sha = hashlib.sha256
        ids = [sha(values[a:b]).hexdigest() for a, b in itertools.pairwise(offsets)]
        df.with_columns(id=pl.Series(ids), source=pl.col("source").fill_null("unknown")).select(
            pl.struct("text", "id", "source", "url").struct.json_encode()
        ).write_csv(out, include_header=False, quote_style="never")
    return out.getvalue()


def cprofile_ingest(data: Path, work: Path, limit_files: int, top: int = 25) -> dict[str, Any]:
    from curator.steps.ingest import run_ingest

    shutil.rmtree(work, ignore_errors=True)
    cfg = _ingest_config(data, work, "inline", 1, limit=limit_files)
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.enable()
    run_ingest(cfg)
    prof.disable()
    wall = time.perf_counter() - start
    stats = pstats.Stats(prof)
    rows = []
    for (file, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{Path(file).name}:{line}({func})" if line else func
        rows.append({"function": where, "calls": ncalls, "tottime": round(tottime, 3),
                     "cumtime": round(cumtime, 3)})
    rows.sort(key=lambda r: r["tottime"], reverse=True)
    return {"wall_under_profiler": round(wall, 3), "top_by_tottime": rows[:top]}


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def summarise(variant: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    wall = C.median([r["wall"] for r in runs])
    cpu = C.median([r["cpu"] for r in runs])
    r0 = runs[0]
    mb = r0["bytes_in"] / MB
    return {
        "variant": variant, "runs": runs, "wall_s": wall, "cpu_s": cpu,
        "mb_per_s": mb / wall, "docs_per_s": r0["docs"] / wall,
        "processes": r0["processes"],
        "mb_per_s_per_process": mb / wall / r0["processes"],
        "docs_per_s_per_process": r0["docs"] / wall / r0["processes"],
        "mb_per_cpu_s": mb / cpu, "docs_per_cpu_s": r0["docs"] / cpu,
        "cores_busy": cpu / wall,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size-mb", type=int, default=512)
    p.add_argument("--files", type=int, default=16)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--variants", default="floor,floor_nofsync,inline,local")
    p.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-ingest-data"))
    p.add_argument("--work-dir", type=Path, default=None)
    p.add_argument("--regenerate", action="store_true")
    p.add_argument("--baseline", type=Path, default=None,
                   help="a copy of the repository: variants named <variant>@base run its code")
    p.add_argument("--profile-mb", type=int, default=64,
                   help="size of the profiled subset (whole files); 0 = no profile")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--measure", help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.measure:  # child mode: one measurement, JSON on the last stdout line
        load = os.getloadavg()[0]
        result = measure(args.measure, args.data_dir, args.work_dir, args.workers)
        result["loadavg_1min"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        print(json.dumps(result))
        return

    meta = ensure_data(args.data_dir, args.size_mb, args.files, args.seed, args.regenerate)
    variants = args.variants.split(",")
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with C.temp_dir("ingest-bench") as tmp:
        for rep in range(args.reps):
            for v in variants:
                r = run_measure_subprocess(v, args.data_dir, tmp / v, args.workers,
                                           args.baseline)
                runs[v].append(r)
                print(f"rep {rep + 1}/{args.reps} {v:14s} {r['wall']:7.2f} s wall, "
                      f"{r['cpu']:7.2f} s cpu, load average {r['loadavg_1min']}")
                shutil.rmtree(tmp / v, ignore_errors=True)
        profile: dict[str, Any] = {}
        if args.profile_mb:
            per_file = meta["bytes"] / args.files
            n = max(1, round(args.profile_mb * MB / per_file))
            profile["components"] = components(args.data_dir, tmp / "components", n)
            profile["cprofile"] = cprofile_ingest(args.data_dir, tmp / "cprofile", n)
    summary = {v: summarise(v, rs) for v, rs in runs.items()}
    floor = summary.get("floor")
    rows = []
    for v, s in summary.items():
        ratio = floor["mb_per_cpu_s"] / s["mb_per_cpu_s"] if floor else None
        ratio_proc = floor["mb_per_s_per_process"] / s["mb_per_s_per_process"] if floor else None
        s["floor_over_this_per_cpu_s"] = ratio
        s["floor_over_this_per_process"] = ratio_proc
        rows.append([v, s["wall_s"], s["mb_per_s"], s["docs_per_s"], s["cpu_s"],
                     s["cores_busy"], s["mb_per_s_per_process"], s["mb_per_cpu_s"],
                     s["docs_per_cpu_s"], ratio_proc, ratio])
    print(f"\n{meta['bytes'] / MB:.0f} MB, {meta['docs']} docs, {args.files} files, "
          f"medians of {args.reps}")
    C.print_table(["variant", "wall s", "MB/s", "docs/s", "cpu s", "cores busy",
                   "MB/s/proc", "MB/cpu-s", "docs/cpu-s", "floor/x per proc",
                   "floor/x per cpu-s"], rows)
    if profile:
        comp = profile["components"]
        print(f"\ncomponents on {comp['bytes'] / MB:.0f} MB ({comp['docs']} docs):")
        C.print_table(["piece of work", "wall s", "cpu s"],
                      [[k, v["wall"], v["cpu"]] for k, v in comp["seconds"].items()])
        print(f"\ncProfile of an inline ingest of the same files "
              f"({profile['cprofile']['wall_under_profiler']} s under the profiler), "
              "top by own time:")
        C.print_table(["function", "calls", "tottime", "cumtime"],
                      [[r["function"][:70], r["calls"], r["tottime"], r["cumtime"]]
                       for r in profile["cprofile"]["top_by_tottime"][:15]])
    C.write_result(NAME, {
        "data": {k: meta[k] for k in ("bytes", "docs", "docs_per_file")}
        | {"files": args.files, "dir": str(args.data_dir)},
        "reps": args.reps, "workers": args.workers, "target_ratio": TARGET_RATIO,
        "summary": summary, "profile": profile,
    }, args.out)


if __name__ == "__main__":
    main()
