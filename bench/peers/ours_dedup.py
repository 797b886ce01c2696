"""This project's ``curate dedup`` on one core, for ``bench/peers/dedup.py`` (the project's
venv): the step's CLI on the inline executor, timed around the command (its CPU seconds
are the child's); prints one JSON line like the peers' scripts, the removed ids in
``removed_ids.json`` in ``--out``.

    python ours_dedup.py --data-dir DIR --out OUT [--threshold 0.8] [--bands 20 --rows 8]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from _timing import Stopwatch, emit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--glob", default="part_*.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threshold", type=float, default=0.8)
    args = parser.parse_args()

    import polars as pl
    import yaml

    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    result = args.out / "result"
    config = {"input_glob": str(args.data_dir / args.glob), "output_dir": str(result),
              "id_field": "id", "text_field": "text", "source_field": "source",
              "threshold": args.threshold,
              "execution": {"executor": "inline",
                            "checkpoint_path": str(args.out / "checkpoint")}}
    cfg = args.out / "dedup.yaml"
    cfg.write_text(yaml.safe_dump(config))
    curate = Path(sys.executable).parent / "curate"
    with Stopwatch() as sw:
        proc = subprocess.run([str(curate), "dedup", "--config", str(cfg)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"curate dedup exited {proc.returncode}: {proc.stderr[-2000:]}")
    removed: list[str] = []
    for p in sorted((result / "removed").glob("*")):
        if p.suffix == ".jsonl" and p.stat().st_size:
            removed += pl.read_ndjson(p).get_column("id").to_list()
        elif p.suffix == ".parquet":
            removed += pl.read_parquet(p, columns=["id"]).get_column("id").to_list()
    report = json.loads((result / "dedup_report.json").read_text())
    (args.out / "removed_ids.json").write_text(json.dumps(sorted(removed)))
    emit({**sw.fields(), "docs_in": report.get("documents_in"),
          "docs_kept": report.get("documents_out"), "docs_removed": len(removed),
          "params": report.get("params"), "removed_ids": str(args.out / "removed_ids.json")})


if __name__ == "__main__":
    main()
