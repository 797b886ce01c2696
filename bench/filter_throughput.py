"""Filter throughput per core against the polars read+write floor, in one run.

Data: ``--mb`` (default 500) MB of ingested-form JSONL (``{text, id, source, url}``,
the demo generator's content kinds) in 64 MB files under ``--data-dir`` (default
``/tmp/cb-filter-data``), written once.

Variants (all in this process, inline executor, ``POLARS_MAX_THREADS=1``, so CPU
seconds are per core; medians of ``--repeat``):

- ``floor``: per file ``pl.read_ndjson`` + ``write_ndjson``;
- ``filter``: ``run_filter`` with a realistic approved policy (12 signal gates), the
  language gate (fastText lid.176.ftz, ``langid_max_chars`` as configured) and word
  bounds: fingerprint pass + filter pass + manifest and ledger;
- ``gates:<name>``: one gate family alone (language, words, policy), to show where
  the time goes.

The policy is written by the benchmark for the generated corpus (its fingerprint is
computed here with the profile's code), not measured by a profile: the subject is
the filter's speed. Target (issue 5): >= 40 MB/s per core end to end, within 6x of
the floor.

    .venv/bin/python bench/filter_throughput.py                 # 500 MB
    .venv/bin/python bench/filter_throughput.py --mb 64 --repeat 1
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import hashlib
import itertools
import json
import resource
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common as C
import polars as pl
import yaml

from curator.corpus.fingerprint import RowDigest, fingerprint_key, text_digest
from curator.langpack.loader import load_langpack
from curator.signals.registry import IMPL_VERSION
from curator.steps.filter import FilterConfig, run_filter
from curator_demo import iter_clean_lines

NAME = "filter_throughput"
MB = 1_000_000
FILE_BYTES = 64 * MB
#: a realistic policy: 12 signal gates at loose, profile-like thresholds
POLICY = [
    {"signal": "stopword_ratio", "min": 0.0952381},
    {"signal": "unicode_alpha_numeric", "max": 0.301587},
    {"signal": "non_alpha_numeric", "max": 0.984127},
    {"signal": "repeating_duplicate_ngrams", "max": 0.507937},
    {"signal": "boilerplate_hits", "max": 3},
    {"signal": "words_with_alphabets", "min": 0.650794},
    {"signal": "symbol_to_word", "max": 0.1111111},
    {"signal": "max_word_length", "max": 1000},
    {"signal": "numbers_ratio", "max": 0.301587},
    {"signal": "white_space", "max": 0.301587},
    {"signal": "urls_ratio", "max": 0.301587},
    {"signal": "mean_word_length", "min": 3, "max": 10},
]


def make_data(folder: Path, mb: int) -> list[Path]:
    marker = folder / f".complete-{mb}"
    if marker.exists():
        return sorted(folder.glob("part_*.jsonl"))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    lines = iter_clean_lines(2024)
    total, index = 0, 0
    while total < mb * MB:
        size, chunk = 0, []
        for line in lines:
            rec = json.loads(line)
            out = json.dumps({"text": rec["text"], "id": hashlib.sha256(
                line.encode()).hexdigest(), "source": rec["source"], "url": rec.get("url")},
                ensure_ascii=False)
            chunk.append(out)
            size += len(out.encode()) + 1
            if size >= FILE_BYTES or total + size >= mb * MB:
                break
        (folder / f"part_{index}.jsonl").write_text("\n".join(chunk) + "\n", encoding="utf-8")
        total += size
        index += 1
    marker.touch()
    return sorted(folder.glob("part_*.jsonl"))


def fingerprint(files: list[Path]) -> str:
    digest = RowDigest()
    for path in files:
        with open(path, "rb") as f:
            for line in f:
                rec = json.loads(line)
                digest.add(fingerprint_key(rec["id"], text_digest(rec["text"])))
    return digest.digest


def write_policy(path: Path, corpus_fp: str, pack_hash: str) -> None:
    doc = {
        "schema_version": 1, "approved": True,
        "corpus": {"glob": "bench", "document_count": None, "fingerprint": corpus_fp},
        "langpack": {"id": "curator-en", "language_tag": "en", "version": "bench",
                     "content_hash": pack_hash},
        "signals_impl_version": IMPL_VERSION,
        "profile_digest": "sha256:" + "0" * 64,
        "approval": {"approver": "bench/filter_throughput.py", "date": "2026-12-02",
                     "method": "manual", "evidence": "benchmark policy, not a curation"},
        "thresholds": POLICY,
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(fn, repeat: int) -> dict[str, float]:
    cpus, walls = [], []
    for _ in range(repeat):
        c0, w0 = cpu(), time.perf_counter()
        fn()
        cpus.append(cpu() - c0)
        walls.append(time.perf_counter() - w0)
    return {"cpu_s": C.median(cpus), "wall_s": C.median(walls), "runs": cpus}


def measure_interleaved(variants: dict[str, Any], names: list[str],
                        repeat: int) -> dict[str, dict[str, Any]]:
    """Each repetition runs every variant once, in turn (so a noisy minute on a shared
    machine lands on all of them, not on one): medians per variant."""
    cpus: dict[str, list[float]] = {n: [] for n in names}
    walls: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(repeat):
        for name in names:
            c0, w0 = cpu(), time.perf_counter()
            variants[name]()
            cpus[name].append(cpu() - c0)
            walls[name].append(time.perf_counter() - w0)
            print(f"  rep {rep + 1}/{repeat} {name:22} cpu {cpus[name][-1]:7.2f} s", flush=True)
    return {n: {"cpu_s": C.median(cpus[n]), "wall_s": C.median(walls[n]), "runs": cpus[n]}
            for n in names}


@dataclass
class Bench:
    """What a throughput benchmark over the generated corpus starts from: the shards,
    their size, a fresh work dir, an approved policy for them, and the polars floor."""

    files: list[Path]
    data_mb: float
    docs: int
    work: Path
    policy: Path
    glob: str

    @classmethod
    def prepare(cls, data_dir: Path, mb: int, work_name: str) -> Bench:
        files = make_data(data_dir, mb)
        work = data_dir.parent / work_name
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        pack = load_langpack(C.REPO / "curator" / "langpacks", "en")
        policy = work / "approved_policy.yaml"
        write_policy(policy, fingerprint(files), pack.content_hash)
        return cls(files, sum(p.stat().st_size for p in files) / MB,
                   sum(p.read_bytes().count(b"\n") for p in files), work, policy,
                   str(data_dir / "part_*.jsonl"))

    def floor(self) -> None:
        """Read and write the same data with polars: what any step costs at least."""
        for f in self.files:
            pl.read_ndjson(f).write_ndjson(self.work / "floor.jsonl")


def run_variants(variants: dict[str, Any], names: list[str], repeat: int, data_mb: float,
                 docs: int, interleave: bool = False) -> dict[str, dict[str, Any]]:
    """Measure each named variant (median CPU and wall seconds over ``repeat`` runs), print
    per-core throughput and, with a ``floor`` variant, each one's multiple of it."""
    results: dict[str, dict[str, Any]] = (
        measure_interleaved(variants, names, repeat) if interleave else {})
    for name in names:
        if not interleave:
            results[name] = measure(variants[name], repeat)
        r = results[name]
        r["mb_per_cpu_s"] = data_mb / r["cpu_s"]
        r["docs_per_cpu_s"] = docs / r["cpu_s"]
        print(f"{name:22} cpu {r['cpu_s']:7.2f} s  wall {r['wall_s']:7.2f} s  "
              f"{r['mb_per_cpu_s']:7.1f} MB/s/core  {r['docs_per_cpu_s']:9.0f} docs/s/core",
              flush=True)
    paired = interleave and "floor" in results
    if "floor" in results:
        floor = results["floor"]
        for r in results.values():
            r["x_floor"] = r["cpu_s"] / floor["cpu_s"]
            if paired:  # each repetition against the floor run next to it: the median
                r["x_floor_paired"] = statistics.median(
                    a / b for a, b in zip(r["runs"], floor["runs"], strict=True))
    C.print_table(["variant", "CPU s", "MB/s/core", "docs/s/core", "x floor",
                   *(["x floor (paired)"] if paired else [])],
                  [[k, round(v["cpu_s"], 2), round(v["mb_per_cpu_s"], 1),
                    round(v["docs_per_cpu_s"]), round(v.get("x_floor", 0), 2),
                    *([round(v["x_floor_paired"], 2)] if paired else [])]
                   for k, v in results.items()])
    return results


def langid_sweep(files: list[Path], chars: list[int | None], every: int) -> dict[str, Any]:
    """Language ID on every ``every``-th document of the corpus at several
    ``langid_max_chars``: CPU seconds, and how many top labels and EN-gate decisions
    (label ``en``, score >= 0.3) differ from reading the whole text."""
    from curator.corpus.langid import FastTextLangId
    from curator.filter.gates import label_matches

    texts = []
    for path in files:
        with open(path, "rb") as f:
            texts += [json.loads(line)["text"] for line in itertools.islice(f, 0, None, every)]
    mb = sum(len(t.encode()) for t in texts) / MB
    out: dict[str, Any] = {"docs": len(texts), "mb": mb, "settings": {}}
    base = None
    for n in chars:
        model = FastTextLangId.open(None, n)
        c0 = cpu()
        labels, scores = model.predict(texts)
        seconds = cpu() - c0
        gate = [label_matches(lb, ["EN"]) and s >= 0.3 for lb, s in zip(labels, scores,
                                                                        strict=True)]
        if base is None:
            base = (labels, gate)
        row = {"cpu_s": seconds, "mb_per_cpu_s": mb / seconds,
               "labels_changed": sum(a != b for a, b in zip(labels, base[0], strict=True)),
               "en_gate_changed": sum(a != b for a, b in zip(gate, base[1], strict=True)),
               "en_gate_kept": sum(gate)}
        out["settings"][str(n)] = row
        print(f"langid_max_chars {n!s:>5}: {seconds:6.2f} CPU s  {row['mb_per_cpu_s']:6.1f} "
              f"MB/s  labels changed {row['labels_changed']:5}  EN-gate decisions changed "
              f"{row['en_gate_changed']:4} of {len(texts)}", flush=True)
    return out


def signals_ab(files: list[Path], docs: int, rounds: int) -> dict[str, Any]:
    """The signals lever (issue 15): the policy's 12 signals and ``word_count`` over the
    first ``docs`` documents in batches of 2048 (the filter's), the character-class
    counts by the numpy passes or by the compiled pass, interleaved, ``rounds`` times."""
    import statistics

    import curator.signals.scoring as S

    pack = load_langpack(C.REPO / "curator" / "langpacks", "en")
    names = ["word_count", *(t["signal"] for t in POLICY)]
    with open(files[0], "rb") as f:
        texts = [json.loads(line)["text"] for line in itertools.islice(f, docs)]
    mb = sum(len(t.encode()) for t in texts) / MB
    batches = [texts[i:i + 2048] for i in range(0, len(texts), 2048)]
    S.KERNEL_MIN_CODEPOINTS = 0
    S.score_batch(batches[0], names, pack)  # numba imported and the kernel loaded once
    runs: dict[str, list[float]] = {"numpy": [], "kernel": []}
    for _ in range(rounds):
        for name, limit in (("numpy", 10**12), ("kernel", 0)):
            S.KERNEL_MIN_CODEPOINTS = limit
            c0 = cpu()
            for batch in batches:
                S.score_batch(batch, names, pack)
            runs[name].append(cpu() - c0)
    out = {"docs": len(texts), "mb": mb, "signals": names, "runs": runs}
    for name, values in runs.items():
        out[name] = {"cpu_s": statistics.median(values),
                     "mb_per_cpu_s": mb / statistics.median(values)}
        print(f"{name:7} {out[name]['cpu_s']:6.2f} CPU s  {out[name]['mb_per_cpu_s']:5.1f} MB/s "
              f"(runs {[round(v, 2) for v in values]})", flush=True)
    return out


def gates_ab(files: list[Path], docs: int, rounds: int) -> dict[str, Any]:
    """The gate-order lever (issue 15) without the rest of the step: ``decide`` (the
    filter's gates: language, words 20..100,000, the 12 policy gates) on the first
    ``docs`` documents of each file (batches of 2048), per gate order and
    ``langid_max_chars``, interleaved, ``rounds`` times; kept counts compared."""
    import statistics

    import numpy as np

    import curator.signals.scoring as S
    from curator.corpus.langid import FastTextLangId
    from curator.filter.gates import GatePlan, LanguageGate, decide

    pack = load_langpack(C.REPO / "curator" / "langpacks", "en")
    policy = tuple((t["signal"], t.get("min"), t.get("max")) for t in POLICY)
    texts = []
    for path in files:
        with open(path, "rb") as f:
            texts += [json.loads(line)["text"] for line in itertools.islice(f, docs)]
    mb = sum(len(t.encode()) for t in texts) / MB
    batches = [texts[i:i + 2048] for i in range(0, len(texts), 2048)]

    def score(batch: list[str], names: list[str]) -> dict[str, np.ndarray]:
        frame = S.score_batch(batch, names, pack)
        return {n: frame[n].to_numpy().astype(np.float64) for n in names}

    setups = {"reference": ("reference", 500), "cheapest_first": ("cheapest_first", 500),
              "cheapest_first:chars200": ("cheapest_first", 200)}
    runs: dict[str, list[float]] = {k: [] for k in setups}
    score(batches[0], [name for name, _, _ in policy])  # imports (numba) before timing
    kept: dict[str, int] = {}
    scored: dict[str, int] = {}
    for _ in range(rounds):
        for name, (order, chars) in setups.items():
            plan = GatePlan(language=LanguageGate(("EN",), 0.3), words=(20, 100000),
                            policy=policy, pack=pack, order=order)  # type: ignore[arg-type]
            model = FastTextLangId.open(None, chars)
            c0 = cpu()
            decisions = [decide(plan, batch, model, score) for batch in batches]
            runs[name].append(cpu() - c0)
            kept[name] = int(sum(d.kept.sum() for d in decisions))
            scored[name] = len(texts) - int(sum(
                d.unscored.sum() for d in decisions if d.unscored is not None))
    out: dict[str, Any] = {"docs": len(texts), "mb": mb, "runs": runs, "kept": kept,
                           "language_scored": scored}
    for name, values in runs.items():
        med = statistics.median(values)
        out[name] = {"cpu_s": med, "mb_per_cpu_s": mb / med}
        print(f"{name:24} {med:6.2f} CPU s  {mb / med:5.1f} MB/s  kept {kept[name]}  "
              f"language-scored {scored[name]} (runs {[round(v, 2) for v in values]})",
              flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-filter-data"))
    parser.add_argument("--langid-max-chars", type=int, default=500)
    parser.add_argument("--variants", default="floor,filter,filter:cheapest,gates:language,"
                        "gates:words,gates:policy,gates:none",
                        help="also: filter:diagnose (cheapest_first + diagnose_all_gates), "
                        "filter:chars<N> / filter:cheapest:chars<N> (langid_max_chars N)")
    parser.add_argument("--sequential", action="store_true",
                        help="all repetitions of a variant in a row (default: interleaved)")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/results/filter_throughput.json)")
    parser.add_argument("--langid-sweep", default=None,
                        help="instead of the variants: language ID alone at these "
                        "langid_max_chars (e.g. none,1000,500,300,200,100; the first is "
                        "the baseline) on every --sweep-every-th document")
    parser.add_argument("--sweep-every", type=int, default=8)
    parser.add_argument("--signals-ab", type=int, default=0, metavar="DOCS",
                        help="instead of the variants: the signals with the numpy or the "
                        "compiled class counts, interleaved, on the first DOCS documents")
    parser.add_argument("--gates-ab", type=int, default=0, metavar="DOCS",
                        help="instead of the variants: the gates alone (decide) per gate "
                        "order, interleaved, on the first DOCS documents of each file")
    args = parser.parse_args()
    if args.gates_ab:
        result = gates_ab(make_data(args.data_dir, args.mb), args.gates_ab, args.repeat)
        C.write_result(NAME + "_gates", {**result, "machine_load": C.machine_load()},
                       args.out)
        return
    if args.signals_ab:
        result = signals_ab(make_data(args.data_dir, args.mb), args.signals_ab, args.repeat)
        C.write_result(NAME + "_signals", {**result, "machine_load": C.machine_load()},
                       args.out)
        return
    if args.langid_sweep:
        files = make_data(args.data_dir, args.mb)
        chars = [None if c == "none" else int(c) for c in args.langid_sweep.split(",")]
        result = langid_sweep(files, chars, args.sweep_every)
        C.write_result(NAME + "_langid_chars", {**result, "machine_load": C.machine_load()},
                       args.out)
        return
    b = Bench.prepare(args.data_dir, args.mb, "cb-filter-work")
    files, data_mb, docs, work, policy, glob, floor = (
        b.files, b.data_mb, b.docs, b.work, b.policy, b.glob, b.floor)

    counter = itertools.count()
    #: per variant, what the first run decided: kept shards' digests, removals by gate
    decisions: dict[str, dict[str, Any]] = {}

    def filt(variant: str = "", **keys: Any):
        def run() -> None:
            out = work / f"out-{next(counter)}"
            base: dict[str, Any] = {
                "input_glob": glob, "output_dir": str(out), "id_field": "id",
                "source_field": "source", "execution": {"executor": "inline"},
                "quality_filters": {"min_words": 20, "max_words": 100000,
                                    "langid_max_chars": args.langid_max_chars},
                "heuristic_filters": {"approved_policy": str(policy),
                                      "langpack_dir": str(C.REPO / "curator" / "langpacks")},
            }
            base.update(keys)
            run_filter(FilterConfig(**base))
            if variant and variant not in decisions:
                m = json.loads((out / "run_manifest.json").read_text())
                decisions[variant] = {
                    "kept_rows": m["output"]["row_count"],
                    "kept_sha256": hashlib.sha256("".join(
                        s["sha256"] for s in m["output"]["shards"]).encode()).hexdigest(),
                    "filtered": m["declared"]["filtered"], "gates": m["gates"]}
                d = decisions[variant]
                print(f"  decisions of {variant}: kept {d['kept_rows']} "
                      f"{d['kept_sha256'][:16]} {d['filtered']}", flush=True)
            shutil.rmtree(out)
        return run

    def quality(**extra: Any) -> dict[str, Any]:
        return {"min_words": 20, "max_words": 100000,
                "langid_max_chars": args.langid_max_chars, **extra}

    no_words = {"min_langid_score": 0.3, "langid_max_chars": args.langid_max_chars}
    variants = {
        "floor": floor,
        "filter": filt("filter"),
        "filter:cheapest": filt("filter:cheapest",
                                quality_filters=quality(gate_order="cheapest_first")),
        "filter:diagnose": filt("filter:diagnose", quality_filters=quality(
            gate_order="cheapest_first", diagnose_all_gates=True)),
        "gates:language": filt(heuristic_filters=None, quality_filters=no_words),
        "gates:words": filt(heuristic_filters=None, language_codes=[]),
        "gates:policy": filt(language_codes=[], quality_filters=no_words),
        "gates:none": filt(heuristic_filters=None, language_codes=[], quality_filters=no_words),
    }
    names = args.variants.split(",")
    for name in names:  # filter:chars200, filter:cheapest:chars200
        if name.startswith("filter") and ":chars" in name:
            chars = int(name.rsplit(":chars", 1)[1])
            order = "cheapest_first" if ":cheapest" in name else "reference"
            variants[name] = filt(name, quality_filters={**quality(gate_order=order),
                                                         "langid_max_chars": chars})
    pl.DataFrame({"a": [1]}).write_ndjson(work / "warm.jsonl")
    results = run_variants(variants, names, args.repeat, data_mb, docs,
                           interleave=not args.sequential)
    if decisions:
        print("decisions (kept rows, digest of the kept shards, removals by gate):")
        for name, d in decisions.items():
            print(f"  {name:24} {d['kept_rows']:8} {d['kept_sha256'][:16]} {d['filtered']}")
    C.write_result(NAME, {"data_mb": data_mb, "docs": docs, "files": len(files),
                          "langid_max_chars": args.langid_max_chars, "policy": POLICY,
                          "interleaved": not args.sequential, "decisions": decisions,
                          "machine_load": C.machine_load(), "results": results}, args.out)


if __name__ == "__main__":
    main()
