"""One exception type for every user-facing failure, carrying a stable error id.

Exit codes are mapped in one place (:data:`EXIT_CODES`), following the design:
0 ok, 1 audit findings, 2 a problem the user can fix, 3 an integrity refusal,
and 128+signal for a run that was interrupted and can be resumed.
"""

from __future__ import annotations

import signal

#: error id -> process exit code. Ids not listed here exit with 2.
EXIT_CODES: dict[str, int] = {
    "audit_findings": 1,
    "checkpoint_on_network_filesystem": 2,
    "non_resumable_stage": 2,
    "invalid_pipeline": 2,
    "source_stage_failed_task": 2,
    "partition_failed": 2,
    "direction_mismatch": 3,
    "holdout_modified": 3,
    "interrupted_sigint": 128 + signal.SIGINT,
    "interrupted_sigterm": 128 + signal.SIGTERM,
}


class CuratorError(Exception):
    """A failure with a stable ``error_id`` that reports, logs and exit codes carry."""

    def __init__(self, error_id: str, message: str, **details: object) -> None:
        super().__init__(f"[{error_id}] {message}")
        self.error_id = error_id
        self.message = message
        self.details = details

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.error_id, 2)

    def __reduce__(self) -> tuple[object, ...]:
        # keyword details do not survive Exception's default pickling, and a process
        # pool that cannot unpickle a worker's exception breaks, losing its partitions
        return (_rebuild, (type(self), self.error_id, self.message, self.details))


def _rebuild(cls: type[CuratorError], error_id: str, message: str,
             details: dict[str, object]) -> CuratorError:
    return cls(error_id, message, **details)
