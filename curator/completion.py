"""Completion tracking: when is a source partition done?

Each source partition starts with one pending descendant (its own task). Every
:class:`~curator.adapter.CompletionEvent` resolves one slot (``-1`` on that id)
and opens its still-pending outputs (``+1`` on each). The tracker keeps these as
signed counts per lineage id, so the result does not depend on the order in which
events arrive: a child's consumption reported before its parent's fan-out leaves
``-1`` on the child and ``+1`` on the parent, and the source is *not* complete. A
source is complete exactly when every count is back to zero, and only then is its
id persisted.

Events are idempotent per slot: the same event twice counts once; a changed event
for the same slot replaces the old one. State is kept only for sources in flight
and dropped when they complete or are released, so memory is bounded by the
sources in flight, not by the tasks ever seen.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from curator.adapter import CompletionEvent
from curator.checkpoint import CheckpointStore

log = logging.getLogger("curator.resumability")


@dataclass
class _SourceState:
    counts: Counter[str] = field(default_factory=Counter)
    applied: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def add(self, task_id: str, amount: int) -> None:
        value = self.counts[task_id] + amount
        if value:
            self.counts[task_id] = value
        else:
            del self.counts[task_id]

    @property
    def balanced(self) -> bool:
        return not self.counts


class CompletionTracker:
    """Pending-descendant bookkeeping for the sources of one run."""

    def __init__(self, store: CheckpointStore | None = None) -> None:
        self.store = store
        self._inflight: dict[str, _SourceState] = {}
        self._completed: set[str] = store.completed_copy() if store is not None else set()

    @property
    def completed(self) -> frozenset[str]:
        return frozenset(self._completed)

    @property
    def completed_live(self) -> AbstractSet[str]:
        """The completed ids themselves, not a copy (at 10^6 ids a copy costs 0.1-0.4 s):
        it changes as sources complete, so read it before anything completes."""
        return self._completed

    @property
    def in_flight(self) -> int:
        return len(self._inflight)

    def is_completed(self, source_id: str) -> bool:
        return source_id in self._completed

    def open(self, source_id: str, task_id: str) -> None:
        """A source partition starts with one pending descendant, its own task."""
        self._state(source_id).add(task_id, +1)

    def apply(
        self,
        events: Iterable[CompletionEvent],
        stats: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Apply events; persist (in one commit) and return the sources now complete."""
        touched: list[str] = []
        for event in events:
            sid = event.source_id
            if sid in self._completed and sid not in self._inflight:
                self._uncomplete(sid, event)
            state = self._state(sid)
            previous = state.applied.get(event.task_id)
            if previous == event.children:
                continue  # a retry of the same slot: counted once
            if previous is not None:  # the same slot reported differently: latest wins
                state.add(event.task_id, +1)
                for child in previous:
                    state.add(child, -1)
            state.applied[event.task_id] = event.children
            state.add(event.task_id, -1)
            for child in event.children:
                state.add(child, +1)
            if sid not in touched:
                touched.append(sid)
        done = [sid for sid in touched if self._inflight[sid].balanced]
        if done:
            if self.store is not None:
                self.store.mark_completed({sid: (stats or {}).get(sid) for sid in done})
            for sid in done:
                del self._inflight[sid]
                self._completed.add(sid)
        return done

    def release(self, source_id: str) -> None:
        """Forget an unfinished source (its unit ended without completing it: it replays)."""
        self._inflight.pop(source_id, None)

    def _state(self, source_id: str) -> _SourceState:
        state = self._inflight.get(source_id)
        if state is None:
            state = self._inflight[source_id] = _SourceState()
        return state

    def _uncomplete(self, source_id: str, event: CompletionEvent) -> None:
        log.warning(
            "resumability: received an update for source %s (task %s) after it completed. "
            "Removing %s from the completed set; it will be processed again on the next run.",
            source_id, event.task_id, source_id,
        )
        self._completed.discard(source_id)
        if self.store is not None:
            self.store.uncomplete(source_id)
