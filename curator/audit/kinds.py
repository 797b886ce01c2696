"""Checkers of the later steps' artifacts, by the completion artifact they prove.

``curate audit`` with ``output_root`` set audits every step that ran under a flow's
output root: for each kind below, every ``<output_root>/<dir>/<artifact>`` (and
``<output_root>/<artifact>``) found is handed to its ``check``, which proves from disk
what that artifact claims and returns its report block and findings
(``audit_report.json`` ``steps.<name>``).

A checker reads only files: the artifact, the shards and lists it names, and whatever
inputs it records. It never imports the step's own package (the step packages are
independent, and an auditor that reuses the producer's code proves less). A step that
wants auditing records in its artifact the paths its checker needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from curator.audit.checks import Block
from curator.audit.decontamination import check_decontamination
from curator.audit.parquet import check_parquet_copy, has_parquet_copy
from curator.audit.subset import check_subset


@dataclass(frozen=True)
class ArtifactKind:
    """One kind of artifact the audit can prove."""

    name: str  # its block in audit_report.json ``steps``: the step's key
    artifact: str  # the completion artifact's file name (``subset_report.json``)
    check: Callable[[Path], Block]  # the artifact's path -> (block, findings)
    #: whether an artifact found by name is one this kind proves (default: every one)
    applies: Callable[[Path], bool] = lambda path: True


#: one entry per audited step kind, in flow order; a step adds its line here
KINDS: tuple[ArtifactKind, ...] = (
    ArtifactKind("decontamination", "decontamination_report.json", check_decontamination),
    ArtifactKind("subset", "subset_report.json", check_subset),
    # the Parquet copy of a corpus (``output_format: jsonl+parquet``), where one is listed
    *(ArtifactKind(f"parquet:{step}", artifact, check_parquet_copy, has_parquet_copy)
      for step, artifact in (("ingest", "ingest_report.json"), ("filter", "run_manifest.json"),
                             ("decontamination", "decontamination_report.json"),
                             ("subset", "subset_report.json"))),
)


def found(root: Path) -> list[tuple[ArtifactKind, Path]]:
    """Every artifact of a known kind directly in ``root`` or one directory below it,
    in :data:`KINDS` order, then path order."""
    out: list[tuple[ArtifactKind, Path]] = []
    for kind in KINDS:
        paths = [root / kind.artifact, *sorted(root.glob(f"*/{kind.artifact}"))]
        out.extend((kind, p) for p in paths if p.is_file() and kind.applies(p))
    return out
