"""The driver's own peak RSS and the wall time per document of every step, at two or
more corpus sizes (issue 27, "Bounded driver").

    .venv/bin/python bench/driver_scale.py                          # 200,000 and 1,000,000
    .venv/bin/python bench/driver_scale.py --sizes 1000000 10000000
    .venv/bin/python bench/driver_scale.py --code /tmp/old --label before

A corpus of tiny documents (about 100 bytes a JSONL line: ``id``, ``source`` over
``--sources`` sources, ``text`` of a few words; one id in 20,000 repeated in a later
file) is written in files of ``--docs-per-file`` lines. Then every step of the flow
runs as its own process, ``python -m flows.entry <verb> --config FILE`` (the ``curate``
entry point), in flow order: ingest (``on_duplicate: drop``), profile, approve (the
demo's four thresholds, loosened for tiny documents), filter, audit (mode ``all``),
decontaminate (a holdout of copies and unseen documents), subset; on the process pool
(``executor: local``, ``--workers`` 2).

The figure is the DRIVER's own peak RSS: ``VmHWM`` of the ``curate`` process itself
(not its pool workers), written by an ``atexit`` hook of the driver from
``/proc/self/status`` and also polled from ``/proc/<pid>/status`` every ``--interval``
seconds (the larger is kept). ``--code DIR`` runs the steps with ``PYTHONPATH=DIR``
(another checkout, e.g. a git worktree of an older commit; the driver checks that
``curator`` is imported from there). ``--until STEP`` stops after that step (the 10 M
run of ingest and profile alone). The ratio of each step's peak and of its wall time
per document between the largest and the smallest size is printed, with what one more
document costs between them (driver bytes, microseconds), and written to
``bench/results/driver_scale[_<label>].json``. Target (issue 27, 1 M to 10 M documents):
peak within 1.25x, time per document within 1.3x.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _common as C
import numpy as np
import yaml

NAME = "driver_scale"
#: (CLI verb, output folder) in flow order; ``approve`` writes the policy
STEPS = [("ingest", "ingested"), ("profile", "profile"), ("approve", "policy"),
         ("filter", "filtered"), ("audit", "audit"), ("decontaminate", "decontaminated"),
         ("subset", "subset")]
#: the demo's signals (tests/flow/_support.py), thresholds loose enough for ~10 words
THRESHOLDS = {"stopword_ratio": 0.05, "unicode_alpha_numeric": 0.2,
              "repeating_duplicate_ngrams": 0.9, "boilerplate_hits": 3}
SIGNALS = ["word_count", *THRESHOLDS]
PEAK_TARGET, TIME_TARGET = 1.25, 1.3

# The driver's wrapper: record VmHWM of this very process at exit, then run the CLI.
_WRAPPER = r"""
import atexit, os, sys, json
_pid, _out = os.getpid(), os.environ["DRIVER_SCALE_STATS"]
def _hwm():
    if os.getpid() != _pid:
        return
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                fields[k] = int(v.split()[0])
    mod = sys.modules.get("curator")
    fields["curator"] = getattr(mod, "__file__", None)
    with open(_out, "w") as f:
        json.dump(fields, f)
atexit.register(_hwm)
sys.argv = ["curate", *sys.argv[1:]]
import runpy
runpy.run_module("flows.entry", run_name="__main__", alter_sys=True)
"""


# --------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------


def write_tiny_corpus(folder: Path, docs: int, *, per_file: int, sources: int,
                      dup_every: int = 20_000, seed: int = 27) -> dict[str, int]:
    """``docs`` JSONL lines of ~100 bytes in files of ``per_file``; a few repeated ids."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    vocab = C._make_vocabulary(rng, 5000)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / (ranks + 2.7) ** 1.05)
    cdf /= cdf[-1]
    written = dups = 0
    nbytes = 0
    for f, start in enumerate(range(0, docs, per_file)):
        n = min(per_file, docs - start)
        counts = rng.integers(8, 14, size=n)
        words = np.searchsorted(cdf, rng.random(int(counts.sum()))).tolist()
        src = rng.integers(0, sources, size=n).tolist()
        lines, pos = [], 0
        for i in range(n):
            k = int(counts[i])
            text = " ".join(vocab[w] for w in words[pos:pos + k])
            pos += k
            doc = start + i
            if doc >= per_file and doc % dup_every == 0:  # an id of an earlier file again
                ident, dups = f"d{doc - per_file:09d}", dups + 1
            else:
                ident = f"d{doc:09d}"
            lines.append(f'{{"id":"{ident}","source":"s{src[i]:02d}",'
                         f'"text":"{text[0].upper()}{text[1:]}."}}\n')
        data = "".join(lines).encode("ascii")
        (folder / f"part-{f:05d}.jsonl").write_bytes(data)
        nbytes += len(data)
        written += n
    return {"docs": written, "bytes": nbytes, "duplicate_ids": dups,
            "files": -(-docs // per_file)}


def write_holdout(folder: Path, corpus: Path, count: int) -> int:
    """``count`` holdout documents: half copies of corpus lines (new ids), half unseen."""
    folder.mkdir(parents=True, exist_ok=True)
    first = sorted(corpus.glob("*.jsonl"))[0]
    rows = []
    with open(first, encoding="ascii") as f:
        for i, line in enumerate(f):
            if i >= count // 2 * 97:
                break
            if i % 97 == 0:
                rec = json.loads(line)
                rows.append({"id": f"h-copy-{i}", "source": "holdout", "text": rec["text"]})
    for i in range(count - len(rows)):
        rows.append({"id": f"h-new-{i}", "source": "holdout",
                     "text": f"Unseen holdout passage number {i} about quartz and rivers."})
    (folder / "holdout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


# --------------------------------------------------------------------------------------
# The steps
# --------------------------------------------------------------------------------------


def step_config(verb: str, root: Path, raw: Path, holdout: Path, args: argparse.Namespace,
                words: int) -> dict[str, Any]:
    """One step's config, as bench/cluster_driver_io.py builds them, on local paths."""
    o = str(root)
    langpacks = str((args.code or C.REPO) / "curator" / "langpacks")
    part = {"partition_size": args.partition_size}
    policy = f"{o}/policy/approved_policy.yaml"
    return {
        "ingest": {"input": str(raw), "output_dir": f"{o}/ingested", "on_duplicate": "drop",
                   "shard_size": args.shard_size, "source_from": "source"},
        "profile": {**part, "input_glob": f"{o}/ingested/part_*.jsonl",
                    "output_dir": f"{o}/profile", "language": "en", "langpack_dir": langpacks,
                    "source_field": "source", "id_field": "id",
                    "max_total_docs": args.sample, "signals": SIGNALS},
        "filter": {**part, "input_glob": f"{o}/ingested/part_*.jsonl",
                   "output_dir": f"{o}/filtered", "id_field": "id", "source_field": "source",
                   "quality_filters": {"min_words": 3, "max_words": 100000},
                   "heuristic_filters": {"approved_policy": policy,
                                         "langpack_dir": langpacks}},
        "audit": {"target_glob": f"{o}/filtered",
                  "declared_manifest": f"{o}/filtered/run_manifest.json",
                  "ledger_glob": f"{o}/filtered/curation_ledger.json",
                  "reference_glob": f"{o}/ingested/part_*.jsonl",
                  "digest_root": f"{o}/filtered", "id_field": "id",
                  "source_field": "source", "approved_policy": policy, "mode": "all",
                  "comparison_fields": ["id", "text"], "output_dir": f"{o}/audit"},
        "decontaminate": {**part, "train_glob": f"{o}/filtered/part_*.jsonl",
                          "holdout_glob": str(holdout), "id_field": "id",
                          "source_field": "source", "output_dir": f"{o}/decontaminated"},
        "subset": {**part, "input_glob": f"{o}/decontaminated/part_*.jsonl",
                   "output_dir": f"{o}/subset", "id_field": "id", "source_field": "source",
                   "token_budgets": [max(1, words // 20), max(2, words // 5)]},
    }[verb]


def argv_for(verb: str, root: Path, config: Path) -> list[str]:
    if verb == "approve":
        sets = [x for k, v in THRESHOLDS.items() for x in ("--set", f"{k}={v}")]
        return ["approve", "--candidate", str(root / "profile" / "candidate_policies.yaml"),
                "--out", str(root / "policy" / "approved_policy.yaml"), *sets,
                "--approver", "bench", "--evidence", "bench/driver_scale.py"]
    return [verb, "--config", str(config)]


def status_kib(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "VmRSS"):
                    out[k] = int(v.split()[0])
    except (OSError, ValueError):
        pass
    return out


def run_step(argv: list[str], work: Path, code: Path | None, tag: str, interval: float,
             timeout: float) -> dict[str, Any]:
    """One ``curate`` command in a fresh process; its own peak RSS and wall time."""
    stats = work / f"{tag}.hwm.json"
    stats.unlink(missing_ok=True)
    env = {**os.environ, "DRIVER_SCALE_STATS": str(stats), "PREFECT_LOGGING_LEVEL": "WARNING"}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(x for x in (str(code), env.get("PYTHONPATH"))
                                            if x)
    err_path = work / f"{tag}.err"
    t0 = time.perf_counter()
    with open(err_path, "wb") as err:
        # cwd outside any checkout: `-c` puts the cwd first on sys.path
        proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, *argv], cwd=work,
                                stdout=subprocess.DEVNULL, stderr=err, env=env,
                                start_new_session=True)
        polled = 0
        try:
            while proc.poll() is None:
                polled = max(polled, status_kib(proc.pid).get("VmHWM", 0))
                if time.perf_counter() - t0 > timeout:
                    os.killpg(proc.pid, signal.SIGKILL)
                time.sleep(interval)
        finally:  # the bench interrupted: the step's whole session goes too
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    wall = time.perf_counter() - t0
    own = json.loads(stats.read_text()) if stats.is_file() else {}
    peak = max(polled, own.get("VmHWM", 0))
    row: dict[str, Any] = {"exit": proc.returncode, "wall_s": round(wall, 2),
                           "driver_peak_mib": round(peak / 1024, 1),
                           "polled_peak_mib": round(polled / 1024, 1),
                           "curator_from": own.get("curator"),
                           "load_1min": round(os.getloadavg()[0], 2)}
    if proc.returncode not in (0, 1):
        row["stderr_tail"] = err_path.read_text(errors="replace")[-2000:]
    return row


def run_size(docs: int, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    raw, root = work / "raw", work / "out"
    C.fresh(work)
    t0 = time.perf_counter()
    corpus = write_tiny_corpus(raw, docs, per_file=args.docs_per_file, sources=args.sources)
    holdout_n = write_holdout(work / "holdout", raw, args.holdout)
    corpus["made_s"] = round(time.perf_counter() - t0, 1)
    corpus["holdout_docs"] = holdout_n
    print(f"\n{docs:,} documents: {corpus['bytes'] / 1e6:.0f} MB in {corpus['files']} files, "
          f"{corpus['duplicate_ids']} repeated ids (made in {corpus['made_s']} s)", flush=True)
    words = docs * 11
    steps: dict[str, Any] = {}
    for verb, _ in STEPS:
        config = work / f"{verb}.yaml"
        if verb != "approve":
            execution = {"executor": "local", "workers": args.workers,
                         "checkpoint_path": str(work / "ckpt" / verb)}
            body = step_config(verb, root, raw, work / "holdout", args, words)
            config.write_text(yaml.safe_dump({**body, "execution": execution}))
        row = run_step(argv_for(verb, root, config), work, args.code, f"{docs}-{verb}",
                       args.interval, args.timeout)
        row["us_per_doc"] = round(row["wall_s"] / docs * 1e6, 2)
        steps[verb] = row
        print(f"  {verb:14s} exit {row['exit']}  driver peak {row['driver_peak_mib']:8.1f} MiB"
              f"  wall {row['wall_s']:8.1f} s  {row['us_per_doc']:7.2f} us/doc  "
              f"(load {row['load_1min']})", flush=True)
        if args.code is not None and row["curator_from"] and \
                not str(row["curator_from"]).startswith(str(args.code)):
            raise SystemExit(f"curator imported from {row['curator_from']}, not {args.code}")
        if row["exit"] not in (0, 1) or (row["exit"] == 1 and verb != "audit"):
            print(row.get("stderr_tail", ""), file=sys.stderr)
            break
        if verb == args.until:
            break
    return {"corpus": corpus, "steps": steps,
            "flow_wall_s": round(sum(r["wall_s"] for r in steps.values()), 1)}


def code_commit(code: Path) -> str | None:
    """The commit of a checkout (``git rev-parse``), or of a ``git archive`` copy whose
    ``COMMIT`` file names it."""
    if (code / "COMMIT").is_file():
        return (code / "COMMIT").read_text().strip()
    done = subprocess.run(["git", "-C", str(code), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[200_000, 1_000_000], help="comma-separated document counts")
    parser.add_argument("--code", type=Path, default=None,
                        help="run the steps from this checkout (PYTHONPATH)")
    parser.add_argument("--label", default="", help="suffix of the result file")
    parser.add_argument("--until", choices=[v for v, _ in STEPS], default=None,
                        help="stop after this step (e.g. ingest,profile only at 10 M)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sources", type=int, default=50)
    parser.add_argument("--docs-per-file", type=int, default=100_000)
    parser.add_argument("--shard-size", type=int, default=100_000, help="ingest: docs/shard")
    parser.add_argument("--partition-size", default="8MB")
    parser.add_argument("--sample", type=int, default=20_000, help="profile max_total_docs")
    parser.add_argument("--holdout", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.05, help="RSS polling period, s")
    parser.add_argument("--timeout", type=float, default=7200, help="per step, s")
    parser.add_argument("--quiet-wait", type=float, default=30)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.code is not None:
        args.code = args.code.resolve()

    C.wait_for_quiet(args.quiet_wait)
    results: dict[str, Any] = {}
    with C.temp_dir(NAME, keep=args.keep) as tmp:
        for docs in sorted(args.sizes):
            results[str(docs)] = run_size(docs, tmp / str(docs), args)
    sizes = [str(s) for s in sorted(args.sizes)]
    lo, hi = sizes[0], sizes[-1]
    ratios: dict[str, Any] = {}
    rows = []
    for verb, _ in STEPS:
        a, b = results[lo]["steps"].get(verb), results[hi]["steps"].get(verb)
        for s in sizes:
            r = results[s]["steps"].get(verb)
            if r:
                rows.append([verb, int(s), r["driver_peak_mib"], r["wall_s"], r["us_per_doc"]])
        if a and b:
            extra = int(hi) - int(lo)
            ratios[verb] = {
                "peak": round(b["driver_peak_mib"] / a["driver_peak_mib"], 3),
                "time_per_doc": round(b["us_per_doc"] / a["us_per_doc"], 3),
                # what one more document costs: the driver's bytes, the wall time
                "driver_bytes_per_extra_doc": round(
                    (b["driver_peak_mib"] - a["driver_peak_mib"]) * 2**20 / extra, 1),
                "us_per_extra_doc": round((b["wall_s"] - a["wall_s"]) / extra * 1e6, 2)}
    print(f"\nexecutor local, {args.workers} workers; code: {args.code or C.REPO}")
    C.print_table(["step", "docs", "driver peak MiB", "wall s", "us/doc"], rows)
    print(f"\n{hi} / {lo} (targets 1M->10M: peak <= {PEAK_TARGET}, time/doc <= {TIME_TARGET})")
    C.print_table(["step", "peak ratio", "time/doc ratio", "driver B/extra doc",
                   "us/extra doc"],
                  [[v, r["peak"], r["time_per_doc"], r["driver_bytes_per_extra_doc"],
                    r["us_per_extra_doc"]] for v, r in ratios.items()])
    name = f"{NAME}_{args.label}" if args.label else NAME
    C.write_result(name, {
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "code": str(args.code or C.REPO), "commit": code_commit(args.code or C.REPO),
        "targets": {"peak": PEAK_TARGET, "time_per_doc": TIME_TARGET},
        "results": results, "ratios": ratios,
    }, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
