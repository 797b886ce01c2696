"""The artifact models (curator/models): each artifact of a real run parses through its
model and dumps back to the same bytes; its JSON Schema in docs/schemas/ is current and
accepts it; the one completion rule; what a malformed artifact is refused with."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from curator import models
from curator.artifacts import dump_json
from curator.errors import CuratorError
from curator.models import (
    MODEL_BY_NAME,
    CompletionArtifact,
    CurationLedger,
    IngestReport,
    SubsetReport,
)
from curator.models.export import schema_name, schema_texts
from tests.report._support import full_run

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "docs" / "schemas"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All six steps of a small flow (tests/report/_support.py)."""
    return full_run(tmp_path_factory.mktemp("models"), docs=60)


def _artifacts(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if p.name in MODEL_BY_NAME
                  and "raw" not in p.relative_to(root).parts)


#: artifacts no flow run writes: the checkpoint's summary, curate evaluate's report; and
#: the optional dedup step's report (off in this flow: tests/dedup/ parse it)
NOT_IN_A_FLOW = {"checkpoint_summary.json", "evaluation.json", "dedup_report.json"}


def test_a_real_run_writes_every_artifact_kind(root: Path) -> None:
    names = {p.name for p in _artifacts(root)}
    assert names >= set(MODEL_BY_NAME) - NOT_IN_A_FLOW, sorted(names)


def test_the_evaluation_report_is_its_model(tmp_path: Path) -> None:
    """curate evaluate's report: written through its model, read back to the same bytes,
    valid by its published schema; one without its totals is refused."""
    from curator.evaluate import evaluate_policy
    from tests.evaluate._support import LANGPACKS, approved_policy, known_set, write_labelled

    labelled = write_labelled(tmp_path / "set.jsonl", known_set())
    report = evaluate_policy(approved_policy(tmp_path / "policy"), [labelled],
                             langpack_dir=LANGPACKS, words=(3, 500))
    raw = dump_json(report)
    model = models.load(MODEL_BY_NAME["evaluation.json"], raw, "evaluation.json")
    assert dump_json(model.dump()) == raw
    schema = json.loads((SCHEMAS / schema_name("evaluation.json")).read_text("utf-8"))
    jsonschema.validate(json.loads(raw), schema)
    del report["totals"]
    with pytest.raises(CuratorError, match="totals"):
        models.parse(MODEL_BY_NAME["evaluation.json"], report, "evaluation.json")


def test_every_artifact_round_trips_through_its_model_byte_for_byte(root: Path) -> None:
    for path in _artifacts(root):
        raw = path.read_text(encoding="utf-8")
        model = models.load(MODEL_BY_NAME[path.name], raw, str(path))
        if path.name == "plan.json":  # written by orjson (no final newline): same JSON
            assert model.dump() == json.loads(raw), path
        else:
            assert dump_json(model.dump()) == raw, path


def test_every_artifact_is_valid_by_its_published_schema(root: Path) -> None:
    for path in _artifacts(root):
        schema = json.loads((SCHEMAS / schema_name(path.name)).read_text(encoding="utf-8"))
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)


def test_the_schemas_in_docs_are_the_models() -> None:
    texts = schema_texts()
    for name, text in texts.items():
        path = SCHEMAS / name
        assert path.is_file() and path.read_text(encoding="utf-8") == text, (
            f"{path} is stale: regenerate with python -m curator.models.export docs/schemas")


def test_a_published_schema_refuses_a_wrong_type() -> None:
    schema = json.loads((SCHEMAS / "curation_ledger.schema.json").read_text("utf-8"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"n_input": "3000"}, schema)


@pytest.mark.parametrize(("producer", "complete"), [
    (None, False), ({}, False), ({"completed_at": None}, False),
    ({"completed_at": ""}, False), ({"completed_at": "2026-01-01T00:00:00Z"}, True)])
def test_the_one_completion_rule(producer: dict[str, Any] | None, complete: bool) -> None:
    data = {"schema_version": 1} if producer is None else {"producer": producer}
    assert CompletionArtifact.model_validate(data).is_complete is complete
    assert IngestReport.model_validate({**data, "completed_at": "x"}).is_complete is complete


@pytest.mark.parametrize("value", [True, 3000.0, 3000.9, "3000", [3000], float("nan"),
                                   float("inf"), 10**30 * 1.0])
def test_a_count_is_a_json_integer(value: Any) -> None:
    with pytest.raises(CuratorError) as info:
        models.parse(SubsetReport, {"corpus": {"total_tokens": value}}, "r.json")
    assert info.value.error_id == "artifact_invalid"
    assert info.value.message.startswith("r.json: corpus.total_tokens: ")


def test_a_malformed_artifact_names_the_file_and_the_field() -> None:
    with pytest.raises(CuratorError) as info:
        models.load(IngestReport, '{"producer": {"execution": {"workers": "two"}}}', "x.json")
    assert info.value.message.startswith("x.json: producer.execution.workers: ")
    with pytest.raises(CuratorError, match=r"y\.json: not JSON"):
        models.load(IngestReport, "{", "y.json")
    with pytest.raises(CuratorError, match=r"z\.json: \(the whole document\)"):
        models.load(IngestReport, "[1]", "z.json")


def test_a_ledger_lacking_a_count_is_refused() -> None:
    ledger = {"stage": "s", "source": "x", "n_input": 1, "n_success": 1, "n_filtered": 0,
              "n_failed": 0, "n_quarantined": 0, "n_accounted": 1, "balanced": True,
              "filtered_by_reason": {}, "failed_units": [], "quarantined_units": [],
              "notes": {}}
    assert CurationLedger.model_validate(ledger).n_input == 1
    with pytest.raises(CuratorError, match="n_success"):
        models.parse(CurationLedger, {k: v for k, v in ledger.items() if k != "n_success"},
                     "l.json")


def test_build_keeps_none_and_absent_apart_and_numbers_as_given() -> None:
    data = {"schema_version": 1, "error": None, "producer": {"seconds": 2, "step_id": "s"},
            "extra": {"ratio": 0.5, "count": 3, "nan": float("nan")}}
    built = models.build(IngestReport, data)
    assert built == {"schema_version": 1, "error": None,
                     "producer": {"seconds": 2, "step_id": "s"},
                     "extra": {"ratio": 0.5, "count": 3, "nan": None}}
    assert dump_json(built) == dump_json(data)  # NaN is null on disk either way


def test_the_models_import_no_step_and_neither_prefect_nor_ray() -> None:
    forbidden = ("curator.steps", "curator.ingest", "curator.profile", "curator.filter",
                 "curator.audit", "curator.decontamination", "curator.subset",
                 "curator.flow", "curator.report", "prefect", "ray", "flows", "executors")
    for path in sorted((REPO / "curator" / "models").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(forbidden), f"{path.name} imports {name}"


def test_the_checkpoint_summary_is_its_model(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from curator.checkpoint import METADATA_DIRNAME
    from curator.models import CheckpointSummary
    from flows.cli import app

    (tmp_path / METADATA_DIRNAME).mkdir()
    (tmp_path / METADATA_DIRNAME / "w.mdb").write_bytes(b"not lmdb")
    result = CliRunner().invoke(app, ["checkpoint", "show", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    summary = models.load(CheckpointSummary, result.output, "stdout")
    assert summary.completed_sources == 0 and summary.writers == []
    assert [d.file for d in summary.damaged] == ["w.mdb"]
    schema = json.loads((SCHEMAS / "checkpoint_summary.schema.json").read_text("utf-8"))
    jsonschema.validate(json.loads(result.output), schema)
