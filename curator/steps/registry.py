"""The registry of steps, in flow order: the one list the outer layers iterate.

Adding a step is one line here: its step module, which defines ``SPEC`` (see
docs/architecture.md, "How to add a step").
"""

from __future__ import annotations

from importlib import import_module

from curator.steps.spec import StepSpec, register

#: the step modules, in flow order; each defines ``SPEC``
STEP_MODULES: tuple[str, ...] = (
    "curator.steps.ingest",
    "curator.steps.profile",
    "curator.steps.filter",
    "curator.steps.audit",
    "curator.steps.dedup",
    "curator.steps.decontamination",
    "curator.steps.subset",
)

STEPS: tuple[StepSpec, ...] = tuple(import_module(name).SPEC for name in STEP_MODULES)
BY_KEY: dict[str, StepSpec] = {spec.key: spec for spec in STEPS}
register(STEPS)


def step(key: str) -> StepSpec:
    """The spec of step ``key`` (``KeyError`` if there is none)."""
    return BY_KEY[key]
