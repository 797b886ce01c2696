"""Decontamination scan throughput per core against the polars read+write floor, and
recall against brute force on a sample, in one run.

Data: the filter benchmark's corpus (``--mb`` MB of ingested-form JSONL under
``--data-dir``, written once; ``filter_throughput.Bench``), and a holdout of
``--holdout`` passages written here: ``--planted`` of them taken from the corpus (a
third verbatim documents, a third documents with 1% of their words replaced, a third
60-word passages of longer documents: the containment rule's case) and the rest
60-word passages of generated text that occur nowhere in the corpus.

Variants (this process, inline executor, ``POLARS_MAX_THREADS=1``: CPU seconds are per
core; medians of ``--repeat``):

- ``floor``: per file ``pl.read_ndjson`` + ``write_ndjson``;
- ``exact``: ``run_decontamination`` with the default ``candidates: exact`` (holdout
  index build, scan, verification, shards, removed/, report), and its scan phase alone
  (CPU seconds inside ``ScanStage.process``: what issue 12's target is about);
- ``minhash``: ``candidates: minhash`` (20 x 13 banding on the CPU), on ``--minhash-mb``
  MB only (it is far slower).

Recall: for a sample of training documents (every planted source and
``--sample`` others), every (document, holdout) pair is measured by brute force
(Python string-shingle sets, independent of the step's code); the pairs at or above
the thresholds are compared with what the ``exact`` run removed. Target (issue 12):
>= 30 MB/s per core for the scan, recall 1.0 at the configured threshold.

    .venv/bin/python bench/decontaminate_throughput.py                  # 500 MB
    .venv/bin/python bench/decontaminate_throughput.py --mb 64 --repeat 1
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import itertools
import json
import random
import re
import shutil
import time
import unicodedata
from pathlib import Path
from typing import Any

import _common as C
import polars as pl
from filter_throughput import MB, Bench, run_variants

from curator.decontamination.stage import ScanStage
from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from curator_demo import DemoCorpusGenerator

NAME = "decontaminate_throughput"
PASSAGE_WORDS = 60
K = 24


def write_holdout(files: list[Path], path: Path, total: int, planted: int, seed: int
                  ) -> dict[str, dict[str, Any]]:
    """The holdout file; returns ``{holdout id: {kind, source_id}}`` of the planted ones."""
    rng = random.Random(seed)
    with open(files[0], encoding="utf-8") as f:
        docs = [json.loads(line) for line in itertools.islice(f, 20000)]
    docs = [d for d in docs if len(d["text"].split()) >= 2 * PASSAGE_WORDS]
    sources = rng.sample(docs, planted)
    rows, truth = [], {}
    for i, src in enumerate(sources):
        words = src["text"].split(" ")
        kind = ("copy", "edited", "passage")[i % 3]
        if kind == "edited":
            for j in rng.sample(range(len(words)), max(1, len(words) // 100)):
                words[j] = "zephyr"
        if kind == "passage":
            at = rng.randint(0, len(words) - PASSAGE_WORDS)
            words = words[at:at + PASSAGE_WORDS]
        hid = f"h{i:05d}"
        rows.append({"id": hid, "text": " ".join(words),
                     "url": f"https://benchmark.example/item/{hid}"})
        truth[hid] = {"kind": kind, "source_id": src["id"]}
    gen = DemoCorpusGenerator(seed + 1)
    buffer: list[str] = []
    while len(rows) < total:
        if len(buffer) < PASSAGE_WORDS:
            buffer += gen.clean()["text"].split()
            continue
        hid = f"h{len(rows):05d}"
        rows.append({"id": hid, "text": " ".join(buffer[:PASSAGE_WORDS]),
                     "url": f"https://benchmark.example/item/{hid}"})
        buffer = buffer[PASSAGE_WORDS:]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return truth


class ScanClock:
    """CPU seconds spent in the scan phase (``ScanStage.process``, the inline executor
    runs it in this process): the issue's target is the scan per core, apart from the
    holdout index build and the report."""

    def __init__(self) -> None:
        self.runs: list[float] = []
        self._spent = 0.0
        original = ScanStage.process

        def timed(stage: ScanStage, task: Any) -> Any:
            t = time.process_time()
            try:
                return original(stage, task)
            finally:
                self._spent += time.process_time() - t
        ScanStage.process = timed  # type: ignore[method-assign]

    def start(self) -> None:
        self._spent = 0.0

    def stop(self) -> None:
        self.runs.append(self._spent)


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFC", text).casefold()
    text = "".join(c if (c.isalnum() or unicodedata.category(c).startswith("M")) and c != "_"
                   else " " for c in text)
    return re.sub(r"\s+", " ", text).strip()


def _shingles(text: str) -> set[str]:
    t = _norm(text)
    return {t[i:i + K] for i in range(len(t) - K + 1)}


def brute_recall(files: list[Path], holdout: Path, truth: dict[str, Any], removed: Path,
                 sample: int, seed: int, threshold: float, containment: float,
                 min_shingles: int) -> dict[str, Any]:
    """Brute force every (sampled document, holdout document) pair; compare the pairs at
    or above the thresholds with the exact run's removals."""
    rng = random.Random(seed)
    wanted = {t["source_id"] for t in truth.values()}
    with open(files[0], encoding="utf-8") as f:
        docs = [json.loads(line) for line in itertools.islice(f, 20000)]
    chosen = [d for d in docs if d["id"] in wanted]
    chosen += rng.sample([d for d in docs if d["id"] not in wanted], sample)
    hold = [json.loads(line) for line in holdout.read_text(encoding="utf-8").splitlines()]
    hsets = {h["id"]: _shingles(h["text"]) for h in hold}
    index: dict[str, set[str]] = {}
    for hid, s in hsets.items():  # an inverted index only to skip pairs sharing nothing
        for sh in s:
            index.setdefault(sh, set()).add(hid)
    t0 = time.perf_counter()
    expected: set[tuple[str, str]] = set()
    for d in chosen:
        a = _shingles(d["text"])
        touching = set().union(*(index.get(sh, ()) for sh in a)) if a else set()
        for hid in touching:
            b = hsets[hid]
            inter = len(a & b)
            if inter / len(a | b) >= threshold or (
                    inter / len(b) >= containment and len(b) >= min_shingles):
                expected.add((d["id"], hid))
    found: set[tuple[str, str]] = set()
    ids = {d["id"] for d in chosen}
    for p in sorted(removed.glob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["id"] in ids:
                found |= {(row["id"], m["holdout_id"]) for m in row["matches"]
                          if set(m["rules"]) - {"identity"}}
    hit = expected & found
    return {"sample_documents": len(chosen), "holdout_documents": len(hold),
            "pairs_brute_force": len(expected), "pairs_found": len(hit),
            "pairs_extra": len(found - expected),
            "recall": len(hit) / len(expected) if expected else None,
            "brute_force_seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-filter-data"))
    parser.add_argument("--holdout", type=int, default=10_000)
    parser.add_argument("--planted", type=int, default=300)
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--minhash-mb", type=int, default=16)
    parser.add_argument("--variants", default="floor,exact,minhash")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/results/decontaminate_throughput.json)")
    args = parser.parse_args()
    b = Bench.prepare(args.data_dir, args.mb, "cb-decon-work")
    holdout = b.work / "holdout.jsonl"
    truth = write_holdout(b.files, holdout, args.holdout, args.planted, seed=12)
    counter = itertools.count()
    last: dict[str, Any] = {}
    clock = ScanClock()

    def decon(files: list[Path], keep: bool = False, **keys: Any):
        def run() -> None:
            out = b.work / f"out-{next(counter)}"
            cfg: dict[str, Any] = {
                "train_glob": [str(f) for f in files], "holdout_glob": str(holdout),
                "output_dir": str(out), "id_field": "id", "source_field": "source",
                "execution": {"executor": "inline"}, **keys}
            clock.start()
            last["report"] = run_decontamination(DecontaminationConfig(**cfg))
            clock.stop()
            if keep:
                last["out"] = out
            else:
                shutil.rmtree(out)
        return run

    small: list[Path] = []
    small_mb = 0.0
    mb_dir = b.work / "minhash-input"
    mb_dir.mkdir()
    with open(b.files[0], "rb") as f:  # the first --minhash-mb MB, whole lines
        data = f.read(args.minhash_mb * MB)
        data = data[:data.rfind(b"\n") + 1]
    (mb_dir / "part_0.jsonl").write_bytes(data)
    small, small_mb = [mb_dir / "part_0.jsonl"], len(data) / MB
    pl.DataFrame({"a": [1]}).write_ndjson(b.work / "warm.jsonl")
    names = args.variants.split(",")
    results = run_variants({"floor": b.floor, "exact": decon(b.files)},
                           [n for n in names if n != "minhash"], args.repeat, b.data_mb, b.docs)
    report = last.get("report") or {}
    if "exact" in results and clock.runs:
        scan = sorted(clock.runs)[len(clock.runs) // 2]
        results["exact_scan_phase"] = {
            "cpu_s": scan, "runs": list(clock.runs), "mb_per_cpu_s": b.data_mb / scan,
            "x_floor": scan / results["floor"]["cpu_s"] if "floor" in results else None}
        print(f"scan phase of exact: cpu {scan:.2f} s (runs {clock.runs}), "
              f"{b.data_mb / scan:.1f} MB/s/core", flush=True)
    if "minhash" in names:
        docs_small = data.count(b"\n")
        mh = run_variants({"minhash": decon(small, candidates="minhash")}, ["minhash"], 1,
                          small_mb, docs_small)
        results["minhash"] = {**mh["minhash"], "data_mb": small_mb,
                              "expected_recall": (last.get("report") or {}).get(
                                  "parameters", {}).get("expected_recall")}
    decon(b.files[:1], keep=True)()
    recall = brute_recall(b.files, holdout, truth, last["out"] / "removed", args.sample, 3,
                          0.8, 0.8, 25)
    print("recall vs brute force:", json.dumps(recall), flush=True)
    planted_found = report.get("result", {})
    C.write_result(NAME, {"data_mb": b.data_mb, "docs": b.docs, "files": len(b.files),
                          "holdout_documents": args.holdout, "planted": args.planted,
                          "exact_result": planted_found, "recall": recall,
                          "machine_load": C.machine_load(), "results": results}, args.out)


if __name__ == "__main__":
    main()
