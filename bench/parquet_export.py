"""``output_format: jsonl+parquet``: what the Parquet copy costs, against polars floors.

Data: the filter benchmark's corpus (``filter_throughput.make_data``: ``--mb`` MB of
ingested-form JSONL in 64 MB files under ``--data-dir``), written once and shared.

Variants (this process, ``POLARS_MAX_THREADS=1``, so CPU seconds are per core; medians
of ``--repeat``):

- ``floor``: per file ``pl.read_ndjson`` + ``write_ndjson`` (what every step costs at
  least; the throughput benchmarks' floor);
- ``polars_parquet``: per file ``pl.read_ndjson`` + ``write_parquet`` (zstd): the
  conversion with polars' own reader, which does not parse as the kernel does;
- ``export``: ``curator.io.parquet_export.export_parquet`` over the same files: orjson
  parse, a column per field with its kind checked, one schema, zstd, sha256.

What a step with ``output_format: jsonl+parquet`` adds is ``export`` (it runs once, on
the driver, after the step's passes).

    .venv/bin/python bench/parquet_export.py                  # 500 MB
    .venv/bin/python bench/parquet_export.py --mb 64 --repeat 3
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import shutil
from pathlib import Path

import _common as C
import polars as pl
from filter_throughput import Bench, run_variants

from curator.io.parquet_export import export_parquet

NAME = "parquet_export"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-filter-data"))
    parser.add_argument("--variants", default="floor,polars_parquet,export")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/results/parquet_export.json)")
    args = parser.parse_args()
    b = Bench.prepare(args.data_dir, args.mb, "cb-parquet-work")
    shards = b.work / "shards"  # the corpus files as a step's output dir holds them
    shards.mkdir()
    for f in b.files:
        (shards / f.name).symlink_to(f)
    linked = sorted(shards.glob("part_*.jsonl"))
    blocks: list[dict[str, object]] = []

    def polars_parquet() -> None:
        for f in b.files:
            pl.read_ndjson(f).write_parquet(b.work / "floor.parquet", compression="zstd")

    def export() -> None:
        shutil.rmtree(shards / "parquet", ignore_errors=True)
        blocks.append(export_parquet(shards, linked))

    variants = {"floor": b.floor, "polars_parquet": polars_parquet, "export": export}
    results = run_variants(variants, args.variants.split(","), args.repeat, b.data_mb, b.docs)
    copy_mb = sum(p.stat().st_size for p in (shards / "parquet").glob("*.parquet")) / 1e6 \
        if (shards / "parquet").is_dir() else None
    C.write_result(NAME, {"data_mb": b.data_mb, "docs": b.docs, "files": len(b.files),
                          "parquet_mb": copy_mb,
                          "columns": blocks[-1]["columns"] if blocks else None,
                          "machine_load": C.machine_load(), "results": results}, args.out)


if __name__ == "__main__":
    main()
