"""The subset's driver alone, before and after a change (issue 27): ``driver_scale.py``'s
tiny corpus, ingested once (``on_duplicate: drop``, so ids are unique), then ``curate
subset`` over the ingested shards with each ``--code`` tree in turn, each its own
process on the pool (2 workers): its own peak RSS (VmHWM) and wall time.

    .venv/bin/python bench/driver_scale_subset.py --code /tmp/before --code /tmp/after

The subset's config is driver_scale.py's (two word budgets, ``source_field``, 8 MB
partitions), its input the ingested shards instead of the decontaminated ones (the
same documents less the few the filter and decontamination drop), so the other five
steps need not run. Writes ``bench/results/driver_scale_subset[_<label>].json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import _common as C
import driver_scale as D
import yaml


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[200_000, 1_000_000])
    parser.add_argument("--code", type=Path, action="append",
                        help="a checkout to run the subset from (repeat: one run each; "
                             "default: this repository)")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default: bench/results/driver_scale_subset"
                             "[_<label>].json)")
    parser.add_argument("--label", default="")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sources", type=int, default=50)
    parser.add_argument("--docs-per-file", type=int, default=100_000)
    parser.add_argument("--partition-size", default="8MB")
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--timeout", type=float, default=7200)
    args = parser.parse_args(argv)
    args.code = args.code or [C.REPO]
    # what driver_scale's step_config reads
    args.shard_size, args.sample, args.holdout = 100_000, 20_000, 200
    results: dict[str, Any] = {}
    with C.temp_dir("driver_scale_subset") as tmp:
        for docs in sorted(args.sizes):
            work, root = tmp / str(docs), tmp / str(docs) / "out"
            raw = work / "raw"
            C.fresh(work)
            corpus = D.write_tiny_corpus(raw, docs, per_file=args.docs_per_file,
                                         sources=args.sources)
            ingest = work / "ingest.yaml"
            body = D.step_config("ingest", root, raw, work, _with(args, None), docs * 11)
            ingest.write_text(yaml.safe_dump({**body, "execution": {
                "executor": "local", "workers": args.workers,
                "checkpoint_path": str(work / "ckpt" / "ingest")}}))
            row = D.run_step(D.argv_for("ingest", root, ingest), work, None, f"{docs}-ingest",
                             args.interval, args.timeout)
            assert row["exit"] == 0, row
            runs: dict[str, Any] = {"corpus": corpus}
            for code in args.code:
                body = D.step_config("subset", root, raw, work, _with(args, code), docs * 11)
                body["input_glob"] = f"{root}/ingested/part_*.jsonl"
                body["output_dir"] = f"{root}/subset-{code.name}"
                cfg = work / f"subset-{code.name}.yaml"
                cfg.write_text(yaml.safe_dump({**body, "execution": {
                    "executor": "local", "workers": args.workers,
                    "checkpoint_path": str(work / "ckpt" / f"subset-{code.name}")}}))
                row = D.run_step(["subset", "--config", str(cfg)], work, code.resolve(),
                                 f"{docs}-subset-{code.name}", args.interval, args.timeout)
                row["code"] = D.code_commit(code)
                row["us_per_doc"] = round(row["wall_s"] / docs * 1e6, 2)
                runs[str(code)] = row
                print(f"{docs:>10,} {code.name:>16} exit {row['exit']} driver peak "
                      f"{row['driver_peak_mib']:8.1f} MiB wall {row['wall_s']:7.1f} s "
                      f"(load {row['load_1min']}) {row['curator_from']}", flush=True)
            results[str(docs)] = runs
    lo, hi = (str(s) for s in (min(args.sizes), max(args.sizes)))
    for code in args.code:
        a, b = results[lo][str(code)], results[hi][str(code)]
        per = (b["driver_peak_mib"] - a["driver_peak_mib"]) * 2**20 / (int(hi) - int(lo))
        results.setdefault("ratios", {})[str(code)] = {
            "peak": round(b["driver_peak_mib"] / a["driver_peak_mib"], 3),
            "driver_bytes_per_extra_doc": round(per, 1)}
        print(f"{code.name}: peak {lo} -> {hi} x{b['driver_peak_mib'] / a['driver_peak_mib']:.2f}"
              f", {per:.0f} driver bytes per extra document")
    name = "driver_scale_subset" + (f"_{args.label}" if args.label else "") + ".json"
    out = args.out or C.REPO / "bench" / "results" / name
    out.write_text(json.dumps({"recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "workers": args.workers, "results": results}, indent=2) + "\n")
    print(f"written {out}")
    return 0


def _with(args: argparse.Namespace, code: Path | None) -> argparse.Namespace:
    """``args`` as driver_scale's step_config reads them (``code``: langpacks' tree)."""
    return argparse.Namespace(**{**vars(args), "code": code})


if __name__ == "__main__":
    sys.exit(main())
