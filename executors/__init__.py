"""Execution backends behind one interface (:class:`curator.execution.Executor`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from curator.execution import Executor, InlineExecutor
from executors.local import LocalExecutor

if TYPE_CHECKING:
    from executors.ray import RayExecutor

__all__ = ["Executor", "InlineExecutor", "LocalExecutor", "RayExecutor", "make_executor"]


def __getattr__(name: str) -> Any:  # import ray only when the Ray backend is asked for
    if name == "RayExecutor":
        from executors.ray import RayExecutor

        return RayExecutor
    raise AttributeError(name)


def make_executor(
    kind: str = "local", workers: int | None = None, ray_address: str | None = None,
    max_attempts: int = 3,
) -> Executor:
    """Build an executor from configuration: ``local`` (process pool), ``ray`` or ``inline``.
    ``max_attempts``: Ray's attempts of a unit whose worker or node is lost."""
    if kind == "local":
        return LocalExecutor(workers=workers)
    if kind == "ray":
        from executors.ray import RayExecutor

        return RayExecutor(address=ray_address, workers=workers, max_attempts=max_attempts)
    if kind == "inline":
        return InlineExecutor()
    from curator.errors import CuratorError

    raise CuratorError("invalid_executor", f"unknown executor {kind!r}: use local, ray or inline")
