"""The run report's funnel, as each step declares its row (``StepSpec.funnel``).

A step whose completion artifact counts documents in and out gives a reader from its
typed artifact to :data:`Funnel`: its rows (what it read, passed on, and every loss)
and, for a step that writes tiers, one row per tier. ``curate report`` iterates the
registry and calls each step's reader; it names no step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Loss:
    """Documents (and tokens, where counted) a step did not pass on, and why."""

    reason: str
    documents: int
    tokens: int | None = None


@dataclass
class FunnelRow:
    """One row of the funnel: what a step read, what it passed on, and every loss."""

    key: str
    label: str
    documents_in: int
    documents_out: int
    losses: list[Loss] = field(default_factory=list)
    tokens_in: int | None = None
    tokens_out: int | None = None
    note: str = ""

    @property
    def balanced(self) -> bool:
        return self.documents_in == self.documents_out + sum(x.documents for x in self.losses)


#: ``(rows, tiers)``: a step's funnel rows, and the tiers it writes (if any)
Funnel = tuple[list[FunnelRow], list[FunnelRow]]
#: a step's funnel reader: its typed completion artifact -> :data:`Funnel`
FunnelReader = Callable[[Any], Funnel]


class MissingCount(ValueError):
    """A count the funnel needs is absent from an artifact (typed, but left out): the
    step is listed in the report, not in the funnel."""


def need(x: int | None, what: str) -> int:
    """``x``, or :class:`MissingCount` naming ``what``."""
    if x is None:
        raise MissingCount(what)
    return x


class SkipCounts(Protocol):
    unparsable_lines: int | None
    skipped_non_mapping: int | None
    skipped_missing_text: int | None
    skipped_missing_id: int | None


_SKIPS = {"unparsable_lines": "unparsable line", "skipped_non_mapping": "not an object",
          "skipped_missing_text": "missing text", "skipped_missing_id": "missing id"}


def skips(block: SkipCounts) -> list[Loss]:
    """The records a step read but could not use, as losses (the kernel's reasons)."""
    counts = {k: getattr(block, k) for k in _SKIPS}
    return [Loss(f"skipped: {label}", counts[k]) for k, label in _SKIPS.items() if counts[k]]
