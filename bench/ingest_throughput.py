"""Ingest throughput against the floor of reading and writing the same JSONL with polars.

Data: ``--size-mb`` (default 512) of JSONL in ``--files`` files (default 16), made from
``curator.demo.iter_clean_lines`` (the demo corpus's content kinds and proportions,
without the line-level noise a plain JSONL reader would choke on): one block of
``size/files`` MB is generated once, and every file is that block with its URLs put
on another host (``https://r007.<site>/...``), so every record has its own id. The data
is kept under ``--data-dir`` (default ``/tmp/cb-ingest-data``) and reused by every
repetition and by later runs (``--regenerate`` to rebuild).

Variants, each run ``--reps`` times (default 3) in a fresh subprocess, interleaved:

- ``floor``: one process, per file ``pl.read_ndjson`` + ``write_ndjson`` + fsync (every
  curator writer fsyncs, so the floor does too); ``floor_nofsync`` without the fsync;
- ``inline``: ``run_ingest`` with the inline executor (one process);
- ``local``: ``run_ingest`` with ``LocalExecutor(workers=--workers)``.

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
    from curator.demo import iter_clean_lines

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
    report = run_ingest(cfg, ex)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    assert report["balance"]["ok"] and report["documents_rejected"] == 0, report
    out = work / "out"
    return {"wall": wall, "cpu": cpu, "docs": report["documents_accepted"],
            "bytes_in": bytes_in,
            "bytes_out": sum(p.stat().st_size for p in out.glob("part_*.jsonl")),
            "processes": 1 if executor == "inline" else workers,
            "partitions": report["partitions"]}


def run_measure_subprocess(variant: str, data: Path, work: Path, workers: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", variant,
           "--data-dir", str(data), "--work-dir", str(work), "--workers", str(workers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
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
    """One partition through the parse and shard phases, piece by piece, no profiler;
    then the proposed alternatives (``what-if``) on the same bytes, each checked to give
    the same staging table or the same shard bytes as the current code."""
    import hashlib

    import orjson
    import polars as pl
    import pyarrow.parquet as pq

    from curator.ingest.dedup import resolve_duplicates
    from curator.ingest.parse_stage import write_jsonl_atomic
    from curator.ingest.records import (
        IdentitySpec,
        PartitionRecords,
        _kept_json,
        iter_lines,
        minted_id,
        parse_jsonl,
    )
    from curator.ingest.shards import jsonl_lines, kept_frame
    from curator.io.readers import read_bytes
    from curator.io.writers import write_atomic

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = sorted(str(p) for p in data.glob("part-*.jsonl"))[:limit_files]
    spec = IdentitySpec(source_from="source", keep_fields=("url",))
    clock = _Clock()

    # ---- the current code, phase by phase
    blobs = [clock("parse: read file bytes", read_bytes, f) for f in files]
    records = PartitionRecords(spec)

    def parse_all() -> None:
        for i, (f, blob) in enumerate(zip(files, blobs, strict=True)):
            parse_jsonl(blob, records, path=f, file_index=i)

    clock("parse: parse_jsonl loop (all of the below)", parse_all)
    lines = [raw for blob in blobs for _, _, raw in iter_lines(blob, 1, 0)]
    clock("  iter_lines (split, strip)", _loop, lambda b: list(iter_lines(b, 1, 0)), blobs)
    objs = clock("  orjson.loads", lambda: [orjson.loads(raw) for raw in lines])
    clock("  minted_id (json.dumps + sha256)", _loop, lambda o: minted_id(o, spec), objs)
    clock("    of which json.dumps", _loop, lambda o: json.dumps(
        [o.get("url"), o.get("text")], ensure_ascii=False, sort_keys=True,
        separators=(",", ":"), default=str), objs)
    clock("  _kept_json (orjson)", _loop, lambda o: _kept_json(o, spec.keep_fields), objs)
    from curator.ingest import records as records_module

    if hasattr(records_module, "_has_float"):  # the exact-integer re-read check, if present
        fields = records_module._value_fields(spec)
        has_float = records_module._has_float
        clock("  float check on id/kept fields (_has_float)", _loop,
              lambda o: any(has_float(o.get(f)) for f in fields), objs)
    table = clock("parse: pa.table(columns)", records.table)
    buf = io.BytesIO()
    clock("parse: pq.write_table snappy (staging)", pq.write_table, table, buf,
          compression="snappy")
    staging = work / "p.parquet"
    clock("parse: write_atomic + fsync (staging)", write_atomic, staging, buf.getvalue())
    clock("parse: write rejections", write_jsonl_atomic, work / "r.jsonl", records.rejections)
    dedup = clock("dedup: resolve_duplicates (polars)", resolve_duplicates,
                  [("p", str(staging))], "drop", files, "jsonl")
    frame = clock("shards: read staging parquet", kept_frame, staging, dedup.decisions)
    payload = clock("shards: jsonl_lines (json_encode, to_list, join, encode)", jsonl_lines,
                    frame)
    clock("shards: write_atomic + fsync", write_atomic, work / "part_0.jsonl", payload)

    # ---- the floor on the same bytes
    def floor() -> None:
        for f in files:
            pl.read_ndjson(f).write_ndjson(work / "floor.jsonl")

    clock("floor: polars read_ndjson + write_ndjson", floor)

    # ---- what-if: proposed changes, measured on the same data, checked for equality
    def orjson_id(o: dict[str, Any]) -> str:
        return hashlib.sha256(orjson.dumps([o.get("url"), o.get("text")])).hexdigest()

    clock("what-if: minted id via orjson.dumps + sha256", _loop, orjson_id, objs)
    assert all(orjson_id(o) == minted_id(o, spec) for o in objs[:2000])
    fast = clock("what-if: columnar parse (polars + sha256 over Arrow buffers)",
                 _columnar_parse, blobs)
    assert fast.equals(table), "the columnar prototype must give the same staging table"
    clock("what-if: staging parquet uncompressed, no dictionary", pq.write_table, table,
          io.BytesIO(), compression="none", use_dictionary=["source", "encoding"])
    fast_lines = clock("what-if: shard lines via write_csv(quote_style=never)",
                       _shard_lines_csv, frame)
    assert fast_lines == payload, "the write_csv prototype must give the same shard bytes"
    return {"files": len(files), "bytes": sum(len(b) for b in blobs), "docs": len(lines),
            "seconds": clock.rows()}


def _columnar_parse(blobs: list[bytes]) -> Any:
    """Prototype of a columnar fast path for a clean partition (every line a JSON object
    with string ``text``, no blank lines): polars parses, polars JSON-encodes the id
    payload, sha256 runs over slices of the Arrow buffer. Dirty partitions would keep
    the per-line loop."""
    import hashlib

    import numpy as np
    import polars as pl
    import pyarrow as pa

    def enc(col: str) -> pl.Expr:  # the JSON form of a string column, as json.dumps gives it
        return pl.struct(pl.col(col)).struct.json_encode().str.slice(len(col) + 4).str.head(-1)

    tables = []
    for i, data in enumerate(blobs):
        df = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None)
        nl = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
        starts = np.concatenate([[0], nl[:-1] + 1])
        out = df.select(
            pl.concat_str([pl.lit("["), enc("url").fill_null("null"), pl.lit(","),
                           enc("text"), pl.lit("]")]).alias("payload"),
            pl.struct("url").struct.json_encode().alias("kept"),
            "text", pl.col("source").fill_null("unknown"),
        )
        arr = out["payload"].to_arrow().cast(pa.large_string())
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[
            arr.offset: arr.offset + len(arr) + 1].tolist()
        values = memoryview(arr.buffers()[2])
        sha = hashlib.sha256
        ids = [sha(values[a:b]).hexdigest() for a, b in itertools.pairwise(offsets)]
        n = df.height
        tables.append(pa.table({
            "ord_file": pa.array(np.full(n, i, dtype=np.int32)),
            "ord_pos": pa.array(starts.astype(np.int64)),
            "line": pa.array(np.arange(1, n + 1, dtype=np.int64)),
            "id": pa.array(ids, pa.string()),
            "text": out["text"].to_arrow().cast(pa.string()),
            "source": out["source"].to_arrow().cast(pa.string()),
            "kept": out["kept"].to_arrow().cast(pa.string()),
            "encoding": pa.array(["utf-8"] * n, pa.string()),
        }))
    return pa.concat_tables(tables).combine_chunks()


def _shard_lines_csv(df: Any) -> bytes:
    """Prototype: the same shard lines as ``jsonl_lines``, written by polars' CSV writer
    (one column, no header, no quoting: JSON lines hold no raw newlines)."""
    import polars as pl

    core = pl.struct("text", "id", "source").struct.json_encode()
    line = (pl.when(pl.col("kept").str.len_bytes() > 2)
            .then(pl.concat_str(core.str.head(-1), pl.lit(","), pl.col("kept").str.tail(-1)))
            .otherwise(core))
    buf = io.BytesIO()
    df.select(line.alias("line")).write_csv(buf, include_header=False, quote_style="never")
    return buf.getvalue()


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
                r = run_measure_subprocess(v, args.data_dir, tmp / v, args.workers)
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
