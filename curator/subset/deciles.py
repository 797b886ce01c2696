"""The score deciles without every score in one process: exact radix selection.

The plan's cut points are exact order statistics of the corpus's scores,
``ordered[min(n-1, n*d//10)]`` for d = 1..9 (:func:`curator.subset.planning.score_cut_points`).
Sorting every score needs them in one process (8 bytes a document in the driver).
Instead each score becomes a ``uint64`` key in the same order (:func:`order_keys`) and
the nine ranks are found 16 bits of the key at a time, in :data:`PASSES` engine passes
over the count files: in each pass every unit counts, for each target's prefix (the key
bits fixed so far), how many of its keys with that prefix have each value of the next
16 bits, and writes that histogram (sparse: ``target prefix, digit, count``) to the work
area; the driver adds the partitions' histograms into one dense array of at most nine
rows of 65,536 counts and moves each target one digit down (:meth:`Selection.step`).
After the last pass each target's prefix is its whole key, the exact score.

What the driver holds: the 9 x 65,536 counts of one pass (4.7 MB), whatever the corpus.
Each unit reads its partition's score column once a pass.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from curator.io import shared
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.subset.stages import count_file
from curator.tasks import FileGroupTask

DIGIT_BITS = 16
DIGITS = 1 << DIGIT_BITS
PASSES = 64 // DIGIT_BITS
_SIGN = np.uint64(1 << 63)


def order_keys(scores: np.ndarray) -> np.ndarray:
    """``uint64`` keys ordered as the finite ``float64`` scores are (-0.0 as 0.0)."""
    bits = (np.asarray(scores, dtype=np.float64) + 0.0).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def key_score(key: int) -> float:
    """The score of a key (:func:`order_keys` inverted)."""
    k = np.uint64(key)
    bits = k ^ _SIGN if k & _SIGN else ~k
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def target_ranks(n: int) -> list[int]:
    """The ranks of the nine cut points among ``n`` scores (none when ``n`` is 0)."""
    return [min(n - 1, n * d // 10) for d in range(1, 10)] if n else []


def histogram(keys: np.ndarray, prefixes: list[int], bits: int) -> np.ndarray:
    """Rows ``[target prefix index, digit, count]``: the keys whose top ``bits`` bits
    are the ``i``-th of ``prefixes`` (distinct), by their next :data:`DIGIT_BITS`."""
    rest = 64 - bits - DIGIT_BITS
    digit = ((keys >> np.uint64(rest)) & np.uint64(DIGITS - 1)).astype(np.int64)
    if bits:
        top = keys >> np.uint64(64 - bits)
        want = np.asarray(prefixes, dtype=np.uint64)
        which = np.searchsorted(want, top)
        hit = (which < len(want)) & (want[np.minimum(which, len(want) - 1)] == top)
        which, digit = which[hit], digit[hit]
    else:
        which = np.zeros(len(keys), dtype=np.int64)
    combined = which.astype(np.int64) * DIGITS + digit
    values, counts = np.unique(combined, return_counts=True)
    return np.stack([values // DIGITS, values % DIGITS, counts]).T.astype(np.int64)


@dataclass
class Selection:
    """The driver's state: per target its prefix (``bits`` known bits of its key) and
    its rank among the keys with that prefix."""

    prefixes: list[int]
    ranks: list[int]
    bits: int = 0

    @classmethod
    def start(cls, n: int) -> Selection:
        ranks = target_ranks(n)
        return cls([0] * len(ranks), ranks)

    @property
    def distinct(self) -> list[int]:
        """The prefixes the next pass counts under (sorted, distinct)."""
        return sorted(set(self.prefixes))

    def step(self, counts: np.ndarray) -> None:
        """One digit more per target, from ``counts[i, digit]`` (``i``: the index of the
        target's prefix in :attr:`distinct`)."""
        row = {p: i for i, p in enumerate(self.distinct)}
        for t, (prefix, rank) in enumerate(zip(self.prefixes, self.ranks, strict=True)):
            cum = np.cumsum(counts[row[prefix]])
            digit = int(np.searchsorted(cum, rank, side="right"))
            self.ranks[t] = rank - (int(cum[digit - 1]) if digit else 0)
            self.prefixes[t] = (prefix << DIGIT_BITS) | digit
        self.bits += DIGIT_BITS

    def cut_points(self) -> list[float]:
        assert self.bits == 64, "not every pass has run"
        return [key_score(k) for k in self.prefixes]


def histogram_file(work: str | Path, step: int, index: int) -> Path:
    return Path(work) / "deciles" / f"pass{step}" / f"{index}.npy"


@dataclass
class DecileStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """One partition's histogram of one pass (the module docstring)."""

    index: dict[str, int]
    work_dir: str
    step: int  # 0 .. PASSES - 1
    prefixes: list[int]  # Selection.distinct
    name: str = "deciles"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        i = self.index[task.source_id or "part"]
        scores = pq.read_table(shared.localize(count_file(self.work_dir, i)),
                               columns=["score"])["score"].to_numpy()
        rows = histogram(order_keys(scores), self.prefixes, self.step * DIGIT_BITS)
        buf = io.BytesIO()
        np.save(buf, rows, allow_pickle=False)
        write_atomic(histogram_file(self.work_dir, self.step, i), buf.getvalue())
        self.stat_update("scores", len(scores))
        return FileGroupTask(data=[], _metadata={"rows": len(scores)})


def add_histograms(work: str | Path, step: int, partitions: int, rows: int) -> np.ndarray:
    """The partitions' histograms of pass ``step``, added up one file at a time."""
    counts = np.zeros((rows, DIGITS), dtype=np.int64)
    for i in range(partitions):
        part = np.load(shared.localize(histogram_file(work, step, i)), allow_pickle=False)
        np.add.at(counts, (part[:, 0], part[:, 1]), part[:, 2])
    return counts
