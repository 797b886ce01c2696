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


def warning_lines(report: Any) -> list[str]:
    """The warnings a step's report lists (``warnings``: ``{id, message}`` records or
    strings), one line each (``[id] message``), for the command line after the summary:
    what is only in the JSON is never seen (``token_shortfall``, ``starved_strata``,
    ``holdout_lines_skipped``, ``everything_removed``, ...)."""
    if not isinstance(report, dict) and callable(getattr(report, "dump", None)):
        report = report.dump()  # a report's model (curator.models)
    found = report.get("warnings") if isinstance(report, dict) else None
    lines: list[str] = []
    for w in found if isinstance(found, list) else []:
        if isinstance(w, dict):
            wid, message = w.get("id"), w.get("message")
            text = str(message) if message is not None else ", ".join(
                f"{k}={v}" for k, v in w.items() if k != "id")
            lines.append(f"[{wid}] {text}" if wid else text)
        elif w is not None:
            lines.append(str(w))
    return lines
