"""Progress reporting shared by the flows: a Prefect progress artifact per phase, plus
any local listeners (the command line's progress bar registers one).

The artifact is updated at most once a second and when the phase is done
(:class:`flows.engine.ProgressArtifact`), not per partition: a pass of 160,000
partitions would otherwise send 160,000 updates. Listeners still hear every partition.
"""

from __future__ import annotations

from typing import Any

from curator.pipeline import Progress
from flows.engine import ProgressArtifact, observe_progress
from flows.listeners import add_listener, notify

__all__ = ["PhaseProgress", "add_listener"]


class PhaseProgress:
    """``on_progress(phase, progress)`` for a step: artifacts and listeners."""

    def __init__(self, step: str, key_prefix: str | None = None) -> None:
        self.step = step
        self.key_prefix = key_prefix
        self._artifacts: dict[str, ProgressArtifact] = {}

    def __call__(self, phase: str, p: Progress) -> None:
        observe_progress(p)  # the pass's partition count sizes its task runs' batches
        artifact = self._artifacts.get(phase)
        if artifact is None:
            artifact = self._artifacts[phase] = ProgressArtifact(
                f"{self.key_prefix}-{phase}-progress" if self.key_prefix else None,
                f"{self.step} {phase}: source partitions done",
            )
        artifact.update(100.0 * p.done / max(p.total, 1))
        notify(self.step, phase, p)

    def describe(self) -> dict[str, Any]:
        return {phase: str(a.id) for phase, a in self._artifacts.items()}
