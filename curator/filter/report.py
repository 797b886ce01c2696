"""The filter's run manifest for people: markdown, Prefect tables and one CLI line."""

from __future__ import annotations

from typing import Any

from curator.steps.spec import Rendering


def manifest_rows(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifest's headline numbers, one row each."""
    rows = [{"what": "input rows", "value": manifest["input"]["row_count"]},
            {"what": "output rows", "value": manifest["output"]["row_count"]},
            {"what": "output shards", "value": manifest["output"]["file_count"]},
            {"what": "policy status", "value": manifest["policy"]["status"]},
            {"what": "thresholds applied", "value": manifest["policy"]["thresholds_applied"]},
            {"what": "completed_at", "value": manifest["producer"].get("completed_at")}]
    rows += [{"what": f"removed by {gate}", "value": n}
             for gate, n in manifest["declared"]["filtered"].items()]
    return rows


def ledger_rows(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The ledger's accounting, from the manifest's declared block (the same counts the
    ledger is built from): input = success + filtered + failed + quarantined."""
    declared = manifest["declared"]
    n_input, n_success = manifest["input"]["row_count"], manifest["output"]["row_count"]
    filtered = declared["filtered"]
    accounted = n_success + sum(filtered.values()) + declared["failed"] + \
        declared["quarantined"]
    rows = [{"field": "n_input", "value": n_input}, {"field": "n_success", "value": n_success},
            {"field": "n_filtered", "value": sum(filtered.values())},
            {"field": "n_failed", "value": declared["failed"]},
            {"field": "n_quarantined", "value": declared["quarantined"]},
            {"field": "n_accounted", "value": accounted},
            {"field": "balanced", "value": accounted == n_input}]
    return rows + [{"field": f"filtered_by_reason.{k}", "value": v} for k, v in filtered.items()]


def render(manifest: dict[str, Any]) -> Rendering:
    removed = manifest["declared"]["filtered"]
    removed_text = ", ".join(f"{k} {v}" for k, v in removed.items()) or "-"
    lines = [
        f"# Filter run ({'complete' if manifest['producer'].get('completed_at') else 'FAILED'})",
        "",
        f"- records in: {manifest['input']['row_count']:,}, kept: "
        f"{manifest['output']['row_count']:,} in {manifest['output']['file_count']} shards",
        f"- policy: {manifest['policy']['status']} "
        f"({manifest['policy']['thresholds_applied']} thresholds applied)",
        f"- rejected records (with their gate and scores): `{manifest['rejected_dir']}`",
        "", "| gate | records removed |", "|---|---:|",
        *[f"| {k} | {v:,} |" for k, v in removed.items()],
    ]
    summary = (
        f"filter: {manifest['input']['row_count']} records in, "
        f"{manifest['output']['row_count']} kept in {manifest['output']['file_count']} "
        f"shards; removed by gate: {removed_text}; failed {manifest['declared']['failed']}; "
        f"policy {manifest['policy']['status']}\n"
        f"  rejected   {manifest['rejected_dir']}  (one line per removed record, with its "
        "gates and scores)"
    )
    return Rendering("\n".join(lines) + "\n",
                     {"manifest": manifest_rows(manifest), "ledger": ledger_rows(manifest)},
                     summary)
