"""Checkers of the later steps' artifacts, by the completion artifact they prove.

``curate audit`` with ``output_root`` set audits every step that ran under a flow's
output root: for each kind below, every ``<output_root>/<dir>/<artifact>`` (and
``<output_root>/<artifact>``) found is handed to its ``check``, which proves from disk
what that artifact claims and returns its report block and findings
(``audit_report.json`` ``steps.<name>``).

A checker reads only files: the artifact, the shards and lists it names, and whatever
inputs it records. It never imports the step's own package (the step packages are
independent, and an auditor that reuses the producer's code proves less). A step that
wants auditing records in its artifact the paths its checker needs, and names its
checker in its spec (``StepSpec.audit``): the kinds are derived from the registry.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from curator.audit.checks import Block
from curator.audit.parquet import check_parquet_copy, has_parquet_copy
from curator.config import CorpusStepConfig

if TYPE_CHECKING:
    from curator.steps.spec import StepSpec


@dataclass(frozen=True)
class ArtifactKind:
    """One kind of artifact the audit can prove."""

    name: str  # its block in audit_report.json ``steps``: the step's key
    artifact: str  # the completion artifact's file name (``subset_report.json``)
    check: Callable[[Path], Block]  # the artifact's path -> (block, findings)
    #: whether an artifact found by name is one this kind proves (default: every one)
    applies: Callable[[Path], bool] = lambda path: True

    def prove(self, path: Path, root: Path) -> Block:
        """``check`` the artifact at ``path`` found under ``root``; a checker with a
        ``root`` parameter reads the paths its artifact records under that root (a
        copied root is audited as itself: :mod:`curator.audit.rebase`)."""
        if "root" in inspect.signature(self.check).parameters:
            return self.check(path, root=root)  # type: ignore[call-arg]
        return self.check(path)


def kinds_of(specs: Iterable[StepSpec]) -> tuple[ArtifactKind, ...]:
    """The kinds the steps declare, in flow order: each step's audit hook
    (``StepSpec.audit``), then the Parquet copy of every step that writes a corpus
    (``output_format: jsonl+parquet``), where its completion artifact lists one."""
    specs = tuple(specs)
    hooks = [ArtifactKind(s.key, str(s.completion_name({})), s.audit)
             for s in specs if s.audit is not None]
    copies = [ArtifactKind(f"parquet:{s.key}", str(s.completion_name({})), check_parquet_copy,
                           has_parquet_copy)
              for s in specs if issubclass(s.config, CorpusStepConfig)]
    return (*hooks, *copies)


def found(root: Path, kinds: Iterable[ArtifactKind]) -> list[tuple[ArtifactKind, Path]]:
    """Every artifact of one of ``kinds`` directly in ``root`` or one directory below
    it, in ``kinds`` order, then path order."""
    out: list[tuple[ArtifactKind, Path]] = []
    for kind in kinds:
        paths = [root / kind.artifact, *sorted(root.glob(f"*/{kind.artifact}"))]
        out.extend((kind, p) for p in paths if p.is_file() and kind.applies(p))
    return out
