"""Compiled loops of the signals (numba), imported on first use by
:mod:`curator.signals.scoring`, so a process that never scores a character signal does
not pay for numba's import (~0.7 s) or for loading the compiled code (cached on disk)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def class_counts(cps: np.ndarray, n_chars: np.ndarray, cls: np.ndarray,
                 k: int) -> np.ndarray:  # pragma: no cover - compiled
    """(documents x classes) counts: document ``d`` is the next ``n_chars[d]`` code points
    of ``cps``, each counted in column ``cls[cp]``. One pass; the numpy form was four
    (repeat, table lookup, add, bincount) over arrays of 8 bytes per code point."""
    out = np.zeros((len(n_chars), k), dtype=np.int64)
    pos = 0
    for d in range(len(n_chars)):
        for _ in range(n_chars[d]):
            out[d, cls[cps[pos]]] += 1
            pos += 1
    return out
