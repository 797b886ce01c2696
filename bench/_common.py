"""Shared helpers for the benchmarks: deterministic corpora, timing, results, environment.

Not a benchmark itself. Every script in ``bench/`` imports it as ``_common`` (the
script's own folder is first on ``sys.path`` when run as ``python bench/<name>.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

if str(REPO) not in sys.path:  # `import curator` without an installed package
    sys.path.insert(1, str(REPO))

# --------------------------------------------------------------------------------------
# Deterministic English-like corpus
# --------------------------------------------------------------------------------------

_FUNCTION_WORDS = (  # noqa: SIM905 - a sentence reads better than a list literal
    "the of and to a in is that for it as was with be by on not he i this are or his "
    "from at which but have an they you were her she there been one all we their has "
    "would when if so more no out up into do can will about than its only other new "
    "some could time these two may first then any like now my such make over our even "
    "most after also made many did before must through back years where much your way "
    "well down should because each just those people how too little state good very"
).split()
_ONSETS = (  # noqa: SIM905
    "b c d f g h j k l m n p r s t v w y bl br ch cl cr dr fl fr gl gr pl pr "
               "sc sh sk sl sm sn sp st str sw th tr wh"
).split()
_VOWELS = "a e i o u a e i o u a e i o ea ee ai ou".split()  # noqa: SIM905
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "d", "m", "nd", "nt", "st", "ng", "ck",
          "rt", "ss", "ll", "ts", "rs")
_SUFFIXES = ("", "", "", "", "", "s", "ed", "ing", "ly", "er", "tion", "ment", "ness",
             "al", "ous", "ive", "able")


def _make_vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    words: list[str] = list(_FUNCTION_WORDS)
    seen = set(words)
    while len(words) < size:
        syllables = int(rng.choice([1, 1, 2, 2, 2, 3, 3, 4]))
        parts = []
        for s in range(syllables):
            onset = _ONSETS[int(rng.integers(len(_ONSETS)))] if s == 0 or rng.random() < 0.9 else ""
            parts.append(onset + _VOWELS[int(rng.integers(len(_VOWELS)))])
        parts.append(_CODAS[int(rng.integers(len(_CODAS)))])
        parts.append(_SUFFIXES[int(rng.integers(len(_SUFFIXES)))])
        word = "".join(parts)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class CorpusGenerator:
    """Seeded generator of JSONL documents that look like English web text.

    A 20,000-word vocabulary (real function words first, then pronounceable
    syllable words) drawn with a Zipf-like law; sentences of 5-28 words with
    capitals, commas, the odd number; paragraphs; about ``mean_bytes`` per line.
    The same seed gives the same bytes on every machine (numpy's PCG64).
    """

    def __init__(self, seed: int = 1234, mean_bytes: int = 2500, vocab_size: int = 20_000):
        self.rng = np.random.default_rng(seed)
        self.vocab = _make_vocabulary(self.rng, vocab_size)
        self.capitalised = [w.capitalize() for w in self.vocab]
        ranks = np.arange(1, len(self.vocab) + 1, dtype=np.float64)
        weights = 1.0 / (ranks + 2.7) ** 1.05
        self.cdf = np.cumsum(weights / weights.sum())
        self.mean_bytes = mean_bytes
        self.chars_per_word = 8.0  # calibrated so a line averages ~mean_bytes
        self.counter = 0
        self._pool = np.empty(0, dtype=np.int64)
        self._pos = 0

    def _indices(self, n: int) -> list[int]:
        if self._pos + n > len(self._pool):
            fresh = np.searchsorted(self.cdf, self.rng.random(1_000_000 + n))
            self._pool = np.concatenate([self._pool[self._pos :], fresh])
            self._pos = 0
        out = self._pool[self._pos : self._pos + n]
        self._pos += n
        return out.tolist()

    def text(self, target_chars: int) -> str:
        vocab, caps, rng = self.vocab, self.capitalised, self.rng
        n_words = max(8, int(target_chars / self.chars_per_word))
        idx = self._indices(n_words)
        lengths = rng.integers(5, 29, size=n_words // 5 + 2).tolist()
        commas = (rng.random(n_words) < 0.07).tolist()
        numbers = rng.integers(0, 2030, size=n_words).tolist()
        digit_at = (rng.random(n_words) < 0.01).tolist()
        paragraph = (rng.random(len(lengths)) < 0.2).tolist()
        out: list[str] = []
        pos = 0
        s = 0
        while pos < n_words:
            n = min(lengths[s], n_words - pos)
            words = [
                str(numbers[j]) if digit_at[j] else vocab[idx[j]] + ("," if commas[j] else "")
                for j in range(pos, pos + n)
            ]
            first = idx[pos]
            words[0] = caps[first] if not digit_at[pos] else words[0]
            words[-1] = words[-1].rstrip(",") + "."
            out.append(" ".join(words))
            out.append("\\n\\n" if paragraph[s] else " ")
            pos += n
            s += 1
        return "".join(out[:-1])

    def line(self) -> str:
        """One JSONL line, no newline. The text is pre-escaped (ASCII, breaks as ``\\n``)."""
        n = self.counter
        self.counter += 1
        target = int(self.rng.lognormal(np.log(self.mean_bytes - 150), 0.35))
        text = self.text(max(200, target))
        host = self.vocab[100 + n % 5000]
        return (
            f'{{"id":"doc-{n:09d}","url":"https://www.{host}.example/{n:x}",'
            f'"source":"bench","lang":"en","text":"{text}"}}'
        )

    def write_file(self, path: Path, *, docs: int | None = None, target_bytes: int | None = None
                   ) -> int:
        """Write ``docs`` lines, or lines up to (not past) ``target_bytes``; return bytes."""
        path.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        lines: list[str] = []
        count = 0
        with open(path, "w", encoding="ascii", newline="\n") as f:
            while True:
                if docs is not None and count >= docs:
                    break
                line = self.line() + "\n"
                if target_bytes is not None and written + len(line) > target_bytes and count:
                    break
                lines.append(line)
                written += len(line)
                count += 1
                if len(lines) >= 512:
                    f.write("".join(lines))
                    lines = []
            f.write("".join(lines))
        return written


def write_corpus(folder: Path, files: int, *, seed: int = 1234, docs_per_file: int | None = None,
                 bytes_per_file: int | None = None, prefix: str = "part") -> int:
    """``files`` JSONL files in ``folder``; returns the total bytes."""
    gen = CorpusGenerator(seed)
    total = 0
    for i in range(files):
        total += gen.write_file(folder / f"{prefix}-{i:05d}.jsonl", docs=docs_per_file,
                                target_bytes=bytes_per_file)
    return total


# --------------------------------------------------------------------------------------
# Temporary directories, timing, statistics
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def temp_dir(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A temporary work directory under /tmp (short paths: Ray's sockets live below)."""
    path = Path(tempfile.mkdtemp(prefix=f"cb-{prefix}-", dir="/tmp"))
    try:
        yield path
    finally:
        if keep:
            print(f"(kept {path})")
        else:
            shutil.rmtree(path, ignore_errors=True)


def fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


# --------------------------------------------------------------------------------------
# Output: a small table on stdout and a JSON file under bench/results/
# --------------------------------------------------------------------------------------


def _cpu_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])
    return (total - idle) / tick, total / tick


def _own_cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have been waited for."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


_START = {"wall": time.perf_counter(), "busy": _cpu_busy_seconds(), "own": _own_cpu_seconds(),
          "loadavg": os.getloadavg()}


def machine_load() -> dict[str, object]:
    """How busy the machine was since this module was imported, and how much of it was us.

    ``others_cpu_share`` estimates the share of the machine's CPU used by processes
    that are not this benchmark (its waited-for children count as its own; Ray's
    workers, children of the raylet, count as others). Above ~0.1 the figures are
    contaminated by other work on the machine.
    """
    busy, _total = _cpu_busy_seconds()
    wall = time.perf_counter() - _START["wall"]
    cpus = os.cpu_count() or 1
    machine_busy = busy - _START["busy"][0]
    own = _own_cpu_seconds() - _START["own"]
    return {
        "loadavg_at_start": [round(x, 2) for x in _START["loadavg"]],
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(wall, 1),
        "machine_cpu_share": round(machine_busy / (wall * cpus), 3) if wall > 0 else None,
        "own_cpu_seconds": round(own, 1),
        "others_cpu_share": round(max(0.0, machine_busy - own) / (wall * cpus), 3)
        if wall > 0 else None,
    }


def wait_for_quiet(max_wait: float, busy_below: float = 0.25, sample: float = 2.0) -> float:
    """Wait up to ``max_wait`` s for the machine's CPU use to drop below ``busy_below``.

    Returns the busy share seen last. Other sessions' tests and benchmarks share these
    2 cores; a benchmark started under load measures the load.
    """
    deadline = time.monotonic() + max_wait
    share = 0.0
    while True:
        b0, t0 = _cpu_busy_seconds()
        time.sleep(sample)
        b1, t1 = _cpu_busy_seconds()
        share = (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0
        if share < busy_below or time.monotonic() >= deadline:
            break
        print(f"(machine busy: {share:.0%} CPU in use by others; waiting)", flush=True)
    if share >= busy_below:
        print(f"(machine still busy after {max_wait:.0f}s: {share:.0%} CPU; measuring anyway, "
              "figures will be noisier)", flush=True)
    return share


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("corpus-curator", "polars", "pyarrow", "lmdb", "prefect", "prefect-ray", "ray",
                "numpy", "psutil"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def engine_settings() -> dict[str, object]:
    """The engine's scheduling knobs, so figures from before and after a change to them
    can be told apart (``None``: the engine had no such setting)."""
    try:
        from curator import pipeline
    except ImportError:  # pragma: no cover - a benchmark without the engine
        return {}
    return {"in_flight_per_slot": getattr(pipeline, "IN_FLIGHT_PER_SLOT", None),
            "commit_interval_s": getattr(pipeline, "COMMIT_INTERVAL", None),
            "commit_max": getattr(pipeline, "COMMIT_MAX", None)}


def machine() -> dict[str, object]:
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "mem_gib": mem, "platform": platform.platform(),
            "machine": platform.machine()}


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h))
              for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:.1f}"
        if abs(value) >= 1:
            return f"{value:.3f}"
        return f"{value:.4f}"
    return str(value)


def write_result(name: str, payload: dict[str, object], out: Path | None = None) -> Path:
    path = out or RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": name,
        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine(),
        "machine_load": machine_load(),
        "versions": versions(),
        "engine": engine_settings(),
        **payload,
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False, default=_json_default) + "\n")
    os.replace(tmp, path)
    load = doc["machine_load"]
    print(f"\nresult written to {path}")
    print(f"machine load during the run: {load['machine_cpu_share']:.0%} CPU in all, "
          f"~{load['others_cpu_share']:.0%} by other processes (loadavg "
          f"{load['loadavg_at_start'][0]} -> {load['loadavg_at_end'][0]})")
    return path


def _json_default(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


# --------------------------------------------------------------------------------------
# Quiet, hermetic Prefect and Ray settings (shared notes)
# --------------------------------------------------------------------------------------


def prefect_env(home: Path) -> dict[str, str]:
    from curator_testing import hermetic_env

    return hermetic_env(home)


def ray_init_kwargs(temp: Path, num_cpus: int = 2) -> dict[str, object]:
    from curator_testing import small_ray_kwargs

    return small_ray_kwargs(temp, num_cpus)
