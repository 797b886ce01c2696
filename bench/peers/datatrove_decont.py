"""DataTrove's n-gram decontamination against our holdout, on one core; run by
``bench/peers/run.py`` in DataTrove's own venv.

Offline: no Hugging Face download. The holdout passages are written as a local JSONL
dataset in the form ``NGramsDecontIndexer`` reads from its input (``text`` = the
label, ``metadata.query`` = the prompt, empty here, ``metadata.task``), and indexed
by its own ``NGramsDecontIndexer`` (12-grams of words, its default
``NGramsDecontConfig``); then ``NGramsDecontFilter`` streams the training corpus
(``JsonlReader`` -> filter with an exclusion writer -> ``JsonlWriter``) on
``LocalPipelineExecutor(tasks=1, workers=1)``. Prints one JSON line: index and scan
wall/CPU seconds, documents read, removed; the removed ids go to ``removed_ids.json``.

The indexer, after reading its input, also asks lighteval's task registry for the
tasks named in ``lighteval_tasks``: we name none. If lighteval is not importable,
``--no-lighteval`` runs the indexer's own code on the documents and writes the same
index file it would (``compute_hashes`` per document, one ``<task>.index.hashes``
array), and the result says so.

    python datatrove_decont.py --holdout H.jsonl --data-dir DIR --glob 'part_*.jsonl' --out OUT
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _timing import Stopwatch, count_lines, emit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--holdout", type=Path, required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--glob", default="part_*.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-lighteval", action="store_true")
    args = parser.parse_args()

    import numpy as np
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.decont import (
        NGramsDecontConfig,
        NGramsDecontFilter,
        NGramsDecontIndexer,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    # the holdout as a dataset the indexer reads: label = the passage, no prompt
    hold_dir = args.out / "holdout"
    hold_dir.mkdir(parents=True, exist_ok=True)
    with open(args.holdout, encoding="utf-8") as f, \
            open(hold_dir / "holdout.jsonl", "w", encoding="utf-8") as g:
        for line in f:
            row = json.loads(line)
            g.write(json.dumps({"id": row["id"], "text": row["text"], "query": "",
                                "task": "holdout"}) + "\n")
    index_dir = args.out / "index"
    config = NGramsDecontConfig()
    indexer_mode = "NGramsDecontIndexer.run (lighteval_tasks=[])"

    with Stopwatch() as index_sw:
        reader = JsonlReader(str(hold_dir), glob_pattern="holdout.jsonl", text_key="text",
                             id_key="id")
        if args.no_lighteval:
            # the indexer's own hashing, without its lighteval import (see the docstring)
            NGramsDecontIndexer._requires_dependencies = []
            indexer = NGramsDecontIndexer(str(index_dir), lighteval_tasks=[], config=config)
            hashes: dict[str, set[int]] = {}
            for doc in reader.run():
                hashes.setdefault(doc.metadata.get("task", "input"), set()).update(
                    indexer.compute_hashes(doc.text, doc.metadata.get("query")))
            index_dir.mkdir(parents=True, exist_ok=True)
            for task, values in hashes.items():
                np.array(sorted(values), dtype=config.hash_config.np_descr).tofile(
                    index_dir / f"{task}.index.hashes")
            indexer_mode = "NGramsDecontIndexer.compute_hashes (no lighteval)"
        else:
            LocalPipelineExecutor(
                pipeline=[reader, NGramsDecontIndexer(str(index_dir), lighteval_tasks=[],
                                                      config=config)],
                tasks=1, workers=1, logging_dir=str(args.out / "logs-index"), skip_completed=False,
            ).run()
    n_hashes = sum(p.stat().st_size // 8 for p in index_dir.glob("*.index.hashes"))

    removed_dir, kept_dir = args.out / "removed", args.out / "kept"
    executor = LocalPipelineExecutor(
        pipeline=[
            JsonlReader(args.data_dir, glob_pattern=args.glob, text_key="text", id_key="id"),
            NGramsDecontFilter(str(index_dir), config=config,
                               exclusion_writer=JsonlWriter(str(removed_dir), compression=None)),
            JsonlWriter(str(kept_dir), compression=None),
        ],
        tasks=1, workers=1, logging_dir=str(args.out / "logs-scan"), skip_completed=False,
    )
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    load_word_tokenizer("en").word_tokenize("Warm up the tokenizer.")
    with Stopwatch() as scan_sw:
        executor.run()
    removed = []
    for p in sorted(removed_dir.glob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            removed.append(json.loads(line)["id"])
    kept = count_lines(kept_dir.glob("*.jsonl"))
    (args.out / "removed_ids.json").write_text(json.dumps(removed))
    emit({**scan_sw.fields(), **index_sw.fields("index"),
          "index_hashes": n_hashes, "indexer": indexer_mode,
          "docs_in": kept + len(removed), "docs_kept": kept, "docs_removed": len(removed),
          "removed_ids": str(args.out / "removed_ids.json")})


if __name__ == "__main__":
    main()
