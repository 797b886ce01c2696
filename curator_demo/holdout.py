"""A small holdout set planted in a corpus, for ``curate decontaminate`` (docs/demo-corpus.md).

From the corpus's documents (records with a ``text`` and a ``url``) it makes holdout
documents of known kinds, each with an expected verdict for the training document it
came from:

==============  =======================================================  ===========
kind            what                                                     expected
==============  =======================================================  ===========
``copy``        a whole training document, verbatim                      removed
``edited``      a whole document with a few words replaced (J >= 0.8)    removed
``rewritten``   a whole document with many words replaced (J < 0.8)      kept
``passage``     a ~60-word passage of a long document                    removed
``same_url``    another text under a training document's URL             removed
``unseen``      generated text that occurs nowhere in the corpus         (nothing)
==============  =======================================================  ===========

Every holdout record has ``id``, ``text`` and ``url`` (a benchmark URL unless
``same_url``), so both splits are keyed by URL. ``planted`` lists, per holdout id, its
kind, the source document's URL (and id when it has one) and the expected verdict.

    python -m curator_demo.holdout --corpus demo-run/raw --out demo-run/holdout
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from curator.corpus.reading import iter_lines
from curator.io.writers import write_atomic
from curator_demo.corpus import DemoCorpusGenerator

HOLDOUT_NAME = "holdout.jsonl"
PLANTED_NAME = "planted.json"
KINDS = ("copy", "edited", "rewritten", "passage", "same_url", "unseen")
#: words replaced: an edited copy stays above Jaccard 0.8, a rewritten one falls below
EDITED_SHARE, REWRITTEN_SHARE = 0.01, 0.12
PASSAGE_WORDS = 60


def _edit(rng: random.Random, text: str, share: float) -> str:
    words = text.split(" ")
    n = max(1, round(len(words) * share))
    for i in rng.sample(range(len(words)), min(n, len(words))):
        words[i] = rng.choice(("lorem", "quantum", "zephyr", "obsidian", "marmalade"))
    return " ".join(words)


def plant(records: Iterable[dict[str, Any]], count: int = 24, seed: int = 11,
          id_field: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(holdout records, planted)`` made from ``records`` (each kind about
    ``count / 6`` times)."""
    rng = random.Random(seed)
    pool = [r for r in records if isinstance(r.get("text"), str) and isinstance(r.get("url"), str)
            and len(r["text"].split()) >= 120]
    pool.sort(key=lambda r: r["url"])
    rng.shuffle(pool)
    gen = DemoCorpusGenerator(seed + 1000)
    per = max(1, count // len(KINDS))
    holdout: list[dict[str, Any]] = []
    planted: dict[str, Any] = {}
    used = 0
    for kind in KINDS:
        for _ in range(per):
            hid = f"holdout-{len(holdout):05d}"
            url = f"https://benchmark.example/item/{len(holdout)}"
            if kind == "unseen":
                text = gen.clean()["text"]
                src = None
            else:
                if used >= len(pool):
                    break
                src = pool[used]
                used += 1
                text = src["text"]
                if kind == "edited":
                    text = _edit(rng, text, EDITED_SHARE)
                elif kind == "rewritten":
                    text = _edit(rng, text, REWRITTEN_SHARE)
                elif kind == "passage":
                    words = text.split(" ")
                    at = rng.randint(0, max(0, len(words) - PASSAGE_WORDS))
                    text = " ".join(words[at:at + PASSAGE_WORDS])
                elif kind == "same_url":
                    text = gen.clean()["text"]
                    url = src["url"]
            holdout.append({"id": hid, "text": text, "url": url, "kind": kind})
            planted[hid] = {
                "kind": kind,
                "source_url": src["url"] if src else None,
                "source_id": (str(src[id_field]) if src and id_field else None),
                "expected": {"unseen": "nothing", "rewritten": "kept"}.get(kind, "removed"),
            }
    return holdout, planted


def read_corpus(folder: Path) -> list[dict[str, Any]]:
    """The records of the plain ``.jsonl`` files of ``folder`` (lines that are not
    JSON objects are passed over)."""
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        for _, line in iter_lines(str(path)):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
    return out


def write_holdout(corpus: Path, out: Path, count: int = 24, seed: int = 11) -> dict[str, Any]:
    """Write ``holdout.jsonl`` and ``planted.json`` into ``out``; return ``planted``."""
    holdout, planted = plant(read_corpus(corpus), count, seed)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / HOLDOUT_NAME, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                             for r in holdout))
    write_atomic(out / PLANTED_NAME, json.dumps(planted, indent=2, sort_keys=True))
    return planted


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    planted = write_holdout(args.corpus, args.out, args.count, args.seed)
    print(f"wrote {len(planted)} holdout documents to {args.out / HOLDOUT_NAME}")


if __name__ == "__main__":
    main()
