"""Tasks: the units of data that move between stages.

``task_id`` is owned by the framework: it is empty on a task that user code
creates, assigned by the adapter at every stage boundary as an underscore-joined
lineage path (``0`` -> ``0_<source>`` -> ``0_<source>_0`` -> ...), and read-only
to stage code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass
class Task(Generic[T]):
    """Base of every task. Subclasses carry a payload in ``data``."""

    dataset_name: str = ""
    data: T | None = None
    _metadata: dict[str, Any] = field(default_factory=dict)
    _stage_perf: list[dict[str, Any]] = field(default_factory=list)
    _task_id: str = field(default="", init=False, repr=False)
    _source_id: str | None = field(default=None, init=False, repr=False)

    @property
    def task_id(self) -> str:
        """The lineage id the framework assigned; empty before the first stage boundary."""
        return self._task_id

    @property
    def source_id(self) -> str | None:
        """The source partition this task descends from (``None`` before the source stage)."""
        return self._source_id

    @property
    def num_items(self) -> int:
        return 0

    def get_deterministic_id(self) -> str | None:
        """A stable id used as the source segment when this task leaves a source stage.

        It must not contain ``_``: the last lineage segment is the source id.
        """
        return None

    def validate(self) -> bool:
        return True


def _hash_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass
class FileGroupTask(Task[list[str]]):
    """A group of input files, or one byte range of one file.

    Paths are kept sorted so the same group always has the same id. A byte-range
    partition sets ``_metadata["byte_range"] = (start, end)`` over a single path.
    """

    data: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.data = sorted(str(p) for p in self.data)

    @property
    def num_items(self) -> int:
        return len(self.data)

    @property
    def byte_range(self) -> tuple[int, int] | None:
        rng = self._metadata.get("byte_range")
        return (int(rng[0]), int(rng[1])) if rng is not None else None

    def get_deterministic_id(self) -> str:
        """12 hex digits of sha256 over the sorted paths (and the byte range, if any)."""
        key = "|".join(self.data) + "|"
        rng = self._metadata.get("byte_range")  # read once: planning hashes every partition
        if rng is not None:
            key += f"{int(rng[0])}-{int(rng[1])}|"
        return _hash_id(key)


@dataclass
class SentinelTask(Task[None]):
    """A marker with no payload; removed by the adapter before the next stage."""

    def __post_init__(self) -> None:
        assert self.data is None, "sentinel tasks carry no payload"

    @property
    def num_items(self) -> int:
        return 0


@dataclass
class EmptyTask(SentinelTask):
    """The root every run starts from; its id is always ``"0"``."""

    dataset_name: str = "empty"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._task_id = "0"


@dataclass
class NoneTask(SentinelTask):
    """A slot that was intentionally filtered: it consumes one pending descendant."""

    dataset_name: str = "none"


@dataclass
class FailedTask(SentinelTask):
    """A slot that failed: its source stays pending and replays on the next run."""

    dataset_name: str = "failed"
    reason: str = ""
