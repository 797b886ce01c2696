"""Where a path an artifact records is now, in the output root being audited.

Artifacts record absolute paths of the root they were written in. A root copied or
moved (``cp -r demo-run copy``) keeps them, so a whole-root audit that followed them
would prove the original, not the root it was given. Each recorded path is therefore
resolved against the root given (docs/audit.md, "A copied or moved root"):

- a path under the *original root* is rebased onto the given root. The original root
  is the ``output_root`` its ``flow_plan.json`` records, and the artifact's
  ``producer.output_dir`` less the depth of the artifact's folder below the root (an
  artifact in ``<root>/decontaminated`` was written in ``<original>/decontaminated``);
- a path already under the given root is read as it is;
- what the step wrote (its output, its lists, its plan) must be under the given root,
  and so must every rebased path (a ``..`` or a symlink may not lead out): otherwise
  the path *leaves the root*, is not read, and the checker reports
  ``audit_path_outside_root`` naming the artifact and the field;
- an input the step read from outside the original root (a holdout kept elsewhere) is
  read where it is: the original and the copy share it.

A relative recorded path is taken relative to the working directory (the producer's,
when the audit runs from the same place) before it is compared with the original root.

Without a root (a checker called on one artifact) every path is read as recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from curator import models
from curator.audit.checks import Finding, finding
from curator.errors import CuratorError
from curator.io import storage
from curator.models import FlowPlanFile

#: the finding of a recorded path that leaves the audited root
OUTSIDE = "audit_path_outside_root"


def plan_root(root: Path) -> str | None:
    """The ``output_root`` the root's ``flow_plan.json`` records (``None``: no readable
    plan; an unreadable one is refused where the filter's config is derived)."""
    try:
        plan = models.read(FlowPlanFile, root / "flow_plan.json")
    except (OSError, CuratorError):
        return None
    return plan.output_root


def rebase_values(value: Any, origin: str | None, root: Path) -> Any:
    """``value`` (a flow plan's step config) with every string that is a path under
    ``origin`` rebased onto ``root``, recursively."""
    if isinstance(value, dict):
        return {k: rebase_values(v, origin, root) for k, v in value.items()}
    if isinstance(value, list):
        return [rebase_values(v, origin, root) for v in value]
    if isinstance(value, str) and origin and Path(origin) != root:
        under = _relative(value, origin)
        return str(root / under) if under is not None else value
    return value


def _relative(path: str, origin: str) -> PurePath | None:
    """``path`` relative to ``origin`` when it lies under it (compared as written: the
    original root may be gone)."""
    p, o = PurePath(path), PurePath(origin)
    return p.relative_to(o) if p.is_absolute() and o.is_absolute() and p.is_relative_to(o) \
        else None


@dataclass(frozen=True)
class Rebase:
    """The paths of one artifact, resolved against the audited root."""

    artifact: Path
    root: Path | None  # resolved; None: read every path as recorded
    origins: tuple[str, ...] = ()  # where the root was when the artifact was written

    @classmethod
    def of(cls, artifact: Path, root: Path | None, output_dir: str | None) -> Rebase:
        """For ``artifact`` found under ``root``, whose producer wrote ``output_dir``."""
        if root is None:
            return cls(artifact, None)
        root = root.resolve()
        origins = [o for o in (plan_root(root),) if o]
        try:
            depth = len(artifact.parent.resolve().relative_to(root).parts)
        except ValueError:  # not under the root: nothing to rebase from
            depth = -1
        if output_dir and depth >= 0 and PurePath(output_dir).is_absolute():
            recorded = PurePath(output_dir)
            origins.append(str(recorded.parents[depth - 1] if depth else recorded))
        return cls(artifact, root, tuple(dict.fromkeys(origins)))

    def path(self, recorded: str, field: str, *, output: bool,
             problems: list[Finding]) -> str | None:
        """Where ``recorded`` (the artifact's ``field``) is now; ``None`` when it leaves
        the root (the finding is appended to ``problems``). ``output``: the step wrote
        it, so it must be under the root. An input's URL is read where it is."""
        if self.root is None or (storage.is_remote(recorded) and not output):
            return recorded
        # a relative path was relative to the producer's working directory: taken as
        # this one's (the usual case: the same command line, run from the same place)
        absolute = recorded if Path(recorded).is_absolute() else os.path.abspath(recorded)
        for origin in self.origins:
            under = _relative(absolute, origin)
            if under is not None:
                path, rebased = self.root / under, True
                break
        else:
            path, rebased = Path(recorded), False
        if storage.is_remote(recorded) or (
                (rebased or output) and not path.resolve().is_relative_to(self.root)):
            problems.append(finding(
                OUTSIDE, f"{self.artifact}: {field} {recorded!r} leaves the audited root "
                f"{self.root}: not read", artifact=str(self.artifact), field=field))
            return None
        return str(path)

    def paths(self, recorded: list[str], field: str, *, output: bool,
              problems: list[Finding]) -> list[str] | None:
        """Each of ``recorded`` (``field[i]``) where it is now; ``None`` if one leaves."""
        out = [self.path(p, f"{field}[{i}]", output=output, problems=problems)
               for i, p in enumerate(recorded)]
        return None if any(p is None for p in out) else [p for p in out if p is not None]


__all__ = ["OUTSIDE", "Rebase", "plan_root", "rebase_values"]
