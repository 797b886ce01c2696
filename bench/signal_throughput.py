"""Signal scoring throughput: each of the 24 signals alone, and all 24 together.

Data: ``--mb`` (default 200) MB of document text (UTF-8 bytes of the ``text`` field)
from ``curator_demo.iter_clean_lines`` (the demo corpus's content kinds: prose, forum
threads, API docs with code, listings, ...), written once as JSONL under
``--data-dir`` (default ``/tmp/cb-signal-data``) and read back with ``pl.read_ndjson``.
Scoring runs as the profile step calls it: ``score_batch`` on consecutive batches of
``--batch`` documents (default 2048, the profile step's ``SCORE_BATCH``), with the
shipped English language pack (``curator/langpacks/en``, read here without the loader) and,
for ``token_count``, a stand-in tokenizer (UTF-8 bytes / 4: the figure is the
wrapper's cost, a real tokenizer's own time comes on top).

Polars runs single-threaded (``POLARS_MAX_THREADS=1``, set before polars is
imported), so wall time ~ CPU time and MB/s is per core. Reported per variant:
CPU seconds (user+sys of this process), wall seconds, docs/s and MB/s per core
(MB of text per CPU second). The target: all 24 signals at >= 20 MB/s per core.
Then ``--profile`` prints where the time of the all-24 run goes (cProfile, top
functions).

    POLARS_MAX_THREADS=1 .venv/bin/python bench/signal_throughput.py            # 200 MB
    POLARS_MAX_THREADS=1 .venv/bin/python bench/signal_throughput.py --mb 20    # quick
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import argparse
import cProfile
import io
import json
import pstats
import resource
import time
import tomllib
from pathlib import Path

import _common as C
import numpy as np
import polars as pl

from curator.langpack.model import LangPack
from curator.signals import _tables
from curator.signals.registry import REGISTRY
from curator.signals.scoring import score_batch
from curator_demo import iter_clean_lines

NAME = "signal_throughput"
TARGET_MB_S = 20.0
MB = 1_000_000


def english_pack() -> LangPack:
    """``curator/langpacks/en`` read directly (the loader is not this benchmark's subject)."""
    root = C.REPO / "curator" / "langpacks" / "en"
    meta = tomllib.loads((root / "pack.toml").read_text(encoding="utf-8"))

    def lines(name: str) -> list[str]:
        text = (root / name).read_text(encoding="utf-8")
        return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]

    return LangPack(
        pack_id=meta["pack"]["pack_id"], language_tag="en", version=meta["pack"]["version"],
        root=str(root), content_hash="bench", capabilities=frozenset(
            meta["capabilities"]["supports"]),
        stopwords=frozenset(w.strip() for w in lines("stopwords.txt")),
        charset=frozenset("".join(ln.strip() for ln in lines("charset.txt"))),
        boilerplate=tuple(lines("boilerplate.txt")),
        fold_map=dict(meta["fold_map"]),
        sentence_terminators=tuple(meta["orthography"]["sentence_terminators"]),
    )


def stand_in_tokenizer(texts: list[str]) -> np.ndarray:
    return pl.Series(texts, dtype=pl.String).str.len_bytes().to_numpy() // 4


def ensure_data(folder: Path, mb: int, regenerate: bool) -> Path:
    path = folder / f"docs-{mb}mb.jsonl"
    if path.is_file() and not regenerate:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    total = 0
    with open(tmp, "w", encoding="utf-8") as out:
        for line in iter_clean_lines():
            out.write(line + "\n")
            total += len(json.loads(line).get("text", "").encode("utf-8"))
            if total >= mb * MB:
                break
    tmp.replace(path)
    return path


def cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def run(texts: pl.Series, names: list[str], pack: LangPack, batch: int) -> dict[str, float]:
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    for start in range(0, len(texts), batch):
        score_batch(texts.slice(start, batch), names, pack, tokenizer=stand_in_tokenizer)
    return {"cpu_s": cpu_seconds() - cpu0, "wall_s": time.perf_counter() - wall0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="MB of document text (default 200)")
    ap.add_argument("--batch", type=int, default=2048, help="documents per score_batch call")
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/cb-signal-data"))
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--signals", nargs="*", default=None, help="default: all 24, then each")
    ap.add_argument("--no-single", action="store_true", help="skip the per-signal runs")
    ap.add_argument("--profile", action="store_true", help="cProfile one all-24 pass")
    ap.add_argument("--wait-quiet", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    t0 = time.perf_counter()
    path = ensure_data(args.data_dir, args.mb, args.regenerate)
    texts = pl.read_ndjson(path)["text"]
    mb = texts.str.len_bytes().sum() / MB
    docs = len(texts)
    print(f"{docs:,} documents, {mb:.1f} MB of text ({time.perf_counter() - t0:.1f}s to "
          f"prepare), batches of {args.batch}, POLARS_MAX_THREADS="
          f"{os.environ.get('POLARS_MAX_THREADS')}")

    pack = english_pack()
    c0 = cpu_seconds()
    _tables.class_table(pack)  # per-process, per-pack setup, timed apart
    setup_cpu = cpu_seconds() - c0
    score_batch(texts.slice(0, 64), list(REGISTRY), pack, tokenizer=stand_in_tokenizer)

    names = args.signals or list(REGISTRY)
    C.wait_for_quiet(args.wait_quiet)
    variants: list[tuple[str, list[str]]] = [("all", names)]
    if not args.no_single:
        variants += [(n, [n]) for n in names]
    results = []
    for label, subset in variants:
        r = run(texts, subset, pack, args.batch)
        row = {"signals": label, "cpu_s": round(r["cpu_s"], 2), "wall_s": round(r["wall_s"], 2),
               "docs_per_s": round(docs / r["cpu_s"]), "mb_per_s": round(mb / r["cpu_s"], 1)}
        results.append(row)
        print(f"{label:28s} cpu {row['cpu_s']:7.2f}s  wall {row['wall_s']:7.2f}s  "
              f"{row['docs_per_s']:>9,} docs/s  {row['mb_per_s']:7.1f} MB/s per core", flush=True)

    profile_top = None
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        run(texts, names, pack, args.batch)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(18)
        profile_top = buf.getvalue()
        print(profile_top)

    all_row = results[0]
    payload = {
        "data": {"documents": docs, "mb_text": round(mb, 1), "source": "curator_demo",
                 "path": str(path), "batch_docs": args.batch,
                 "polars_max_threads": os.environ.get("POLARS_MAX_THREADS")},
        "setup_cpu_s": round(setup_cpu, 2),
        "target_mb_per_s_per_core": TARGET_MB_S,
        "all_signals_mb_per_s_per_core": all_row["mb_per_s"],
        "meets_target": all_row["mb_per_s"] >= TARGET_MB_S,
        "results": results,
        "profile_top": profile_top,
        "note": "token_count uses a stand-in tokenizer (UTF-8 bytes / 4)",
    }
    out = C.write_result(NAME, payload, args.out)
    print(f"all {len(names)} signals: {all_row['mb_per_s']} MB/s per core "
          f"(target {TARGET_MB_S}); written {out}")


if __name__ == "__main__":
    main()
