"""No artifact is read as a raw dict outside its model (issue 25): outside
``curator/models``, every JSON decode (``json.load``, ``json.loads``,
``orjson.loads``) and every ``(x or {}).get(`` chain in curator/, flows/ and examples/
is one the allow-list below names, with why it stays. A new one fails here: read the
artifact through :mod:`curator.models` (``models.read(Model, path)``), or add it
here with its reason if what it decodes is no artifact."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAW = re.compile(r"json\.loads?\(|\bor \{\}\)\.get\(")

CORPUS_LINE = "a corpus record (a JSONL line), not an artifact"
WORK_FILE = "a step's own work file (per-partition statistics), written and read by it"
CONFIG = "a config mapping (validated by its config model), not an artifact"

#: ``path: {count: reason}``: how many such lines the file may hold, and why
ALLOWED: dict[str, tuple[int, str]] = {
    "curator/corpus/records.py": (1, CORPUS_LINE),
    "curator/ingest/records.py": (1, CORPUS_LINE),
    "curator/evaluate/labelled.py": (1, "a labelled-sample line (curate evaluate's input)"),
    "curator/audit/decontamination.py": (1, CORPUS_LINE + " (removed/*.jsonl)"),
    "curator/audit/subset.py": (1, CORPUS_LINE + " (a tier's shard)"),
    "curator/audit/summary.py": (1, CORPUS_LINE),
    "curator/audit/parquet.py": (2, CORPUS_LINE + "; a Parquet cell's JSON text"),
    "curator/audit/scan.py": (1, WORK_FILE + " (the audit's scan of one file)"),
    "curator/steps/filter.py": (2, WORK_FILE + " (a filter unit's counters); " + CONFIG),
    "curator/steps/subset.py": (1, CORPUS_LINE),
    "curator/subset/stages.py": (1, CORPUS_LINE + " (a tier's shard)"),
    "curator/io/parquet_export.py": (1, CORPUS_LINE),
    "curator/io/parquet_copy.py": (2, WORK_FILE + " (a Parquet unit's schema and summary)"),
    "curator/corpus/fingerprint.py": (1, WORK_FILE),
    "curator/corpus/formats.py": (1, WORK_FILE + " (the summary a shard's writer leaves)"),
    "curator/decontamination/index.py": (1, WORK_FILE + " (the holdout index's meta)"),
    "curator/steps/decontamination.py": (2, WORK_FILE + " (the scan statistics)"),
    "curator/checkpoint.py": (6, "the checkpoint's LMDB values and its reader process's "
                                 "protocol lines, not files"),
    "curator/exchange/buckets.py": (2, "the exchange's pinned bucket count and its reduce "
                                       "units' bucket summaries: work files"),
    "curator/completion.py": (1, "per-partition statistics in memory"),
    "curator/checkpoint_mirror.py": (2, "the checkpoint mirror's own bookkeeping (its "
                                        "generation marker and local state), not files "
                                        "a step writes"),
    "curator/io/storage.py": (1, "the publish manifest of curator.io.storage (its own "
                                 "bookkeeping on a bucket)"),
    "curator/flow/plan.py": (1, CONFIG + " (the flow config's steps block)"),
    "curator/flow/approval.py": (2, "the approved policy YAML (curator/policy's own model) "
                                    "and a JSON round trip of a mapping"),
    "curator/filter/report.py": (1, "the writer's own error block"),
    "curator/report/page.py": (1, "the approved policy YAML (no artifact: curator/policy "
                                  "validates it; the page shows what a hand-edited one holds)"),
    "flows/direct.py": (1, "Prefect's profiles.toml, not an artifact"),
    "examples/demo/summary.py": (7, "corpus lines (dedup's kept and removed shards too), a "
                                    "labelled-sample line and the demo generator's "
                                    "planted.json"),
    "curator/dedup/docs.py": (1, CORPUS_LINE),
    "curator/dedup/stages.py": (1, CORPUS_LINE),
    "curator/dedup/report.py": (1, WORK_FILE + " (a dedup write unit's counts)"),
    "curator/audit/dedup.py": (2, CORPUS_LINE + "; the report's untyped params and input "
                                  "blocks (DedupReport keeps them as mappings)"),
}


def _raw_reads() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in ("curator", "flows", "examples"):
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel.startswith("curator/models/"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if RAW.search(line):
                    found.setdefault(rel, []).append(f"{rel}:{number}: {line.strip()}")
    return found


def test_the_pattern_finds_what_it_should() -> None:
    assert RAW.search('data = json.loads(path.read_text())')
    assert RAW.search('x = orjson.loads(line)')
    assert RAW.search('y = (report.get("producer") or {}).get("completed_at")')
    assert not RAW.search('models.load(IngestReport, raw, where)')


def test_no_artifact_is_read_outside_its_model() -> None:
    found = _raw_reads()
    unexplained = [line for rel, lines in found.items()
                   for line in (lines if rel not in ALLOWED else
                                lines[ALLOWED[rel][0]:] if len(lines) > ALLOWED[rel][0]
                                else [])]
    assert not unexplained, (
        "raw JSON reads outside curator/models (read the artifact through its model, or "
        "allow-list it with the reason):\n" + "\n".join(unexplained))


def test_the_allow_list_has_no_stale_entries() -> None:
    found = _raw_reads()
    stale = {rel: (n, len(found.get(rel, []))) for rel, (n, _) in ALLOWED.items()
             if len(found.get(rel, [])) < n}
    assert not stale, f"allow-list entries above what the files hold: {stale}"
