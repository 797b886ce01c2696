"""Write the JSON Schemas of the artifact models (what a user's tool validates an
artifact with): ``python -m curator.models.export docs/schemas``.

One file per artifact, ``<name>.schema.json``; a test keeps the committed files equal to
:func:`schema_texts` (tests/models/test_schemas.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from curator.models import MODEL_BY_NAME

#: the schema file's stem of each artifact file name (``plan.json`` is the subset's)
STEMS = {"plan.json": "subset_plan", ".curate_flow_step.json": "flow_step_marker"}


def schema_name(artifact: str) -> str:
    """``run_manifest.json`` -> ``run_manifest.schema.json``."""
    return STEMS.get(artifact, artifact.removesuffix(".json")) + ".schema.json"


def schema_texts() -> dict[str, str]:
    """``{schema file name: its text}`` for every artifact model."""
    out = {}
    for artifact, model in MODEL_BY_NAME.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                  "$comment": f"{artifact}: generated from {model.__module__}."
                              f"{model.__name__} by python -m curator.models.export",
                  **model.model_json_schema(by_alias=True)}
        out[schema_name(artifact)] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return out


def export(folder: str | Path) -> list[Path]:
    """Write every schema into ``folder``; return the paths written."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in schema_texts().items():
        path = target / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - the command line
    for written_path in export(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas"):
        print(written_path)
