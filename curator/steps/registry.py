"""The registry of steps, in flow order: the one list the outer layers iterate.

Adding a step is one line here (see docs/architecture.md, "How to add a step").
"""

from __future__ import annotations

from curator.steps.audit import SPEC as AUDIT
from curator.steps.decontamination import SPEC as DECONTAMINATION
from curator.steps.filter import SPEC as FILTER
from curator.steps.ingest import SPEC as INGEST
from curator.steps.profile import SPEC as PROFILE
from curator.steps.spec import StepSpec, register
from curator.steps.subset import SPEC as SUBSET

STEPS: tuple[StepSpec, ...] = (INGEST, PROFILE, FILTER, AUDIT, DECONTAMINATION, SUBSET)
BY_KEY: dict[str, StepSpec] = {spec.key: spec for spec in STEPS}
register(STEPS)


def step(key: str) -> StepSpec:
    """The spec of step ``key`` (``KeyError`` if there is none)."""
    return BY_KEY[key]
