"""Progress bars on the command line (rich), fed by the flows' progress listeners."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from curator.pipeline import Progress as PartitionProgress
from flows.progress import add_listener


@contextmanager
def progress_bars(phases: dict[str, tuple[str, str]]) -> Iterator[None]:
    """One bar per phase over source partitions, with a document count.

    ``phases`` maps a phase name to (label, the statistic that counts documents).
    """
    bars = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("partitions  {task.fields[docs]:,} documents"),
        TimeElapsedColumn(),
        transient=False,
    )
    tasks: dict[str, int] = {}
    docs: dict[str, float] = {}

    def listener(phase: str, p: PartitionProgress) -> None:
        label, stat = phases.get(phase, (phase, ""))
        if phase not in tasks:
            tasks[phase] = bars.add_task(label, total=p.total, docs=0)
            docs[phase] = 0
        docs[phase] += p.stats.get(stat, 0)
        bars.update(tasks[phase], completed=p.done, total=p.total, docs=int(docs[phase]))

    remove = add_listener(listener)
    try:
        with bars:
            yield
    finally:
        remove()
