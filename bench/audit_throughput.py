"""Audit throughput per core against the polars read+write floor, in one run.

Data: the filter benchmark's corpus (``bench/filter_throughput.py``: ``--mb`` MB of
ingested-form JSONL in 64 MB files under ``--data-dir``), filtered once here with the
word gate (20-100000 words; no language gate and no policy, so the filter's cost does
not dominate the setup) into ``<work>/filtered``: shards, ``rejected/``, manifest and
ledger. The audit then reads the target (the filtered shards), the reference (the
corpus) and the rejected records: about twice the corpus's bytes.

Variants (inline executor, ``POLARS_MAX_THREADS=1``, so CPU seconds are per core;
medians of ``--repeat``):

- ``floor``: per corpus file ``pl.read_ndjson`` + ``write_ndjson``;
- ``audit:<mode>``: ``run_audit`` in ``integrity``, ``digest``, ``containment``
  (``comparison_fields: [id, text]``) and ``all``, each with the manifest, the ledger,
  the reference, and an approved policy naming the corpus's fingerprint (so the scan
  recomputes it over the reference).

MB/s per core are of the corpus (the reference), as for the filter. Target (issue 11):
``all`` within 3x of the floor.

    .venv/bin/python bench/audit_throughput.py                 # 500 MB
    .venv/bin/python bench/audit_throughput.py --mb 64 --repeat 1
    .venv/bin/python bench/audit_throughput.py --variants floor,audit:all --interleave
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import itertools
import shutil
from pathlib import Path
from typing import Any

import _common as C
import polars as pl
from filter_throughput import MB, Bench, run_variants

from curator.steps.audit import AuditConfig, run_audit
from curator.steps.filter import FilterConfig, run_filter

NAME = "audit_throughput"
MODES = ("integrity", "digest", "containment", "all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-filter-data"))
    parser.add_argument("--variants", default="floor," + ",".join(f"audit:{m}" for m in MODES))
    parser.add_argument("--interleave", action="store_true",
                        help="run every variant once per repetition, in turn (a noisy minute "
                             "on a shared machine lands on all of them)")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/results/audit_throughput.json)")
    args = parser.parse_args()
    b = Bench.prepare(args.data_dir, args.mb, "cb-audit-work")
    data_mb, docs, work, policy, glob, floor = (
        b.data_mb, b.docs, b.work, b.policy, b.glob, b.floor)
    filtered = work / "filtered"
    run_filter(FilterConfig(input_glob=glob, output_dir=str(filtered), id_field="id",
                            source_field="source", language_codes=[],
                            quality_filters={"min_words": 20, "max_words": 100000},
                            execution={"executor": "inline"}))
    scanned_mb = (data_mb + sum(p.stat().st_size for p in filtered.rglob("*.jsonl")) / MB)

    counter = itertools.count()

    def audit(mode: str):
        def run() -> None:
            out = work / f"audit-{next(counter)}"
            keys: dict[str, Any] = {
                "target_glob": str(filtered), "output_dir": str(out), "mode": mode,
                "declared_manifest": str(filtered / "run_manifest.json"),
                "ledger_glob": str(filtered / "curation_ledger.json"),
                "reference_glob": glob, "approved_policy": str(policy),
                "digest_root": str(filtered), "execution": {"executor": "inline"}}
            if mode in ("containment", "all"):
                keys["comparison_fields"] = ["id", "text"]
            report = run_audit(AuditConfig(**keys))
            assert report["passed"], report["findings"]
            shutil.rmtree(out)
        return run

    variants = {"floor": floor, **{f"audit:{m}": audit(m) for m in MODES}}
    pl.DataFrame({"a": [1]}).write_ndjson(work / "warm.jsonl")
    results = run_variants(variants, args.variants.split(","), args.repeat, data_mb, docs,
                           interleave=args.interleave)
    C.write_result(NAME, {"data_mb": data_mb, "scanned_mb": scanned_mb, "docs": docs,
                          "files": len(b.files), "machine_load": C.machine_load(),
                          "results": results}, args.out)


if __name__ == "__main__":
    main()
