"""Progress reporting shared by the flows: a Prefect progress artifact per phase, plus
any local listeners (the command line's progress bar registers one)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact

from curator.pipeline import Progress
from flows.listeners import add_listener, notify

__all__ = ["PhaseProgress", "add_listener"]


class PhaseProgress:
    """``on_progress(phase, progress)`` for a step: artifacts and listeners."""

    def __init__(self, step: str, key_prefix: str | None = None) -> None:
        self.step = step
        self.key_prefix = key_prefix
        self._artifacts: dict[str, UUID] = {}

    def __call__(self, phase: str, p: Progress) -> None:
        artifact = self._artifacts.get(phase)
        if artifact is None:
            artifact = self._artifacts[phase] = create_progress_artifact(
                progress=0.0,
                key=f"{self.key_prefix}-{phase}-progress" if self.key_prefix else None,
                description=f"{self.step} {phase}: source partitions done",
            )
        update_progress_artifact(artifact, progress=100.0 * p.done / max(p.total, 1))
        notify(self.step, phase, p)

    def describe(self) -> dict[str, Any]:
        return {phase: str(a) for phase, a in self._artifacts.items()}
