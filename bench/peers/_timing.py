"""The timing every peers script shares (``ours.py``, ``nemo_filter.py``,
``datatrove_filter.py``, ``datatrove_decont.py``): the process's CPU seconds, a
stopwatch over wall and CPU time, the kept-lines count and the one JSON line a script
prints for ``bench/peers/run.py``.

Standard library only: each script runs in its own venv (the project's, NeMo Curator's,
DataTrove's) and imports this file as a sibling (the script's folder is ``sys.path[0]``).
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def cpu() -> float:
    """User + system CPU seconds of this process and the children it waited for."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


class Stopwatch:
    """``with Stopwatch() as sw: ...``, then ``sw.wall`` and ``sw.cpu`` (seconds)."""

    wall: float = 0.0
    cpu: float = 0.0

    def __enter__(self) -> Stopwatch:
        self._c0, self._w0 = cpu(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self._w0, cpu() - self._c0

    def fields(self, prefix: str = "step") -> dict[str, float]:
        """``{"<prefix>_wall_s", "<prefix>_cpu_s"}``, the keys ``run.py`` reads."""
        return {f"{prefix}_wall_s": self.wall, f"{prefix}_cpu_s": self.cpu}


def count_lines(paths: Iterable[Path]) -> int:
    """Newlines in ``paths``: the documents of JSONL files."""
    return sum(p.read_bytes().count(b"\n") for p in paths)


def emit(result: dict[str, Any]) -> None:
    """Print the one JSON line ``run.py`` takes as the run's result (its last ``{`` line)."""
    print(json.dumps(result))
