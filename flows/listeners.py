"""Local progress listeners (the command line's bars): no Prefect, so a run without a
Prefect server feeds them too."""

from __future__ import annotations

from collections.abc import Callable

from curator.pipeline import Progress

#: ``listener(step, phase, progress)``
Listener = Callable[[str, str, Progress], None]
_LISTENERS: list[Listener] = []


def add_listener(listener: Listener) -> Callable[[], None]:
    """Register a progress listener; returns a function that removes it."""
    _LISTENERS.append(listener)
    return lambda: _LISTENERS.remove(listener)


def notify(step: str, phase: str, progress: Progress) -> None:
    """Tell every listener that ``step``'s ``phase`` progressed."""
    for listener in list(_LISTENERS):
        listener(step, phase, progress)


class LocalProgress:
    """``on_progress(phase, progress)`` of a step run without Prefect: listeners only."""

    def __init__(self, step: str) -> None:
        self.step = step

    def __call__(self, phase: str, p: Progress) -> None:
        notify(self.step, phase, p)
