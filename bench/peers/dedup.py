"""DataTrove's four-stage MinHash deduplication against ``curate dedup`` on the same slice
with planted near-duplicates, one core each (issue 28's peers comparison).

    .venv/bin/python bench/peers/dedup.py --mb 16           # the recorded run
    .venv/bin/python bench/peers/dedup.py --mb 2 --reps 1   # check the harness

1. **Venv** ``bench/peers/.venvs/datatrove-minhash`` (git-ignored), made on first use:
   ``datatrove==0.10.1`` without its heavy extras, plus what its MinHash stages import
   (:data:`REQUIREMENTS`: spaCy for its English word tokenizer, ``spacy.blank("en")``;
   ``regex`` and ``tokenizers``, imported by ``datatrove.pipeline.dedup``; ``xxhash<4``,
   its ``processing`` extra's pin: with xxhash 4 its default 64-bit shingle hash fails,
   "Strings must be encoded before hashing").
2. **Data**: ``bench/dedup_throughput.py``'s corpus (``write_dedup_corpus``: ~2.5 KB
   web-like documents, 2% planted copies in the next file under another source, a
   quarter exact, the rest with up to 4% of their words replaced; each pair's exact
   5-word-shingle Jaccard in ``planted.json``) of ``--mb`` MB in
   ``/tmp/cb-peers-dedup-<mb>``.
3. **Runs**, each its own process pinned with ``taskset`` to ``--core``, one polars /
   OpenMP thread, interleaved over ``--reps`` rounds: ``datatrove`` (``datatrove_dedup.py``:
   its four stages, ``MinhashConfig(5, --dt-buckets, 8)``; by default 20 x 8 like our
   kernel's default, ``--dt-buckets 14`` is DataTrove's own) and ``ours``
   (``ours_dedup.py``: ``curate dedup`` inline, threshold ``--threshold``, from a
   ``git archive`` of HEAD, not the working tree, kept while HEAD is the same so that
   numba's cache in it is warm after the first run), the latter only when ``dedup`` is a
   registered step of this tree (the result says so otherwise).
4. **Compared**: in-step CPU seconds (per-core MB/s), removed counts, the overlap of the
   two removed id sets (which member of a pair goes differs: DataTrove keeps its
   union-find root, we the smallest id hash), recall on the planted pairs at
   Jaccard >= the threshold (a pair is found when either member is removed), removals
   among pairs below it, and removals outside every planted pair.

Writes ``bench/peers/results/dedup_<mb>mb.json`` (``--out``) and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PEERS_DIR = Path(__file__).resolve().parent
BENCH = PEERS_DIR.parent
REPO = BENCH.parent
sys.path[:0] = [str(PEERS_DIR), str(BENCH)]

import dedup_throughput as D  # noqa: E402
from run import THREAD_ENV, VENVS, log, median, rounds, run_process  # noqa: E402

VENV = "datatrove-minhash"
REQUIREMENTS = ["datatrove==0.10.1", "spacy", "orjson", "regex", "tokenizers", "xxhash<4"]
DISTS = ["datatrove", "spacy", "xxhash", "numpy"]


def ensure_venv(base_python: str) -> dict[str, Any]:
    """Create and fill DataTrove's MinHash venv once; ``{ok, versions | error}``."""
    py = VENVS / VENV / "bin" / "python"
    digest = hashlib.sha256(json.dumps(REQUIREMENTS).encode()).hexdigest()[:12]
    marker = VENVS / VENV / f".installed-{digest}"
    if not marker.exists():
        VENVS.mkdir(parents=True, exist_ok=True)
        log(f"installing {VENV}: {' '.join(REQUIREMENTS)}")
        for cmd in ([base_python, "-m", "venv", str(VENVS / VENV)],
                    [str(py), "-m", "pip", "install", "-q", *REQUIREMENTS]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                return {"ok": False, "error": f"{' '.join(cmd)}: {r.stderr.strip()[-500:]}"}
        marker.touch()
    probe = ("import importlib.metadata as m, json, sys; "
             "print(json.dumps({d: m.version(d) for d in sys.argv[1:]}))")
    r = subprocess.run([str(py), "-c", probe, *DISTS], capture_output=True, text=True)
    if r.returncode:
        return {"ok": False, "error": r.stderr.strip()[-500:]}
    return {"ok": True, "versions": json.loads(r.stdout)}


def base_interpreter() -> str:
    """The interpreter the project's venv was made from."""
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.exists():
        for line in cfg.read_text().splitlines():
            if line.startswith("executable"):
                return line.split("=", 1)[1].strip()
    return sys.executable


def freeze(work: Path) -> tuple[str, Path]:
    """``git archive HEAD`` into ``work/src``: our variant imports that snapshot, not the
    working tree other sessions edit (as ``run.py``)."""
    import shutil

    src = work / "src"
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    marker = src / ".commit"
    if marker.is_file() and marker.read_text() == commit:
        return commit, src  # the same snapshot: its numba cache kept
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    marker.write_text(commit)
    return commit, src


def compare(runs: dict[str, list[dict[str, Any]]], data: Path, threshold: float
            ) -> dict[str, Any]:
    """Removed sets of the last good run of each variant: sizes, overlap, planted recall."""
    sets = {}
    for name, rows in runs.items():
        good = [r for r in rows if "error" not in r]
        if good:
            sets[name] = set(json.loads(Path(good[-1]["removed_ids"]).read_text()))
    pairs = json.loads((data / "planted.json").read_text())["pairs"]
    planted = {p["original"] for p in pairs} | {p["copy"] for p in pairs}
    out: dict[str, Any] = {n: {"removed": len(s), "planted": D.planted_recall(
        data, sorted(s), threshold), "removed_outside_planted_pairs": len(s - planted)}
        for n, s in sets.items()}
    if len(sets) == 2:
        (na, a), (nb, b) = sets.items()
        out["both"], out[f"only_{na}"], out[f"only_{nb}"] = len(a & b), len(a - b), len(b - a)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=16)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--dt-buckets", type=int, default=20)
    parser.add_argument("--variants", default="datatrove,ours")
    parser.add_argument("--core", type=int, default=(os.cpu_count() or 1) - 1)
    parser.add_argument("--work", type=Path, default=Path("/tmp/cb-peers-dedup-work"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    venv = ensure_venv(base_interpreter())
    log(f"{VENV}: {venv}")
    data = Path(f"/tmp/cb-peers-dedup-{args.mb:g}")
    corpus = D.ensure_corpus(data, args.mb)
    data_mb = sum(p.stat().st_size for p in data.glob("part_*.jsonl")) / 1e6
    registered = D.dedup_registered()
    env = {**os.environ, **THREAD_ENV}
    env.pop("PYTHONPATH", None)
    names = [n for n, ok in (("datatrove", venv["ok"]), ("ours", registered))
             if ok and n in args.variants.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    commit, src = freeze(args.work)
    ours_env = {**env, "PYTHONPATH": str(src)}

    def command(name: str, out: Path) -> list[str]:
        if name == "datatrove":
            return [str(VENVS / VENV / "bin" / "python"), str(PEERS_DIR / "datatrove_dedup.py"),
                    "--data-dir", str(data), "--out", str(out), "--buckets",
                    str(args.dt_buckets)]
        return [sys.executable, str(PEERS_DIR / "ours_dedup.py"), "--data-dir", str(data),
                "--out", str(out), "--threshold", str(args.threshold)]

    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for i, order in enumerate(rounds(names, args.reps)):
        for n in order:
            out = args.work / f"{i}-{n}"
            r = run_process(command(n, out), ours_env if n == "ours" else env, args.core,
                            args.work / f"{i}-{n}.log")
            r["round"], r["loadavg"] = i, os.getloadavg()[0]
            runs[n].append(r)
            log(f"round {i} {n}: " + (r.get("error") or
                f"{r['step_cpu_s']:.1f} CPU s / {r['step_wall_s']:.1f} s wall, "
                f"removed {r['docs_removed']} of {r['docs_in']}"))
    summary: dict[str, Any] = {}
    for n, rows in runs.items():
        good = [r for r in rows if "error" not in r]
        if good:
            cpu = median([r["step_cpu_s"] for r in good])
            summary[n] = {"step_cpu_s": round(cpu, 2),
                          "step_wall_s": round(median([r["step_wall_s"] for r in good]), 2),
                          "process_cpu_s": round(median([r["process_cpu_s"] for r in good]), 2),
                          "mb_s_per_core": round(data_mb / cpu, 3),
                          "max_rss_mb": round(max(r["max_rss_mb"] for r in good), 1)}
            for stage in ("signatures", "buckets", "cluster", "filter"):
                if f"{stage}_cpu_s" in good[0]:
                    summary[n][f"{stage}_cpu_s"] = round(
                        median([r[f"{stage}_cpu_s"] for r in good]), 2)
    import _common as C

    result = {"data_dir": str(data), "data_mb": round(data_mb, 2), "corpus": corpus,
              "threshold": args.threshold, "dt_buckets": args.dt_buckets, "core": args.core,
              "reps": args.reps, "our_commit": commit, "datatrove_venv": venv,
              "dedup_registered": registered,
              "note": None if registered else "curate dedup is not a registered step in this "
                                               "tree: DataTrove alone",
              "summary": summary, "removed": compare(runs, data, args.threshold),
              "runs": runs}
    path = C.write_result("peers_dedup", result, args.out or PEERS_DIR / "results" /
                          f"dedup_{args.mb:g}mb.json")
    C.print_table(["variant", "MB/s/core", "step CPU s", "step wall s", "removed", "recall"],
                  [[n, s["mb_s_per_core"], s["step_cpu_s"], s["step_wall_s"],
                    result["removed"][n]["removed"], result["removed"][n]["planted"]["recall"]]
                   for n, s in summary.items()])
    if not registered:
        log("curate dedup is not a registered step yet: DataTrove alone")
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
