"""DataTrove's four-stage MinHash deduplication on one core; run by ``bench/peers/dedup.py``
in its own venv (``bench/peers/.venvs/datatrove-minhash``).

The pipeline of DataTrove's ``examples/minhash_deduplication.py``, local and one task per
stage except the buckets stage (one task per band, as DataTrove requires), each stage a
``LocalPipelineExecutor(workers=1)`` run in this process one after another:

1. ``JsonlReader`` -> ``MinhashDedupSignature`` (signatures per document);
2. ``MinhashDedupBuckets`` (sorts each band's signatures, writes candidate pairs);
3. ``MinhashDedupCluster`` (union-find over all pairs in one process; ``.remove`` ids);
4. ``JsonlReader`` -> ``MinhashDedupFilter`` (exclusion writer: the removed documents)
   -> ``JsonlWriter`` (the kept ones).

``MinhashConfig(n_grams, num_buckets, hashes_per_bucket)`` from the arguments (its own
defaults are 5, 14, 8), 64-bit xxhash shingles (its default ``HashConfig``). Prints one
JSON line: wall/CPU seconds of each stage and in all, documents in/kept/removed; the
removed ids go to ``removed_ids.json`` in ``--out``.

    python datatrove_dedup.py --data-dir DIR --glob 'part_*.jsonl' --out OUT
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from _timing import Stopwatch, count_lines, emit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--glob", default="part_*.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ngrams", type=int, default=5)
    parser.add_argument("--buckets", type=int, default=14)
    parser.add_argument("--rows", type=int, default=8)
    args = parser.parse_args()

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    config = MinhashConfig(n_grams=args.ngrams, num_buckets=args.buckets,
                           hashes_per_bucket=args.rows)
    sigs, buckets, remove = args.out / "signatures", args.out / "buckets", args.out / "remove"
    removed_dir, kept_dir = args.out / "removed", args.out / "kept"

    def reader() -> JsonlReader:
        return JsonlReader(args.data_dir, glob_pattern=args.glob, text_key="text", id_key="id")

    stages = {
        "signatures": ([reader(), MinhashDedupSignature(str(sigs), config=config)], 1),
        "buckets": ([MinhashDedupBuckets(str(sigs), str(buckets), config=config)],
                    config.num_buckets),
        "cluster": ([MinhashDedupCluster(str(buckets), str(remove), config=config)], 1),
        "filter": ([reader(),
                    MinhashDedupFilter(str(remove), exclusion_writer=JsonlWriter(
                        str(removed_dir), compression=None)),
                    JsonlWriter(str(kept_dir), compression=None)], 1),
    }
    timings: dict[str, float] = {}
    with Stopwatch() as total:
        for name, (pipeline, tasks) in stages.items():
            with Stopwatch() as sw:
                LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=1,
                                      logging_dir=str(args.out / f"logs-{name}"),
                                      skip_completed=False).run()
            timings.update(sw.fields(name))
    removed = []
    for p in sorted(removed_dir.glob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            removed.append(json.loads(line)["id"])
    kept = count_lines(kept_dir.glob("*.jsonl"))
    (args.out / "removed_ids.json").write_text(json.dumps(sorted(removed)))
    emit({**total.fields(), **timings, "config": str(config),
          "docs_in": kept + len(removed), "docs_kept": kept, "docs_removed": len(removed),
          "removed_ids": str(args.out / "removed_ids.json")})


if __name__ == "__main__":
    main()
