"""Print where `make demo` put its artifacts and the ingest report's headline numbers.

    python examples/demo/summary.py [--workdir demo-run]

Reads ``<workdir>/ingested/ingest_report.json`` and compares it with what the demo
corpus generator planted (``<workdir>/raw/demo_corpus_manifest.yaml``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("demo-run"))
    args = parser.parse_args()
    raw, ingested = args.workdir / "raw", args.workdir / "ingested"
    report_path = ingested / "ingest_report.json"
    if not report_path.is_file():
        print(f"no report at {report_path}: run `make demo` first", file=sys.stderr)
        return 2
    report = json.loads(report_path.read_text(encoding="utf-8"))
    manifest_path = raw / "demo_corpus_manifest.yaml"
    manifest = yaml.safe_load(manifest_path.read_text(encoding="utf-8"))
    expected = manifest["expected_ingest"]

    raw_mb = sum(f["bytes"] for f in manifest["files"].values()) / 1e6
    shards = report.get("shards", [])
    print("\n== demo: curate ingest ==")
    print(f"raw corpus   {raw}/  ({len(manifest['files'])} files, {raw_mb:.1f} MB, "
          f"manifest {manifest_path.name})")
    print(f"shards       {ingested}/part_*.jsonl  ({len(shards)} shards, "
          f"{sum(s['rows'] for s in shards)} documents)")
    print(f"rejections   {ingested}/rejected/*.jsonl  (one line per rejected record, with a "
          "reason)")
    print(f"report       {report_path}")
    print()
    print(f"documents seen {report['documents_seen']}, accepted {report['documents_accepted']}, "
          f"rejected {report['documents_rejected']}; balance ok: {report['balance']['ok']}")
    reasons = ", ".join(f"{k} {v}" for k, v in report["rejections_by_reason"].items())
    print(f"rejected by reason: {reasons}")
    print(f"encodings: {', '.join(f'{k} {v}' for k, v in report['encodings_used'].items())}; "
          f"files with a BOM: {report['files_with_bom']}; lossy decodes: "
          f"{report['lossy_documents']}")
    print(f"ingest took {report['seconds']} s (completed normally: "
          f"{report['completed_normally']})")
    keys = ("documents_seen", "documents_accepted", "rejections_by_reason", "encodings_used")
    matches = all(report[k] == expected[k] for k in keys)
    print(f"matches the noise the generator planted: {'yes' if matches else 'NO'}")
    print("\nNext: read docs/demo-corpus.md for what the noise is and which later step "
          "should catch it.")
    return 0 if matches and report["balance"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
