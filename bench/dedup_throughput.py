"""Dedup throughput per core against the polars read+write floor, in one run (issue 28).

Data: ``--mb`` (default 500) MB of ingested-form JSONL (``{id, url, source, lang,
text}``: ``_common``'s web-like generator, ~2.5 KB documents, eight sources) in 64 MB
files under ``--data-dir`` (default ``/tmp/cb-dedup-data``), written once, with planted
near-duplicates (:func:`write_dedup_corpus`): 2% of the documents get a copy in the
NEXT file under another source, a quarter of the copies exact and the rest with ``k``
words replaced (``k`` up to 4% of the words: a 5-word-shingle Jaccard of about 0.6 to
1.0). ``planted.json`` beside the files lists every pair (original, copy, words
changed) and each pair's exact Jaccard of 5-word shingles (``curator.dedup``'s kernel).

Variants, each its own process in the same run (``POLARS_MAX_THREADS=1``):

- ``floor``: per file ``pl.read_ndjson`` + ``write_ndjson`` (in this process);
- ``dedup``: ``curate dedup --config`` on the process pool (``--workers``, default 2)
  or ``--executor inline``; wall seconds, the CPU seconds of the driver and every
  worker (``os.wait4`` of the whole process tree, which waits for its pool), the
  DRIVER's own peak RSS (``VmHWM`` of the ``curate`` process, polled and written at
  exit: ``bench/driver_scale.py``'s wrapper) and the planted pairs it removed.

Per-core MB/s is input MB over CPU seconds. Target (issue 28): >= 5 MB/s per core end to
end. When ``curate dedup`` is not a registered step the script says so and records the
floor alone.

    .venv/bin/python bench/dedup_throughput.py                  # 500 MB
    .venv/bin/python bench/dedup_throughput.py --mb 32 --repeat 1
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import json
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import _common as C
import numpy as np

NAME = "dedup_throughput"
FILE_BYTES = 64_000_000
SOURCES = 8
PLANT_SHARE = 0.02
EXACT_SHARE = 0.25
TARGET_MB_S = 5.0


# --------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------


def _edit(text: str, rng: np.random.Generator, vocab: list[str], k: int) -> str:
    """``text`` (pre-escaped JSON string content) with ``k`` distinct words replaced."""
    words = text.split(" ")
    for j in rng.choice(len(words), size=min(k, len(words)), replace=False).tolist():
        words[j] = vocab[int(rng.integers(len(vocab)))]
    return " ".join(words)


def write_dedup_corpus(folder: Path, mb: float, *, seed: int = 28,
                       file_bytes: int = FILE_BYTES, mean_bytes: int = 2500) -> dict[str, Any]:
    """``mb`` MB of JSONL in ``part_NNNNN.jsonl`` files with planted near-duplicates;
    writes ``planted.json`` and returns its summary. Deterministic for ``seed``."""
    folder.mkdir(parents=True, exist_ok=True)
    gen = C.CorpusGenerator(seed, mean_bytes=mean_bytes)
    rng = np.random.default_rng(seed + 1)
    total, index, pending = 0, 0, []  # pending: copy lines for the next file
    pairs: list[dict[str, Any]] = []
    target = int(mb * 1e6)
    while total < target:
        budget = min(file_bytes, target - total)
        lines, size = list(pending), sum(len(x) + 1 for x in pending)
        pending = []
        while size < budget:
            n = gen.counter
            line = gen.line().replace('"source":"bench"', f'"source":"site-{n % SOURCES}"')
            lines.append(line)
            size += len(line) + 1
            if rng.random() < PLANT_SHARE:
                _, _, text = line.partition(',"text":"')
                body = text[:-2]
                words = body.count(" ") + 1
                k = 0 if rng.random() < EXACT_SHARE else max(1, int(words * rng.uniform(0, 0.04)))
                copy_id = f"copy-{n:09d}"
                src = f"site-{(n + 1 + int(rng.integers(SOURCES - 1))) % SOURCES}"
                copy = (f'{{"id":"{copy_id}","url":"https://copies.example/{n:x}",'
                        f'"source":"{src}","lang":"en","text":"'
                        f'{_edit(body, rng, gen.vocab, k) if k else body}"}}')
                pending.append(copy)
                pairs.append({"original": f"doc-{n:09d}", "copy": copy_id, "k": k,
                              "words": words})
        order = rng.permutation(len(lines))
        data = "".join(lines[i] + "\n" for i in order)
        (folder / f"part_{index:05d}.jsonl").write_text(data, encoding="ascii")
        total += len(data)
        index += 1
    if pending:  # the last file's copies: a file of their own
        data = "".join(x + "\n" for x in pending)
        (folder / f"part_{index:05d}.jsonl").write_text(data, encoding="ascii")
        total += len(data)
    _add_jaccard(folder, pairs)
    summary = {"seed": seed, "bytes": total, "files": len(list(folder.glob("part_*.jsonl"))),
               "docs": gen.counter + len(pairs), "planted_pairs": len(pairs),
               "exact_copies": sum(1 for p in pairs if p["k"] == 0)}
    (folder / "planted.json").write_text(json.dumps({**summary, "pairs": pairs}))
    return summary


def _add_jaccard(folder: Path, pairs: list[dict[str, Any]]) -> None:
    """Each planted pair's exact Jaccard of 5-word shingles, read back from the files."""
    import polars as pl

    from curator.dedup.shingles import Shingling, jaccard, shingle_sets

    want = {p["original"] for p in pairs} | {p["copy"] for p in pairs}
    texts: dict[str, str] = {}
    for path in sorted(folder.glob("part_*.jsonl")):
        df = pl.read_ndjson(path).select("id", "text").filter(pl.col("id").is_in(list(want)))
        texts.update(zip(df["id"].to_list(), df["text"].to_list(), strict=True))
    ids = sorted(texts)
    pos = {d: i for i, d in enumerate(ids)}
    sets = shingle_sets([texts[d] for d in ids], Shingling("words", 5))
    left = np.array([pos[p["original"]] for p in pairs], np.int64)
    right = np.array([pos[p["copy"]] for p in pairs], np.int64)
    for p, j in zip(pairs, jaccard(sets, left, right).tolist(), strict=True):
        p["jaccard"] = round(j, 6)


def ensure_corpus(folder: Path, mb: float) -> dict[str, Any]:
    """The corpus in ``folder``, written unless a complete one of this size is there."""
    planted = folder / "planted.json"
    if planted.is_file():
        meta = json.loads(planted.read_text())
        if abs(meta["bytes"] - mb * 1e6) < FILE_BYTES and meta.get("mb") == mb:
            return {k: v for k, v in meta.items() if k != "pairs"}
    C.fresh(folder)
    t0 = time.perf_counter()
    summary = write_dedup_corpus(folder, mb)
    meta = json.loads(planted.read_text())
    meta["mb"] = mb
    planted.write_text(json.dumps(meta))
    print(f"corpus: {summary['bytes'] / 1e6:.0f} MB, {summary['docs']:,} docs, "
          f"{summary['planted_pairs']:,} planted pairs in {time.perf_counter() - t0:.0f} s",
          flush=True)
    return {**summary, "mb": mb}


# --------------------------------------------------------------------------------------
# The variants
# --------------------------------------------------------------------------------------


def floor(files: list[Path], out: Path) -> dict[str, float]:
    """Per file ``pl.read_ndjson`` + ``write_ndjson``: wall and CPU seconds."""
    import polars as pl

    C.fresh(out)
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    for f in files:
        pl.read_ndjson(f).write_ndjson(out / f.name)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    shutil.rmtree(out, ignore_errors=True)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def dedup_registered() -> bool:
    """Whether ``dedup`` is a registered step of this tree (its registry names the module;
    read as text, so a half-edited other step does not stop the benchmark)."""
    import curator.steps

    registry = Path(curator.steps.__file__).parent / "registry.py"
    return '"curator.steps.dedup"' in registry.read_text()


def dedup_config(data: Path, out: Path, ckpt: Path, executor: str, workers: int,
                 threshold: float) -> dict[str, Any]:
    """The step's config for this corpus (docs/dedup.md's keys; its defaults otherwise)."""
    execution: dict[str, Any] = {"executor": executor, "checkpoint_path": str(ckpt)}
    if executor == "local":
        execution["workers"] = workers
    return {"input_glob": str(data / "part_*.jsonl"), "output_dir": str(out),
            "id_field": "id", "text_field": "text", "source_field": "source",
            "threshold": threshold, "execution": execution}


def run_dedup(data: Path, work: Path, args: argparse.Namespace, tag: str) -> dict[str, Any]:
    """``curate dedup`` in a fresh process: wall, the process tree's CPU, driver peak."""
    import driver_scale as DS
    import yaml

    out, ckpt = work / f"out-{tag}", work / f"ckpt-{tag}"
    for p in (out, ckpt):
        shutil.rmtree(p, ignore_errors=True)
    cfg = work / f"{tag}.yaml"
    cfg.write_text(yaml.safe_dump(dedup_config(data, out, ckpt, args.executor, args.workers,
                                               args.threshold)))
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = DS.run_step(["dedup", "--config", str(cfg)], work, None, tag, 0.2, args.timeout)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    row["cpu_s"] = round((c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime), 2)
    row["removed"] = removed_ids(out)
    report = out / "dedup_report.json"
    if report.is_file():
        rep = json.loads(report.read_text())
        row["report"] = {k: rep.get(k) for k in (
            "documents_in", "documents_out", "removed", "components", "candidate_pairs",
            "verified_pairs", "rounds", "seconds")}
    return row


def removed_ids(out: Path) -> list[str]:
    """The ids under ``<out>/removed/`` (JSONL or Parquet shards), sorted."""
    import polars as pl

    ids: list[str] = []
    for p in sorted((out / "removed").glob("*")):
        if p.suffix == ".jsonl":
            ids += pl.read_ndjson(p).get_column("id").to_list() if p.stat().st_size else []
        elif p.suffix == ".parquet":
            ids += pl.read_parquet(p, columns=["id"]).get_column("id").to_list()
    return sorted(ids)


def planted_recall(data: Path, removed: list[str], threshold: float) -> dict[str, Any]:
    """Of the planted pairs at Jaccard >= ``threshold``: how many lost one member."""
    pairs = json.loads((data / "planted.json").read_text())["pairs"]
    gone = set(removed)
    above = [p for p in pairs if p["jaccard"] >= threshold]
    hit = sum(1 for p in above if p["original"] in gone or p["copy"] in gone)
    return {"planted_at_or_above": len(above), "found": hit,
            "recall": round(hit / len(above), 4) if above else None,
            "planted_below": len(pairs) - len(above),
            "found_below": sum(1 for p in pairs if p["jaccard"] < threshold
                               and (p["original"] in gone or p["copy"] in gone))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-dedup-data"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/cb-dedup-work"))
    parser.add_argument("--executor", choices=("local", "inline"), default="local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--timeout", type=float, default=7200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    meta = ensure_corpus(args.data_dir, args.mb)
    files = sorted(args.data_dir.glob("part_*.jsonl"))
    data_mb = sum(f.stat().st_size for f in files) / 1e6
    args.work.mkdir(parents=True, exist_ok=True)
    registered = dedup_registered()
    runs: dict[str, list[dict[str, Any]]] = {"floor": [], "dedup": []}
    for rep in range(args.repeat):
        runs["floor"].append(floor(files, args.work / "floor"))
        if registered:
            runs["dedup"].append(run_dedup(args.data_dir, args.work, args, f"dedup-{rep}"))
    results: dict[str, Any] = {}
    for name, rows in runs.items():
        ok = [r for r in rows if r.get("exit", 0) == 0]
        if not ok:
            continue
        cpu, wall = C.median([r["cpu_s"] for r in ok]), C.median([r["wall_s"] for r in ok])
        results[name] = {"cpu_s": cpu, "wall_s": wall,
                         "mb_s_per_core": round(data_mb / cpu, 2) if cpu else None}
    if results.get("dedup") and results.get("floor"):
        last = runs["dedup"][-1]
        results["dedup"].update({
            "x_floor": round(results["dedup"]["cpu_s"] / results["floor"]["cpu_s"], 2),
            "driver_peak_mib": max(r["driver_peak_mib"] for r in runs["dedup"]),
            "removed": len(last["removed"]), "report": last.get("report"),
            "planted": planted_recall(args.data_dir, last["removed"], args.threshold),
            "target_mb_s_per_core": TARGET_MB_S})
    for rows in runs.values():
        for r in rows:
            r.pop("removed", None)
    payload = {"data_mb": round(data_mb, 1), "corpus": meta, "files": len(files),
               "executor": args.executor, "workers": args.workers,
               "threshold": args.threshold, "dedup_registered": registered,
               "note": None if registered else "curate dedup is not a registered step in "
                                                "this tree: the floor alone",
               "runs": runs,
               "results": results}
    path = C.write_result(NAME, payload, args.out)
    rows = [[k, v.get("mb_s_per_core"), v["cpu_s"], v["wall_s"], v.get("x_floor", ""),
             v.get("driver_peak_mib", "")] for k, v in results.items()]
    C.print_table(["variant", "MB/s/core", "cpu s", "wall s", "x floor", "driver MiB"], rows)
    if not registered:
        print("curate dedup is not a registered step yet: the floor alone", flush=True)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
