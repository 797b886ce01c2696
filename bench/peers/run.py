"""The peers, in the project: NeMo Curator's and DataTrove's quality filters against this
project's filter and the polars floor, and DataTrove's n-gram decontamination against
ours, on the same corpus in one interleaved session, one core each.

    .venv/bin/python bench/peers/run.py              # 500 MB, 3 repetitions (long: see README)
    .venv/bin/python bench/peers/run.py --mb 16 --reps 3 --decont-first   # the recorded run
    .venv/bin/python bench/peers/run.py --mb 4 --reps 1 --no-warmup       # check the harness

What it does, in order (bench/peers/README.md says more):

1. **Venvs.** One venv per peer under ``bench/peers/.venvs/`` (git-ignored), created
   and filled with ``pip`` on first use (``PEERS`` below: the packages and pins); a
   peer whose install fails is recorded with the error and left out of the runs.
2. **Our code, frozen.** ``git archive HEAD`` into the work directory: this project's
   variants import that snapshot, not the shared working tree (which other sessions
   edit while the benchmark runs). The result names the commit.
3. **Data.** The filter benchmark's corpus (``bench/filter_throughput.py``:
   ``--mb`` MB of demo-corpus documents in 64 MB JSONL files under ``--data-dir``,
   written once) and its approved policy; for decontamination the holdout of
   ``bench/decontaminate_throughput.py`` (``--holdout`` passages, ``--planted`` of
   them planted from the corpus, seed 12).
4. **Filters.** Each variant is its own process, pinned to one core with ``taskset``
   (``--core``), one polars / OpenMP / MKL thread: ``floor`` (polars read + write),
   ``ours`` (``run_filter``, 12 signal gates + language gate + word bounds),
   ``ours:no-language`` (the same without the language gate), ``nemo`` (NeMo
   Curator's English heuristic chain, 28 ``ScoreFilter`` stages, no language ID),
   ``datatrove`` (Gopher repetition + Gopher quality + C4 + FineWeb quality). One
   uncounted warm-up of each on a 1 MB slice, then ``--reps`` rounds, the order
   rotated and reversed from round to round. Per variant: whole-process wall and CPU
   seconds, in-step wall and CPU seconds (the step alone, as the variant's script
   times it), documents in and kept; medians; per-core MB/s and docs/s from the
   in-step CPU seconds; x the floor.
5. **Decontamination.** ``ours:decont`` (``run_decontamination``, exact candidates)
   and ``datatrove:decont`` (``NGramsDecontIndexer``'s hashing of the holdout, then
   ``NGramsDecontFilter`` over the corpus), ``--decont-reps`` interleaved rounds;
   removed counts, the overlap of the two removed sets, and recall on the planted
   passages (a planted passage is found when its source document is removed).

Writes ``bench/peers/results/peers.json`` (``peers_<mb>mb.json`` below 500 MB; ``--out``)
and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PEERS_DIR = Path(__file__).resolve().parent
BENCH = PEERS_DIR.parent
REPO = BENCH.parent
VENVS = PEERS_DIR / ".venvs"
MB = 1_000_000

#: peer -> (pip requirements, the distributions whose versions the result records)
PEERS: dict[str, tuple[list[str], list[str]]] = {
    # NeMo Curator as issue 15 measured it; CPU-only use (its CUDA wheels come along
    # with torch from PyPI but nothing here touches a GPU)
    "nemo": (["nemo-curator==1.4.0"], ["nemo-curator", "pandas", "ray"]),
    # DataTrove with its processing extras; spaCy for its English word tokenizer
    # (spacy.blank("en"), no model download), orjson for its JSONL reader, lighteval
    # for NGramsDecontIndexer (imported after the input documents are hashed)
    "datatrove": (["datatrove[processing]==0.10.1", "spacy", "orjson", "lighteval"],
                  ["datatrove", "spacy", "orjson", "lighteval"]),
}
FILTER_VARIANTS = ["floor", "ours", "ours:no-language", "nemo", "datatrove"]
DECONT_VARIANTS = ["ours:decont", "datatrove:decont"]
THREAD_ENV = {"POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "OPENBLAS_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1",
              "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
              "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
              "DO_NOT_TRACK": "1", "RAY_USAGE_STATS_ENABLED": "0"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------------------
# venvs
# --------------------------------------------------------------------------------------


def venv_python(name: str) -> Path:
    return VENVS / name / "bin" / "python"


def ensure_venv(name: str, base_python: str, reinstall: bool) -> dict[str, Any]:
    """Create and fill the peer's venv once; return ``{ok, versions | error}``."""
    reqs, dists = PEERS[name]
    digest = hashlib.sha256(json.dumps(reqs).encode()).hexdigest()[:12]
    marker = VENVS / name / f".installed-{digest}"
    log_file = VENVS / f"{name}-install.log"
    if reinstall:
        shutil.rmtree(VENVS / name, ignore_errors=True)
    if not marker.exists():
        VENVS.mkdir(parents=True, exist_ok=True)
        log(f"installing {name}: {' '.join(reqs)} (log: {log_file})")
        with open(log_file, "w") as out:
            steps = [[base_python, "-m", "venv", str(VENVS / name)],
                     [str(venv_python(name)), "-m", "pip", "install", "-q", "--upgrade", "pip"],
                     [str(venv_python(name)), "-m", "pip", "install", *reqs]]
            for cmd in steps:
                rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
                if rc != 0:
                    tail = log_file.read_text(errors="replace").strip().splitlines()[-5:]
                    return {"ok": False, "error": f"`{' '.join(cmd)}` exited {rc}: "
                                                  + " | ".join(tail)}
        marker.touch()
    probe = ("import importlib.metadata as m, json, sys; "
             "print(json.dumps({d: m.version(d) for d in sys.argv[1:]}))")
    r = subprocess.run([str(venv_python(name)), "-c", probe, *dists],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"ok": False, "error": r.stderr.strip().splitlines()[-1:]}
    return {"ok": True, "versions": json.loads(r.stdout)}


# --------------------------------------------------------------------------------------
# one measured process
# --------------------------------------------------------------------------------------


def run_process(cmd: list[str], env: dict[str, str], core: int | None, log_path: Path
                ) -> dict[str, Any]:
    """Run ``cmd`` pinned to ``core``; whole-process wall and CPU seconds (the process and
    the children it waited for), and the JSON its last stdout line holds."""
    full = (["taskset", "-c", str(core)] if core is not None else []) + cmd
    t0 = time.perf_counter()
    with open(log_path, "w") as err:
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=err, env=env, text=True)
        stdout = proc.stdout.read() if proc.stdout else ""
        _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    out: dict[str, Any] = {"process_wall_s": wall,
                           "process_cpu_s": usage.ru_utime + usage.ru_stime,
                           "max_rss_mb": usage.ru_maxrss / 1024, "returncode": proc.returncode}
    last = [line for line in stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not last:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
        out["error"] = f"exit {proc.returncode}: " + " | ".join(tail)
        return out
    out.update(json.loads(last[-1]))
    return out


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def rounds(names: list[str], reps: int) -> list[list[str]]:
    """Round i: the names rotated by i // 2, reversed on odd rounds (A B C, C B A, B C A,
    A C B, ...; with two names A B, B A, B A, A B)."""
    out = []
    for i in range(reps):
        k = (i // 2) % len(names) if names else 0
        order = names[k:] + names[:k]
        out.append(order[::-1] if i % 2 else order)
    return out


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500, help="corpus size (default 500)")
    parser.add_argument("--reps", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--decont-reps", type=int, default=1,
                        help="rounds of the decontamination pair (default 1)")
    parser.add_argument("--variants", default=",".join(FILTER_VARIANTS),
                        help="filter variants, comma-separated ('' for none)")
    parser.add_argument("--decont", default=",".join(DECONT_VARIANTS),
                        help="decontamination variants ('' for none)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="corpus dir (default /tmp/cb-peers-data-<mb>; the filter "
                             "benchmark's files are linked there when it has this size)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/cb-peers-work"))
    parser.add_argument("--holdout", type=int, default=10_000)
    parser.add_argument("--planted", type=int, default=300)
    parser.add_argument("--core", type=int, default=(os.cpu_count() or 1) - 1,
                        help="the core every variant is pinned to (default the last)")
    parser.add_argument("--base-python", default=sys.executable,
                        help="the interpreter the peers' venvs are made from")
    parser.add_argument("--dt-lighteval", action="store_true",
                        help="run NGramsDecontIndexer.run() itself, which imports lighteval "
                             "(fails with DataTrove 0.10.1 and the lighteval pip installs now: "
                             "README); default: its compute_hashes on our documents")
    parser.add_argument("--decont-first", action="store_true",
                        help="run the decontamination pair before the filter rounds")
    parser.add_argument("--summarise", action="store_true",
                        help="no runs: write the result of a stopped run from "
                             "<work>/runs-so-far.json (to --out, default <work>/peers.json)")
    parser.add_argument("--reinstall", action="store_true")
    parser.add_argument("--setup-only", action="store_true")
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/peers/results/peers.json; "
                             "peers_<mb>mb.json below 500 MB)")
    args = parser.parse_args()
    if args.summarise:
        summarise_saved(args.work, args.out or args.work / "peers.json")
        return
    started = time.time()
    base_python = os.path.realpath(args.base_python)
    # a venv's python: make the peers' venvs from the interpreter it was made from
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if args.base_python == sys.executable and cfg.exists():
        for line in cfg.read_text().splitlines():
            if line.startswith("executable"):
                base_python = line.split("=", 1)[1].strip()

    filter_names = [v for v in args.variants.split(",") if v]
    decont_names = [v for v in args.decont.split(",") if v]
    peers: dict[str, Any] = {}
    for name in PEERS:
        if any(v.split(":")[0] == name for v in filter_names + decont_names) or args.setup_only:
            peers[name] = ensure_venv(name, base_python, args.reinstall)
            log(f"{name}: {peers[name]}")
    if args.setup_only:
        return

    # our code, frozen at HEAD
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    src = work / "src"
    src.mkdir(parents=True)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    log(f"our code: HEAD {commit[:10]} archived into {src}")

    # data, the policy, the holdout: prepared with the snapshot's own bench code
    data_dir = args.data_dir or Path(f"/tmp/cb-peers-data-{args.mb}")
    link_filter_data(data_dir, args.mb)
    prep = subprocess.run(
        [sys.executable, "-c", PREPARE, str(data_dir), str(args.mb), str(work), str(args.holdout),
         str(args.planted)],
        cwd=src / "bench", env={**os.environ, "PYTHONPATH": str(src), **THREAD_ENV},
        capture_output=True, text=True)
    if prep.returncode != 0:
        sys.exit(f"data preparation failed:\n{prep.stderr}")
    data = json.loads(prep.stdout.strip().splitlines()[-1])
    files = [Path(f) for f in data["files"]]
    log(f"data: {data['data_mb']:.1f} MB, {data['docs']} documents, {len(files)} files in "
        f"{data_dir}; holdout {args.holdout} passages ({args.planted} planted)")
    warm_dir = Path(data["warm_dir"])

    env = {**os.environ, **THREAD_ENV}
    env.pop("PYTHONPATH", None)
    ours_env = {**env, "PYTHONPATH": str(src)}
    ours_py = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() \
        else sys.executable
    counter = iter(range(10**6))

    def command(variant: str, corpus: Path, corpus_files: list[Path]) -> tuple[list[str], dict]:
        out = work / "runs" / f"{next(counter):03d}-{variant.replace(':', '-')}"
        out.parent.mkdir(parents=True, exist_ok=True)
        glob = str(corpus / "part_*.jsonl")
        ours = [ours_py, str(PEERS_DIR / "ours.py")]
        if variant == "floor":
            return [*ours, "floor", "--out", str(out), "--files",
                    *map(str, corpus_files)], ours_env
        if variant in ("ours", "ours:no-language"):
            policy = data["policy"] if corpus == data_dir else str(corpus / "approved_policy.yaml")
            return [*ours, "filter", "--glob", glob, "--policy", policy,
                    "--langpacks", str(src / "curator" / "langpacks"), "--out", str(out),
                    *(["--no-language"] if variant == "ours:no-language" else [])], ours_env
        if variant == "ours:decont":
            return [*ours, "decont", "--holdout", data["holdout"], "--out", str(out),
                    "--files", *map(str, corpus_files)], ours_env
        if variant == "nemo":
            return [str(venv_python("nemo")), str(PEERS_DIR / "nemo_filter.py"),
                    "--data-dir", str(corpus), "--out", str(out)], env
        if variant == "datatrove":
            return [str(venv_python("datatrove")), str(PEERS_DIR / "datatrove_filter.py"),
                    "--data-dir", str(corpus), "--out", str(out)], env
        if variant == "datatrove:decont":
            return [str(venv_python("datatrove")), str(PEERS_DIR / "datatrove_decont.py"),
                    "--holdout", data["holdout"], "--data-dir", str(corpus), "--out",
                    str(out), *([] if args.dt_lighteval else ["--no-lighteval"])], env
        raise SystemExit(f"unknown variant {variant}")

    def runnable(variant: str) -> str | None:
        peer = variant.split(":")[0]
        if peer in PEERS and not peers.get(peer, {}).get("ok"):
            return f"not installed: {peers.get(peer, {}).get('error')}"
        return None

    def measure(names: list[str], reps: int, label: str) -> dict[str, list[dict[str, Any]]]:
        runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        live = [n for n in names if runnable(n) is None]
        for n in set(names) - set(live):
            runs[n].append({"error": runnable(n)})  # the table says why
        if not args.no_warmup:
            for n in live:
                cmd, e = command(n, warm_dir, [warm_dir / "part_0.jsonl"])
                r = run_process(cmd, e, args.core, work / f"warmup-{n.replace(':', '-')}.log")
                log(f"warm-up {n}: {r.get('error') or 'ok'} ({r['process_wall_s']:.1f} s)")
        for i, order in enumerate(rounds(live, reps)):
            for n in order:
                cmd, e = command(n, data_dir, files)
                logp = work / f"{label}-{i}-{n.replace(':', '-')}.log"
                r = run_process(cmd, e, args.core, logp)
                r["round"], r["loadavg"] = i, os.getloadavg()[0]
                runs[n].append(r)
                partial[label] = runs
                partial_path.write_text(json.dumps(partial, indent=1, default=str))
                log(f"round {i} {n}: " + (r.get("error") or
                    f"step {r['step_cpu_s']:.1f} CPU s / {r['step_wall_s']:.1f} s wall, process "
                    f"{r['process_wall_s']:.1f} s, kept {r.get('docs_kept')}, "
                    f"removed {r.get('docs_removed')}"))
                shutil.rmtree(Path(cmd[cmd.index("--out") + 1]) / "kept", ignore_errors=True)
        return runs

    import _common  # noqa: F401 - imported before the runs: it starts the machine-load clock

    out = args.out or PEERS_DIR / "results" / ("peers.json" if args.mb == 500
                                               else f"peers_{args.mb}mb.json")
    # every run as it ends, so a run stopped early keeps what it measured
    partial_path = work / "runs-so-far.json"
    partial: dict[str, Any] = {"data": data, "meta": {
        "our_commit": commit, "data_dir": str(data_dir), "data_mb": data["data_mb"],
        "docs": data["docs"], "files": len(files), "holdout": args.holdout,
        "planted": args.planted, "core": args.core, "reps": args.reps,
        "decont_reps": args.decont_reps, "peers": peers}}

    if args.decont_first:
        decont_runs = measure(decont_names, args.decont_reps, "decont") if decont_names else {}
    filter_runs = measure(filter_names, args.reps, "filter") if filter_names else {}
    if not args.decont_first:
        decont_runs = measure(decont_names, args.decont_reps, "decont") if decont_names else {}

    finish(filter_runs, decont_runs, data, out, {
        "our_commit": commit, "data_dir": str(data_dir), "data_mb": data["data_mb"],
        "docs": data["docs"], "files": len(files), "holdout": args.holdout,
        "planted": args.planted, "core": args.core, "reps": args.reps,
        "decont_reps": args.decont_reps, "peers": peers,
        "minutes": round((time.time() - started) / 60, 1)})


def finish(filter_runs: dict[str, list[dict[str, Any]]],
           decont_runs: dict[str, list[dict[str, Any]]], data: dict[str, Any], out: Path,
           meta: dict[str, Any]) -> None:
    """Medians, ratios and the decontamination comparison; the table; the result file."""
    import _common as C

    summary = {n: summarise(runs, data["data_mb"], data["docs"])
               for n, runs in {**filter_runs, **decont_runs}.items()}
    floor_cpu = (summary.get("floor") or {}).get("step_cpu_s")
    for s in summary.values():
        if floor_cpu and s.get("step_cpu_s"):
            s["x_floor"] = s["step_cpu_s"] / floor_cpu
    comparison = compare_decont(decont_runs, data)
    rows = [[n, s.get("step_cpu_s"), s.get("step_wall_s"), s.get("process_wall_s"),
             s.get("mb_per_cpu_s"), s.get("docs_per_cpu_s"),
             s.get("docs_kept") if "docs_removed" not in s else f"-{s['docs_removed']}",
             s.get("x_floor"), s.get("error", "")] for n, s in summary.items()]
    C.print_table(["variant", "step CPU s", "step wall s", "process wall s", "MB/s/core",
                   "docs/s/core", "kept (-removed)", "x floor", "error"],
                  [[c if not isinstance(c, float) else round(c, 2) for c in r] for r in rows])
    if comparison:
        print(json.dumps(comparison, indent=1))
    C.write_result("peers", {**meta, "summary": summary, "decontamination": comparison,
                             "runs": {**filter_runs, **decont_runs}}, out)


def summarise_saved(work: Path, out: Path) -> None:
    """``--summarise``: the result file from a stopped run's ``runs-so-far.json``."""
    saved = json.loads((work / "runs-so-far.json").read_text())
    meta = {**saved["meta"], "stopped_early": True,
            "rounds_completed": {n: len(r) for lab in ("filter", "decont")
                                 for n, r in saved.get(lab, {}).items()}}
    finish(saved.get("filter", {}), saved.get("decont", {}), saved["data"], out, meta)


def link_filter_data(data_dir: Path, mb: int) -> None:
    """Hard-link the filter benchmark's corpus of this size, if it is complete, instead of
    writing it again (the generator is seeded: the same bytes). Links, so another
    session's rewrite of /tmp/cb-filter-data never changes this run's files."""
    source = Path("/tmp/cb-filter-data")
    if (data_dir / f".complete-{mb}").exists() or not (source / f".complete-{mb}").exists():
        return
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    for f in source.glob("part_*.jsonl"):
        os.link(f, data_dir / f.name)
    (data_dir / f".complete-{mb}").touch()


def summarise(runs: list[dict[str, Any]], data_mb: float, docs: int) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"]} if runs else {}
    keys = ["step_cpu_s", "step_wall_s", "process_wall_s", "process_cpu_s", "max_rss_mb",
            "index_cpu_s", "index_wall_s"]
    s: dict[str, Any] = {k: median([r[k] for r in ok]) for k in keys if k in ok[0]}
    s["runs"] = len(ok)
    s["failed_runs"] = len(runs) - len(ok)
    s["step_cpu_s_each"] = [round(r["step_cpu_s"], 2) for r in ok]
    for k in ("docs_in", "docs_kept", "docs_removed", "indexer", "index_hashes", "filters",
              "executor", "blocks"):
        if k in ok[-1]:
            s[k] = ok[-1][k]
    s["mb_per_cpu_s"] = data_mb / s["step_cpu_s"]
    s["docs_per_cpu_s"] = docs / s["step_cpu_s"]
    s["mb_per_wall_s"] = data_mb / s["step_wall_s"]
    return s


def compare_decont(runs: dict[str, list[dict[str, Any]]], data: dict[str, Any]
                   ) -> dict[str, Any]:
    """Removed sets of ours and DataTrove's, their overlap, and recall on the planted."""
    truth = data["truth"]  # holdout id -> {kind, source_id}
    removed: dict[str, set[str]] = {}
    for name, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if ok:
            ids = json.loads(Path(ok[-1]["removed_ids"]).read_text())
            removed[name] = set(ids)
    if not removed:
        return {}
    out: dict[str, Any] = {}
    for name, ids in removed.items():
        per_kind: dict[str, list[int]] = {}
        for t in truth.values():
            found, total = per_kind.setdefault(t["kind"], [0, 0])
            per_kind[t["kind"]] = [found + (t["source_id"] in ids), total + 1]
        found = sum(f for f, _ in per_kind.values())
        out[name] = {"removed": len(ids), "planted_found": found, "planted": len(truth),
                     "recall_planted": found / len(truth) if truth else None,
                     "by_kind": {k: {"found": f, "planted": n} for k, (f, n) in per_kind.items()}}
    if len(removed) == 2:
        a, b = (removed[n] for n in DECONT_VARIANTS)
        out["overlap"] = {"both": len(a & b), "only_ours": len(a - b),
                          "only_datatrove": len(b - a)}
    return out


#: run in the snapshot's bench/ dir: the filter benchmark's corpus and policy, the
#: decontamination benchmark's holdout; prints one JSON line
PREPARE = """
import json, sys
from pathlib import Path
from filter_throughput import Bench, fingerprint, write_policy
from curator.langpack.loader import load_langpack
from decontaminate_throughput import write_holdout
data_dir, mb, work, holdout, planted = sys.argv[1:]
b = Bench.prepare(Path(data_dir), int(mb), "cb-peers-data-work")
hold = Path(work) / "holdout.jsonl"
truth = write_holdout(b.files, hold, int(holdout), int(planted), seed=12)
# the warm-up slice (the first MB of the first file, whole lines) and its own policy
warm = Path(work) / "warm-data"
warm.mkdir()
with open(b.files[0], "rb") as f:
    chunk = f.read(1_000_000)
(warm / "part_0.jsonl").write_bytes(chunk[:chunk.rfind(b"\\n") + 1])
pack = load_langpack(Path("..") / "curator" / "langpacks", "en")
write_policy(warm / "approved_policy.yaml", fingerprint([warm / "part_0.jsonl"]),
             pack.content_hash)
print(json.dumps({"files": [str(f) for f in b.files], "data_mb": b.data_mb, "docs": b.docs,
                  "policy": str(b.policy), "holdout": str(hold), "truth": truth,
                  "warm_dir": str(warm)}))
"""


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH))
    main()
