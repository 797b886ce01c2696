"""This project's side of the peers benchmark; run by ``bench/peers/run.py``.

Runs in the project's venv, one variant per process (so each has a whole-process time
like a peer's), and prints one JSON line: the step's wall and CPU seconds (imports and
set-up excluded), documents read and kept (or removed).

- ``floor``: per file ``pl.read_ndjson`` + ``write_ndjson`` (what any step costs at least);
- ``filter``: ``run_filter`` as ``bench/filter_throughput.py`` configures it (12 signal
  gates of a realistic approved policy, the language gate, word bounds; inline
  executor); ``--no-language`` drops the language gate (``language_codes: []``);
- ``decont``: ``run_decontamination`` (``candidates: exact``, inline), as
  ``bench/decontaminate_throughput.py`` configures it; also lists the removed ids.
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import json
from pathlib import Path
from typing import Any

from _timing import Stopwatch, emit
from _timing import count_lines as lines


def floor(files: list[Path], out: Path) -> dict[str, Any]:
    import polars as pl

    out.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"a": [1]}).write_ndjson(out / "warm.jsonl")
    with Stopwatch() as sw:
        for f in files:
            pl.read_ndjson(f).write_ndjson(out / "floor.jsonl")
    return {**sw.fields(), "docs_in": lines(files), "docs_kept": lines(files)}


def filt(glob: str, policy: Path, langpacks: Path, out: Path, language: bool,
         langid_max_chars: int) -> dict[str, Any]:
    from curator.steps.filter import FilterConfig, run_filter

    config: dict[str, Any] = {
        "input_glob": glob, "output_dir": str(out), "id_field": "id",
        "source_field": "source", "execution": {"executor": "inline"},
        "quality_filters": {"min_words": 20, "max_words": 100000,
                            "langid_max_chars": langid_max_chars},
        "heuristic_filters": {"approved_policy": str(policy), "langpack_dir": str(langpacks)},
    }
    if not language:
        config["language_codes"] = []
    with Stopwatch() as sw:
        manifest = run_filter(FilterConfig(**config))
    return {**sw.fields(), "docs_in": manifest["input"]["row_count"],
            "docs_kept": manifest["output"]["row_count"],
            "docs_kept_lines": lines(sorted(out.glob("part_*.jsonl")))}


def decont(files: list[Path], holdout: Path, out: Path) -> dict[str, Any]:
    from curator.steps.decontamination import DecontaminationConfig, run_decontamination

    config = {"train_glob": [str(f) for f in files], "holdout_glob": str(holdout),
              "output_dir": str(out / "result"), "id_field": "id", "source_field": "source",
              "execution": {"executor": "inline"}}
    with Stopwatch() as sw:
        report = run_decontamination(DecontaminationConfig(**config))
    removed: dict[str, list[str]] = {}
    for p in sorted((out / "result" / "removed").glob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            removed[row["id"]] = sorted({m["holdout_id"] for m in row["matches"]})
    (out / "removed_ids.json").write_text(json.dumps(removed))
    return {**sw.fields(), "docs_in": lines(files),
            "docs_removed": len(removed), "result": report.get("result"),
            "removed_ids": str(out / "removed_ids.json")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["floor", "filter", "decont"])
    parser.add_argument("--files", nargs="*", type=Path, default=[])
    parser.add_argument("--glob", default="")
    parser.add_argument("--policy", type=Path)
    parser.add_argument("--langpacks", type=Path)
    parser.add_argument("--no-language", action="store_true")
    parser.add_argument("--langid-max-chars", type=int, default=500)
    parser.add_argument("--holdout", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.mode == "floor":
        result = floor(args.files, args.out)
    elif args.mode == "filter":
        result = filt(args.glob, args.policy, args.langpacks, args.out, not args.no_language,
                      args.langid_max_chars)
    else:
        result = decont(args.files, args.holdout, args.out)
    emit(result)


if __name__ == "__main__":
    main()
