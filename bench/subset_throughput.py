"""curate subset: token counting per core, and the whole step against the polars floor.

Data: the filter benchmark's corpus (``filter_throughput.make_data``: ``--mb`` MB of
ingested-form JSONL in 64 MB files under ``--data-dir``), written once and shared.

Variants (this process, inline executor, ``POLARS_MAX_THREADS=1``, so CPU seconds are
per core; medians of ``--repeat``):

- ``count:<tokenizer>``: the tokenizer alone over every text (``tokens/s`` and
  ``MB/s`` of text per CPU second; the JSON parsing is not timed);
- ``floor``: per file ``pl.read_ndjson`` + ``write_ndjson``;
- ``subset``: ``run_subset`` with three budgets and a cold token cache (a fresh output
  directory each run): count pass (parse, sha256, tokenize, hash ids), plan,
  ``plan.json``, write pass, read-back verification;
- ``subset:words``: the same with whitespace words;
- ``subset:warm``: ``subset`` rerun over the output of an unmeasured first run: every
  count from the token cache (a rerun, or a resume after the count pass).

Targets (issue 13): >= 1.5 M tokens/s per core with the shipped tokenizer; the whole
step within 10x of the floor.

    .venv/bin/python bench/subset_throughput.py                 # 500 MB
    .venv/bin/python bench/subset_throughput.py --mb 64 --repeat 1
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
import orjson
import polars as pl
from filter_throughput import Bench, cpu, run_variants

from curator.steps.subset import SubsetConfig, run_subset
from curator.subset.counting import PUBLISHED_SHA256, count, identify

NAME = "subset_throughput"
MB = 1_000_000


def count_only(files: list[Path], name: str) -> dict[str, float]:
    """Tokens and text bytes per CPU second of the tokenizer alone."""
    tok = identify(name, "sha256:" + PUBLISHED_SHA256[name])
    count(tok, ["warm up"])
    tokens, text_bytes, seconds = 0, 0, 0.0
    for path in files:
        texts = [orjson.loads(line)["text"] for line in path.read_bytes().splitlines()
                 if line.strip()]
        text_bytes += sum(len(t.encode()) for t in texts)
        c0 = cpu()
        tokens += sum(count(tok, texts))
        seconds += cpu() - c0
    return {"tokens": tokens, "text_mb": text_bytes / MB, "cpu_s": seconds,
            "tokens_per_cpu_s": tokens / seconds, "text_mb_per_cpu_s": text_bytes / MB / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-filter-data"))
    parser.add_argument("--tokenizer", default="cl100k_base")
    parser.add_argument("--budgets", default="10000000,30000000,60000000")
    parser.add_argument("--variants", default="floor,subset,subset:words")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/results/subset_throughput.json)")
    args = parser.parse_args()
    b = Bench.prepare(args.data_dir, args.mb, "cb-subset-work")
    budgets = [int(x) for x in args.budgets.split(",")]
    counter = itertools.count()
    reports: dict[str, Any] = {}

    def subset(tokenizer: str | None, label: str, warm: bool = False):
        def run() -> None:
            # a fresh dir: a cold token cache; ``warm``: the dir of a run made before
            out = b.work / ("warm" if warm else f"out-{next(counter)}")
            tok = None if tokenizer is None else {
                "name": tokenizer, "revision": "sha256:" + PUBLISHED_SHA256[tokenizer]}
            report = run_subset(SubsetConfig(
                input_glob=b.glob, output_dir=str(out), id_field="id", source_field="source",
                token_budgets=budgets, tokenizer=tok, execution={"executor": "inline"}))
            reports[label] = {k: report[k] for k in ("unit", "token_cache", "corpus")} | {
                "tiers": [{k: t[k] for k in ("budget", "document_count", "achieved_tokens",
                                             "token_shortfall")} for t in report["tiers"]]}
            if not warm:
                shutil.rmtree(out)
        return run

    variants = {"floor": b.floor, "subset": subset(args.tokenizer, "subset"),
                "subset:words": subset(None, "subset:words"),
                "subset:warm": subset(args.tokenizer, "subset:warm", warm=True)}
    if "subset:warm" in args.variants.split(","):
        variants["subset:warm"]()  # the cold run that fills the cache, not measured
    pl.DataFrame({"a": [1]}).write_ndjson(b.work / "warm.jsonl")
    counted = count_only(b.files, args.tokenizer)
    print(f"count:{args.tokenizer}  {counted['tokens_per_cpu_s'] / 1e6:.2f} M tokens/s/core  "
          f"{counted['text_mb_per_cpu_s']:.1f} MB/s/core of text "
          f"({counted['tokens']:,} tokens)", flush=True)
    results = run_variants(variants, args.variants.split(","), args.repeat, b.data_mb, b.docs)
    for name, r in results.items():
        if name in reports:
            tokens = reports[name]["corpus"]["total_tokens"]
            r["units_per_cpu_s"] = tokens / r["cpu_s"]
    C.write_result(NAME, {"data_mb": b.data_mb, "docs": b.docs, "files": len(b.files),
                          "tokenizer": args.tokenizer, "budgets": budgets,
                          f"count:{args.tokenizer}": counted, "reports": reports,
                          "machine_load": C.machine_load(), "results": results}, args.out)


if __name__ == "__main__":
    main()
