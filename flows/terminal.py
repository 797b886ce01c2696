"""Progress bars on the command line (rich), fed by the flows' progress listeners."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from curator import models
from curator.errors import CuratorError
from curator.models import ArtifactModel
from curator.models.producer import Warned
from curator.pipeline import Progress as PartitionProgress
from curator.steps.spec import StepSpec
from flows.listeners import add_listener


@contextmanager
def progress_bars(steps: Iterable[StepSpec]) -> Iterator[Progress]:
    """One bar per (step, phase) over source partitions, with a document count from the
    phase's counter (two steps may both have a phase called ``sample``)."""
    specs = list(steps)
    prefix = len(specs) > 1
    phases = {(s.key, ph.name): (f"{s.key}: {ph.label}" if prefix else ph.label, ph.counter)
              for s in specs for ph in s.phases}
    bars = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("partitions  {task.fields[docs]:,} documents"),
        TimeElapsedColumn(),
        transient=False,
    )
    tasks: dict[tuple[str, str], int] = {}
    docs: dict[tuple[str, str], float] = {}

    def listener(step: str, phase: str, p: PartitionProgress) -> None:
        key = (step, phase)
        label, stat = phases.get(key, (f"{step}: {phase}", ""))
        if key not in tasks:
            tasks[key] = bars.add_task(label, total=p.total, docs=0)
            docs[key] = 0
        docs[key] += p.stats.get(stat, 0)
        bars.update(tasks[key], completed=p.done, total=p.total, docs=int(docs[key]))

    remove = add_listener(listener)
    try:
        with bars:
            yield bars
    finally:
        remove()


def warning_lines(report: ArtifactModel | dict[str, Any]) -> list[str]:
    """The warnings a step's report lists (its model, or the dict a run returned), read
    through :class:`~curator.models.producer.Warned` (``{id, message}`` records or
    strings), one line each (``[id] message``), for the command line after the summary:
    what is only in the JSON is never seen (``token_shortfall``, ``starved_strata``,
    ``holdout_lines_skipped``, ``everything_removed``, ...)."""
    data = report.dump() if isinstance(report, ArtifactModel) else report
    try:
        found = models.parse(Warned, data, "its report").warnings or []
    except CuratorError as exc:  # said, not raised: the step itself has finished
        return [f"its warnings are unreadable: {exc.message}"]
    lines: list[str] = []
    for w in found:
        if isinstance(w, str):
            lines.append(w)
            continue
        text = w.message if w.message is not None else ", ".join(
            f"{k}={v}" for k, v in w.dump().items() if k != "id")
        lines.append(f"[{w.id}] {text}" if w.id else text)
    return lines
