"""The filter's artifacts: the run manifest and the ledger built from what a run counted
(a pure function), and their rendering for people (markdown, tables, one CLI line)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curator.filter.ledger import build_ledger
from curator.models import RunManifest
from curator.models.run_manifest import Declared, ManifestInput, ManifestOutput, ManifestPolicy
from curator.steps.spec import Rendering

SCHEMA_VERSION = 1
CANONICAL_JSON = "json.dumps(sort_keys=True, separators=(',',':'), ensure_ascii=False)"


@dataclass
class FilterFacts:
    """What a filter run counted and wrote (merged statistics, or disk after a failure)."""

    counts: dict[str, Any]  # input, kept, filtered{gate}, failed{reason}, source_in/out
    shards: list[dict[str, Any]]  # {name, rows, sha256}
    completed: bool
    error: dict[str, str] | None
    file_count: int
    policy: dict[str, Any]  # status, thresholds_applied, note, approval_declared, digests
    gates: list[str]
    output_dir: str
    rejected_dir: str
    language_model: dict[str, Any] | None = None
    gate_order: str = "reference"  # the attribution order (curator/filter/gates.py)


def manifest_and_ledger(facts: FilterFacts, producer: dict[str, Any], *,
                        input_glob: Any, id_field: str | None, source_field: str | None,
                        mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``run_manifest.json`` and ``curation_ledger.json`` of a run (docs/filter.md)."""
    c, shards = facts.counts, facts.shards
    failed_units = [{"unit": f"records:{reason}", "reason": reason, "records": n}
                    for reason, n in c["failed"].items()]
    n_success = c["kept"] if facts.completed else sum(s["rows"] for s in shards)
    if not facts.completed:  # what the run's own failure left unaccounted
        lost = c["input"] - n_success - sum(c["filtered"].values()) - sum(c["failed"].values())
        failed_units.append({"unit": facts.output_dir,
                             "reason": (facts.error or {}).get("error_id", "incomplete"),
                             "records": max(lost, 0)})
    ledger = build_ledger(
        stage=producer["step_id"], source=str(input_glob), n_input=c["input"], n_success=n_success,
        filtered_by_reason=c["filtered"], failed_units=failed_units, quarantined_units=[],
        mode=mode, completed=facts.completed, gate_order=facts.gate_order,
    )
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "producer": producer,
        "input": {"glob": input_glob, "file_count": facts.file_count, "row_count": c["input"],
                  "unparsable_rows": sum(c["failed"].values())},
        "output": {"file_count": len(shards), "row_count": sum(s["rows"] for s in shards),
                   "id_field": id_field, "source_field": source_field, "shards": shards},
        "declared": {
            "attribution": "declared",
            "rows_absent_from_output": c["input"] - n_success,
            "filtered": ledger["filtered_by_reason"],
            "failed": ledger["n_failed"], "quarantined": ledger["n_quarantined"],
        },
        "canonicalization": {"json": CANONICAL_JSON, "duplicate_ids": "multiset"},
        "policy": facts.policy,
        "gates": facts.gates,
        "rejected_dir": facts.rejected_dir,
    }
    if source_field is not None:
        manifest["input"]["per_source"] = c["source_in"]
        manifest["output"]["per_source"] = c["source_out"]
    if facts.language_model is not None:
        manifest["language_model"] = facts.language_model
    if facts.error is not None:
        manifest["error"] = facts.error
    return manifest, ledger


def _parts(m: RunManifest) -> tuple[ManifestInput, ManifestOutput, Declared, ManifestPolicy]:
    """Its blocks a rendering reads (a manifest without them is shown as failed, alone)."""
    if m.input is None or m.output is None or m.declared is None or m.policy is None:
        raise ValueError("a run manifest without its input, output, declared or policy")
    return m.input, m.output, m.declared, m.policy


def manifest_rows(manifest: RunManifest) -> list[dict[str, Any]]:
    """The manifest's headline numbers, one row each."""
    inp, out, declared, policy = _parts(manifest)
    rows = [{"what": "input rows", "value": inp.row_count},
            {"what": "output rows", "value": out.row_count},
            {"what": "output shards", "value": out.file_count},
            {"what": "policy status", "value": policy.status},
            {"what": "thresholds applied", "value": policy.thresholds_applied},
            {"what": "completed_at",
             "value": manifest.producer.completed_at if manifest.producer else None}]
    rows += [{"what": f"removed by {gate}", "value": n}
             for gate, n in (declared.filtered or {}).items()]
    return rows


def ledger_rows(manifest: RunManifest) -> list[dict[str, Any]]:
    """The ledger's accounting, from the manifest's declared block (the same counts the
    ledger is built from): input = success + filtered + failed + quarantined."""
    inp, out, declared, _ = _parts(manifest)
    n_input, n_success = inp.row_count, out.row_count
    filtered = declared.filtered or {}
    failed, quarantined = declared.failed, declared.quarantined
    if n_input is None or n_success is None or failed is None or quarantined is None:
        raise ValueError("a run manifest without its counts")
    accounted = n_success + sum(filtered.values()) + failed + quarantined
    rows = [{"field": "n_input", "value": n_input}, {"field": "n_success", "value": n_success},
            {"field": "n_filtered", "value": sum(filtered.values())},
            {"field": "n_failed", "value": failed},
            {"field": "n_quarantined", "value": quarantined},
            {"field": "n_accounted", "value": accounted},
            {"field": "balanced", "value": accounted == n_input}]
    return rows + [{"field": f"filtered_by_reason.{k}", "value": v} for k, v in filtered.items()]


def render(manifest: RunManifest) -> Rendering:
    inp, out, declared, policy = _parts(manifest)
    removed = declared.filtered or {}
    removed_text = ", ".join(f"{k} {v}" for k, v in removed.items()) or "-"
    lines = [
        f"# Filter run ({'complete' if manifest.is_complete else 'FAILED'})",
        "",
        f"- records in: {inp.row_count:,}, kept: "
        f"{out.row_count:,} in {out.file_count} shards",
        f"- policy: {policy.status} ({policy.thresholds_applied} thresholds applied)",
        f"- rejected records (with their gate and scores): `{manifest.rejected_dir}`",
        "", "| gate | records removed |", "|---|---:|",
        *[f"| {k} | {v:,} |" for k, v in removed.items()],
    ]
    summary = (
        f"filter: {inp.row_count} records in, "
        f"{out.row_count} kept in {out.file_count} "
        f"shards; removed by gate: {removed_text}; failed {declared.failed}; "
        f"policy {policy.status}\n"
        f"  rejected   {manifest.rejected_dir}  (one line per removed record, with its "
        "gates and scores)"
    )
    return Rendering("\n".join(lines) + "\n",
                     {"manifest": manifest_rows(manifest), "ledger": ledger_rows(manifest)},
                     summary)
