"""DataTrove's FineWeb-style quality chain on one core; run by ``bench/peers/run.py``.

Runs in DataTrove's own venv (``bench/peers/.venvs/datatrove``), never the project's:
``JsonlReader`` -> ``GopherRepetitionFilter`` -> ``GopherQualityFilter`` ->
``C4QualityFilter(filter_no_terminal_punct=False)`` -> ``FineWebQualityFilter`` ->
``JsonlWriter``, the order and settings of the FineWeb recipe after its language
filter (no language ID here), on ``LocalPipelineExecutor(tasks=1, workers=1)`` (one
worker runs in this process). Prints one JSON line: the step's wall and CPU seconds
(``executor.run()`` only: imports and set-up excluded), documents read and kept.

    python datatrove_filter.py --data-dir DIR --glob 'part_*.jsonl' --out OUT
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _timing import Stopwatch, count_lines, emit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--glob", default="part_*.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    kept_dir = args.out / "kept"
    executor = LocalPipelineExecutor(
        pipeline=[
            JsonlReader(args.data_dir, glob_pattern=args.glob, text_key="text", id_key="id"),
            GopherRepetitionFilter(),
            GopherQualityFilter(),
            C4QualityFilter(filter_no_terminal_punct=False),
            FineWebQualityFilter(),
            JsonlWriter(str(kept_dir), compression=None),
        ],
        tasks=1, workers=1, logging_dir=str(args.out / "logs"), skip_completed=False,
    )
    # the word tokenizer (spaCy's blank English) loads lazily on the first document:
    # warm it here so the step's time is the documents' time
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    load_word_tokenizer("en").word_tokenize("Warm up the tokenizer.")
    with Stopwatch() as sw:
        executor.run()
    kept = count_lines(kept_dir.glob("*.jsonl"))
    stats = json.loads((args.out / "logs" / "stats.json").read_text())
    docs_in = next((s["stats"].get("documents", {}).get("total") for s in stats
                    if "READER" in s.get("name", "").upper()), None)
    # each block's own time (DataTrove's timers, wall seconds) and drops
    blocks = {s["name"]: {"seconds": round(s["time_stats"]["total"], 2),
                          "dropped": s["stats"].get("dropped", {}).get("total")
                          if isinstance(s["stats"].get("dropped"), dict)
                          else s["stats"].get("dropped")}
              for s in stats if "time_stats" in s}
    emit({**sw.fields(), "docs_in": docs_in, "docs_kept": kept, "blocks": blocks})


if __name__ == "__main__":
    main()
