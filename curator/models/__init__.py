"""Typed artifacts: one pydantic model per JSON artifact the project writes and reads.

The kernel-level place every layer may import (it imports no step package and
nothing of Prefect or Ray). Writers build their artifact through its model
(:func:`build`); readers parse through it (:func:`parse`, :func:`load`,
:func:`read`): a malformed artifact is :class:`~curator.errors.CuratorError`
``artifact_invalid`` naming the file and the field, never a traceback. The one
completion rule is :attr:`CompletionArtifact.is_complete`. JSON Schemas of these
models are in docs/schemas/ (``python -m curator.models.export docs/schemas``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from curator.errors import CuratorError
from curator.models.audit_report import AuditReport, Finding
from curator.models.checkpoint_summary import CheckpointSummary
from curator.models.curation_ledger import CurationLedger
from curator.models.decontamination_report import DecontaminationReport
from curator.models.dedup_report import DedupReport
from curator.models.evaluation_report import EvaluationReport
from curator.models.flow_plan import FlowPlanFile, PlannedStep, StepMarker
from curator.models.flow_report import FlowReportFile, FlowStepEntry
from curator.models.ingest_report import IngestReport
from curator.models.producer import (
    ArtifactModel,
    CompletionArtifact,
    ErrorBlock,
    Execution,
    ParquetCopy,
    ParquetShard,
    Producer,
    Shard,
)
from curator.models.profile_report import ProfileReport
from curator.models.run_manifest import RunManifest
from curator.models.subset_plan import SubsetPlan
from curator.models.subset_report import SubsetReport, Tier

M = TypeVar("M", bound=ArtifactModel)

ARTIFACT_INVALID = "artifact_invalid"

#: every artifact file the project writes, by its (default) file name: the model that
#: reads it (and whose JSON Schema is in docs/schemas/)
MODEL_BY_NAME: dict[str, type[ArtifactModel]] = {
    "ingest_report.json": IngestReport,
    "profile_report.json": ProfileReport,
    "run_manifest.json": RunManifest,
    "curation_ledger.json": CurationLedger,
    "audit_report.json": AuditReport,
    "decontamination_report.json": DecontaminationReport,
    "dedup_report.json": DedupReport,
    "subset_report.json": SubsetReport,
    "plan.json": SubsetPlan,
    "flow_plan.json": FlowPlanFile,
    "flow_report.json": FlowReportFile,
    ".curate_flow_step.json": StepMarker,
    "checkpoint_summary.json": CheckpointSummary,
    "evaluation.json": EvaluationReport,
}


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the whole document)"


def problem(where: str, exc: ValidationError) -> str:
    """``where: field: what is wrong`` for the first errors of a validation."""
    errors = exc.errors(include_url=False)
    shown = "; ".join(f"{_field(e['loc'])}: {e['msg']}" for e in errors[:3])
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return f"{where}: {shown}{more}"


def parse(model: type[M], data: Any, where: str) -> M:
    """``data`` (parsed JSON) as ``model``; ``artifact_invalid`` naming ``where`` and the
    field when it does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CuratorError("artifact_invalid", problem(where, exc), path=where) from None


def load_json(raw: bytes | str, where: str) -> Any:
    """JSON text as Python values (the one place artifacts are decoded), or
    ``artifact_invalid``; for a reader that parses through a model itself (the audit
    turns a malformed ledger into a finding, with its own wording)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise CuratorError("artifact_invalid", f"{where}: not JSON: {str(exc)[:200]}",
                           path=where) from None


def load(model: type[M], raw: bytes | str, where: str) -> M:
    """JSON text parsed as ``model``, or ``artifact_invalid`` (a ``NaN`` or ``Infinity``
    where the model has a number is refused there, naming the field)."""
    return parse(model, load_json(raw, where), where)


def read(model: type[M], path: str | Path) -> M:
    """A local JSON file parsed as ``model``; ``OSError`` (absent, unreadable) is
    raised as it is, a malformed file is ``artifact_invalid``."""
    return load(model, Path(path).read_bytes(), str(path))


def read_json(path: str | Path) -> Any:
    """A local JSON file as Python values (:func:`load_json`); ``OSError`` as it is."""
    return load_json(Path(path).read_bytes(), str(path))


def _clean(value: Any) -> Any:
    # what curator.artifacts.dump_json writes for a non-finite float (null)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def build(model: type[M], data: dict[str, Any]) -> dict[str, Any]:
    """What a writer writes: ``data`` checked by ``model`` and dumped back (the same
    keys, ``None`` and absent kept apart; a NaN written as null, as the writer does)."""
    return model.model_validate(_clean(data)).dump()


__all__ = [
    "ARTIFACT_INVALID", "MODEL_BY_NAME", "ArtifactModel", "AuditReport",
    "CheckpointSummary", "CompletionArtifact", "CurationLedger", "DecontaminationReport",
    "DedupReport",
    "ErrorBlock", "EvaluationReport", "Execution", "Finding", "FlowPlanFile",
    "FlowReportFile", "FlowStepEntry",
    "IngestReport", "ParquetCopy", "ParquetShard", "PlannedStep", "Producer", "ProfileReport",
    "RunManifest", "Shard",
    "StepMarker", "SubsetPlan", "SubsetReport", "Tier", "build", "load",
    "load_json", "parse", "problem", "read", "read_json",
]
