"""Which MinHash kernel for ``curate dedup`` (issue 28): speed per core, determinism,
estimate quality and licence of four candidates on one web-like slice.

Candidates (all: word 5-gram shingles of NFC + lower-cased text, 160 rows = 20 bands x 8,
seed 1; the time counts the whole call from a text column to a signature matrix):

- ``numba``: :func:`curator.dedup.minhash.signatures` (the project's kernel);
- ``numpy``: the same definition vectorised with numpy (FNV-1a over each word's bytes in
  passes over the words sorted by length, the shingle polynomial, ``np.minimum.reduceat``
  per row); ASCII whitespace only, so it must match ``numba`` on this corpus;
- ``datasketch``: datasketch 2.x ``MinHash(num_perm=160, seed=1).update_batch`` on the
  shingles as UTF-8 bytes (its own hash: SHA-1, 32 bits);
- ``rensa``: rensa ``RMinHash.digest_matrix_from_token_sets`` on the shingle strings
  (its own hash and sketch), and ``rensa-hashes``: its
  ``digest_matrix_from_flat_token_hashes`` fed with the project's shingle hashes (only
  its signature step differs from ``numba``).

The packages that are not project dependencies are imported from ``--extra`` (default
``/tmp/mhx``: ``pip install --target /tmp/mhx datasketch rensa``); a candidate that does
not import is reported as such. Each candidate runs twice, each time in a fresh process
pinned to core 0 (``taskset -c 0`` when present, else ``sched_setaffinity``), with one
thread for numba, OMP, Rayon and polars; in each process it runs once to warm up (JIT,
imports) on 200 documents, then twice on the whole slice (the faster time counts). The
signature matrix's SHA-256 must be equal between the two runs of a process and between the
two processes. Quality: on the planted pairs (a document and a copy with k of its words
replaced), the signature's estimate against the exact Jaccard of the shingle sets, and the
share of pairs at Jaccard >= 0.85 that share a 20 x 8 band (all planted pairs of the
corpus, also for the candidates timed on a smaller slice). For ``numba``, the
"hashing floor" is the same call with a one-row signature (normalise, shingle, hash).

    .venv/bin/python bench/minhash_kernels.py                    # 50 MB, slow ones 4 MB
    .venv/bin/python bench/minhash_kernels.py --mb 8 --slow-mb 1
"""

from __future__ import annotations

import os

os.environ.update({v: os.environ.get(v, "1") for v in (
    "NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "RAYON_NUM_THREADS", "POLARS_MAX_THREADS",
    "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import _common as C
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curator.dedup.minhash import MinHashParams, coefficients, signatures
from curator.dedup.shingles import (
    FNV_OFFSET,
    FNV_PRIME,
    POLY,
    Shingling,
    jaccard,
    normalize,
    shingle_sets,
    utf8_buffers,
)

NAME = "minhash_kernels"
SHINGLING = Shingling("words", 5)
PARAMS = MinHashParams(bands=20, rows=8, seed=1)
SLOW = {"datasketch", "rensa"}
VARIANTS = ("numba", "numpy", "rensa-hashes", "rensa", "datasketch")
_NON_ASCII = ["café", "naïve", "Straße", "Ελλάδα", "東京", "größer", "déjà", "😀", "İzmir",
              "Ångström", "piñata", "Привет"]


# ----------------------------------------------------------------------------- corpus

def make_corpus(path: Path, mb: float, seed: int = 7) -> None:
    """~2 KB web-like documents (_common's generator, real line breaks, 15% with
    non-ASCII words), then planted copies of 2% of them with k words replaced."""
    gen = C.CorpusGenerator(seed=seed, mean_bytes=2000)
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    size = 0
    while size < mb * 1e6 * 0.98:
        words = gen.text(int(rng.lognormal(np.log(1850), 0.35))).replace("\\n", "\n").split(" ")
        if rng.random() < 0.15:
            for _ in range(int(rng.integers(1, 8))):
                words.insert(int(rng.integers(len(words) + 1)), str(rng.choice(_NON_ASCII)))
        texts.append(" ".join(words))
        size += len(texts[-1].encode())
    pairs = []
    for i in rng.choice(len(texts), size=max(2, len(texts) // 50), replace=False).tolist():
        words = texts[i].split(" ")
        k = int(len(words) * rng.uniform(0.0, 0.04))  # Jaccard of 5-grams ~ 0.6 .. 1.0
        for j in rng.choice(len(words), size=k, replace=False).tolist():
            words[j] = gen.vocab[int(rng.integers(len(gen.vocab)))]
        pairs.append((i, len(texts)))
        texts.append(" ".join(words))
    order = rng.permutation(len(texts))  # planted copies spread over the slice
    where = np.empty_like(order)
    where[order] = np.arange(len(order))
    pq.write_table(pa.table({"text": pa.array([texts[o] for o in order], pa.large_string())}),
                   path)
    np.save(path.with_suffix(".pairs.npy"), where[np.array(pairs)])


# ------------------------------------------------------------------------- candidates

def _words(texts: list[str]) -> list[list[str]]:
    """The shingles as strings, by the same definition (Python's NFC, lower, split)."""
    n = SHINGLING.n
    out = []
    for t in texts:
        w = unicodedata.normalize("NFC", t).lower().split()
        out.append([" ".join(w)] if 0 < len(w) <= n else
                   [" ".join(w[i:i + n]) for i in range(len(w) - n + 1)])
    return out


def _fmix64(k: np.ndarray) -> np.ndarray:
    k = k ^ (k >> np.uint64(33))
    k = k * np.uint64(0xFF51AFD7ED558CCD)
    k = k ^ (k >> np.uint64(33))
    k = k * np.uint64(0xC4CEB9FE1A85EC53)
    return k ^ (k >> np.uint64(33))


def numpy_signatures(texts: pa.Array, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    data, offsets = utf8_buffers(normalize(texts))
    data, offsets = data[offsets[0]:offsets[-1]], offsets - offsets[0]
    docs, n = len(offsets) - 1, SHINGLING.n
    space = np.zeros(256, bool)
    space[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
    sp = space[data]
    before = np.r_[True, sp[:-1]]
    before[offsets[:-1][offsets[:-1] < len(data)]] = True
    starts = np.flatnonzero(~sp & before)
    after = np.r_[sp[1:], True]
    after[offsets[1:][offsets[1:] > 0] - 1] = True
    ends = np.flatnonzero(~sp & after) + 1
    lengths = ends - starts
    order = np.argsort(-lengths, kind="stable")
    w = np.full(len(starts), np.uint64(FNV_OFFSET))
    s_sorted, l_sorted = starts[order], lengths[order]
    active = len(order)
    for j in range(int(l_sorted[0]) if len(order) else 0):
        while active and l_sorted[active - 1] <= j:
            active -= 1
        h = w[:active] ^ data[s_sorted[:active] + j].astype(np.uint64)
        w[:active] = h * np.uint64(FNV_PRIME)
    words = np.empty_like(w)
    words[order] = w
    wdoc = np.searchsorted(offsets, starts, side="right") - 1
    count = np.bincount(wdoc, minlength=docs)
    first = np.r_[0, np.cumsum(count)[:-1]]
    poly = np.uint64(POLY)
    m = len(words) - n + 1
    sh = np.zeros(max(m, 0), np.uint64)
    for t in range(n):
        sh = sh * poly + words[t:t + m]
    keep = wdoc[:m] == wdoc[n - 1:]
    sh, sdoc = sh[keep], wdoc[:m][keep]
    short = np.flatnonzero((count > 0) & (count <= n))
    hs = np.zeros(len(short), np.uint64)
    for t in range(n):
        live = count[short] > t
        hs[live] = hs[live] * poly + words[first[short[live]] + t]
    sh, sdoc = np.r_[sh, hs], np.r_[sdoc, short]
    o = np.argsort(sdoc, kind="stable")
    x, sdoc = _fmix64(sh[o]) >> np.uint64(32), sdoc[o]
    sig = np.full((docs, len(a)), np.uint32(0xFFFFFFFF))
    if len(x):
        cut = np.flatnonzero(np.r_[True, sdoc[1:] != sdoc[:-1]])
        for p in range(len(a)):
            v = ((x * a[p] + b[p]) >> np.uint64(32)).astype(np.uint32)
            sig[sdoc[cut], p] = np.minimum.reduceat(v, cut)
    return sig


def runner(variant: str) -> Any:
    """The candidate as ``f(arrow_texts) -> signature matrix``."""
    num_perm, seed = PARAMS.num_perm, PARAMS.seed
    if variant == "numba":
        return lambda t: signatures(t, SHINGLING, PARAMS)[0]
    if variant == "numpy":
        a, b = coefficients(seed, num_perm)

        def numpy_batches(t: pa.Array) -> np.ndarray:
            return np.concatenate([numpy_signatures(t.slice(i, 1000), a, b)
                                   for i in range(0, len(t), 1000)])
        return numpy_batches
    if variant == "datasketch":
        from datasketch import MinHash

        def datasketch_sigs(t: pa.Array) -> np.ndarray:
            rows = []
            for sh in _words(t.to_pylist()):
                m = MinHash(num_perm=num_perm, seed=seed)
                m.update_batch([s.encode() for s in sh])
                rows.append(m.hashvalues)
            return np.array(rows, np.uint64)
        return datasketch_sigs
    from rensa import RMinHash
    if variant == "rensa":
        return lambda t: np.array(RMinHash.digest_matrix_from_token_sets(
            _words(t.to_pylist()), num_perm, seed).to_rows(), np.uint32)

    def rensa_hashes(t: pa.Array) -> np.ndarray:
        sets = shingle_sets(t, SHINGLING)
        out = RMinHash.digest_matrix_from_flat_token_hashes(sets.hashes, sets.offsets.astype(
            np.uint64), num_perm, seed)
        return np.array(out.to_rows(), np.uint32)
    return rensa_hashes


def version(variant: str) -> str:
    from importlib.metadata import version as v
    pkg = {"numba": "numba", "numpy": "numpy", "datasketch": "datasketch"}.get(variant, "rensa")
    return v(pkg)


# --------------------------------------------------------------------------- worker

def worker(variant: str, corpus: Path, limit_mb: float) -> dict[str, Any]:
    texts = pq.read_table(corpus).column("text").combine_chunks()
    sizes = np.diff(utf8_buffers(texts)[1])
    n_docs = int(np.searchsorted(np.cumsum(sizes), limit_mb * 1e6)) + 1
    texts = texts.slice(0, min(n_docs, len(texts)))
    mb = float(sizes[:len(texts)].sum()) / 1e6
    t0 = time.perf_counter()
    f = runner(variant)
    f(texts.slice(0, 200))
    warm = time.perf_counter() - t0
    runs, digests, sig = [], [], None
    for _ in range(2):
        w, c = time.perf_counter(), time.process_time()
        sig = f(texts)
        runs.append((time.perf_counter() - w, time.process_time() - c))
        digests.append(hashlib.sha256(np.ascontiguousarray(sig).tobytes()).hexdigest())
    wall, cpu = min(runs)
    floor = None
    if variant == "numba":  # normalise + shingle + a 1-row signature: the hashing floor
        one = MinHashParams(bands=1, rows=1, seed=PARAMS.seed)
        c = time.process_time()
        signatures(texts, SHINGLING, one)
        floor = round(mb / (time.process_time() - c), 2)
    # quality: every planted pair of the whole corpus (its documents only), so that the
    # slow candidates are judged on as many pairs as the fast ones
    pairs = np.load(corpus.with_suffix(".pairs.npy"))
    planted = pq.read_table(corpus).column("text").combine_chunks().take(pairs.reshape(-1))
    pairs = np.arange(2 * len(pairs)).reshape(-1, 2)
    exact = jaccard(shingle_sets(planted, SHINGLING), pairs[:, 0], pairs[:, 1])
    sig = f(planted)
    same = sig[pairs[:, 0]] == sig[pairs[:, 1]]
    est = same.mean(axis=1)
    collide = same.reshape(len(pairs), PARAMS.bands, PARAMS.rows).all(axis=2).any(axis=1)
    high = exact >= 0.85
    return {"variant": variant, "version": version(variant), "mb": round(mb, 2),
            "docs": len(texts), "warm_up_s": round(warm, 2), "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "mb_per_s_cpu": round(mb / cpu, 2),
            "mb_per_s_wall": round(mb / wall, 2), "hashing_floor_mb_per_s_cpu": floor,
            "digest": digests[0],
            "same_in_process": digests[0] == digests[1], "pairs": len(pairs),
            "estimate_mae": round(float(np.abs(est - exact).mean()), 4),
            "estimate_bias": round(float((est - exact).mean()), 4),
            "pairs_ge_085": int(high.sum()),
            "collide_ge_085": round(float(collide[high].mean()), 4) if high.any() else None}


def run_one(variant: str, corpus: Path, limit_mb: float, extra: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", variant, "--corpus", str(corpus),
           "--limit-mb", str(limit_mb), "--extra", extra]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(C.REPO), os.environ.get("PYTHONPATH", "")) if p)}
    load = os.getloadavg()[0]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        return {"variant": variant, "error": (done.stderr or done.stdout).strip()[-600:]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["load_before"] = round(load, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--slow-mb", type=float, default=4.0, help="slice of the slow candidates")
    ap.add_argument("--extra", default="/tmp/mhx", help="where datasketch and rensa are")
    ap.add_argument("--data-dir", default="/tmp/minhash_kernels")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--worker")
    ap.add_argument("--corpus")
    ap.add_argument("--limit-mb", type=float)
    ap.add_argument("--out", type=Path, help="the result file (default bench/results/)")
    args = ap.parse_args()
    if args.worker:
        if args.extra and args.worker not in ("numba", "numpy"):
            sys.path.append(args.extra)  # after the venv: its numpy stays the venv's
        if not shutil.which("taskset"):
            os.sched_setaffinity(0, {0})
        print(json.dumps(worker(args.worker, Path(args.corpus), args.limit_mb)))
        return
    corpus = Path(args.data_dir) / f"corpus-{args.mb:g}mb.parquet"
    if not corpus.exists():
        corpus.parent.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        make_corpus(corpus, args.mb)
        print(f"corpus: {corpus} in {time.perf_counter() - t:.0f} s", flush=True)
    results = []
    for variant in args.variants.split(","):
        limit = args.slow_mb if variant in SLOW else args.mb
        runs = [run_one(variant, corpus, limit, args.extra) for _ in range(2)]
        r = dict(runs[0])
        if "error" not in r:
            ok = [x for x in runs if "error" not in x]
            r["same_across_processes"] = len(ok) == 2 and ok[0]["digest"] == ok[1]["digest"]
            r["mb_per_s_cpu"] = max(x["mb_per_s_cpu"] for x in ok)
            r["mb_per_s_wall"] = max(x["mb_per_s_wall"] for x in ok)
            r["load_before"] = [x.get("load_before") for x in ok]
        results.append(r)
        print(json.dumps(r), flush=True)
    ref = next((r["digest"] for r in results if r["variant"] == "numba" and "digest" in r), None)
    for r in results:
        if "digest" in r:
            r["equals_numba"] = r["digest"] == ref
    out = args.out or C.RESULTS_DIR / f"{NAME}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"name": NAME, "mb": args.mb, "slow_mb": args.slow_mb,
                               "shingling": [SHINGLING.kind, SHINGLING.n],
                               "bands": PARAMS.bands, "rows": PARAMS.rows,
                               "cpus": os.cpu_count(), "results": results}, indent=1) + "\n")
    print(f"{'variant':14} {'MB':>6} {'MB/s cpu':>9} {'MB/s wall':>9} {'det':>5} {'=numba':>6} "
          f"{'MAE':>6} {'bias':>7} {'P(J>=.85)':>9}")
    for r in results:
        if "error" in r:
            print(f"{r['variant']:14} error: {r['error'][-200:]}")
            continue
        det = r["same_in_process"] and r["same_across_processes"]
        print(f"{r['variant']:14} {r['mb']:6.1f} {r['mb_per_s_cpu']:9.2f} "
              f"{r['mb_per_s_wall']:9.2f} {det!s:>5} {r['equals_numba']!s:>6} "
              f"{r['estimate_mae']:6.3f} {r['estimate_bias']:7.3f} {r['collide_ge_085']!s:>9}")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
