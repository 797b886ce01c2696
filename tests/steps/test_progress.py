"""Progress is keyed by step and phase: two steps may both have a phase called ``sample``."""

from __future__ import annotations

from dataclasses import replace

from curator.pipeline import Progress
from curator.steps.registry import BY_KEY
from curator.steps.spec import Phase
from flows.listeners import _LISTENERS
from flows.terminal import progress_bars


def test_two_steps_with_a_phase_of_the_same_name_get_two_bars() -> None:
    first = replace(BY_KEY["ingest"], key="first",
                    phases=(Phase("sample", "draw", "first.docs"),))
    second = replace(BY_KEY["ingest"], key="second",
                     phases=(Phase("sample", "draw", "second.docs"),))
    def progress(done: int, total: int, docs: dict[str, float]) -> Progress:
        return Progress(done=done, total=total, source_id="s", completed=True, stats=docs)

    with progress_bars([first, second]) as bars:
        for listener in list(_LISTENERS):
            listener("first", "sample", progress(1, 2, {"first.docs": 5}))
            listener("second", "sample", progress(2, 4, {"second.docs": 7}))
            listener("first", "sample", progress(2, 2, {"first.docs": 3}))
    tasks = {t.description: t for t in bars.tasks}
    assert set(tasks) == {"first: draw", "second: draw"}
    assert (tasks["first: draw"].completed, tasks["first: draw"].fields["docs"]) == (2, 8)
    assert (tasks["second: draw"].completed, tasks["second: draw"].fields["docs"]) == (2, 7)
    assert not _LISTENERS  # the listener goes with the bars
