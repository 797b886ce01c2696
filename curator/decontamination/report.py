"""``decontamination_report.json``: built from the scan's merged results (a pure
function), and its rendering for people."""

from __future__ import annotations

from typing import Any

from curator.models import DecontaminationReport
from curator.steps.spec import Rendering

SCHEMA_VERSION = 1
REPORT_NAME = "decontamination_report.json"
REMOVED_PAIRS = 200
GROUPS = 50
UNVERIFIABLE = 50

THREAT_MODEL = (
    "Holdout (evaluation) documents, or passages of them, that occur in the training "
    "corpus verbatim or lightly edited, found by source identity (URL, id, normalised "
    "text) or by shingle overlap; paraphrases, translations and documents below the "
    "thresholds are out of scope.")
CLAIM = (
    "No training document left has a verified exact Jaccard similarity >= {threshold} to "
    "any holdout document{containment}, nor shares a source identity with one; candidates "
    "from {candidates}.")
CLAIM_SKIP = ("No training document left shares a source identity (URL, id, normalised "
              "text) with a holdout document; similarity was not checked (skip_similarity).")


def claim(params: dict[str, Any]) -> str:
    if params["skip_similarity"]:
        return CLAIM_SKIP
    cont = params["containment"]
    containment = (f", nor contains >= {cont['threshold']} of the shingles of a holdout "
                   f"document of >= {cont['min_shingles']} shingles") if cont["enabled"] else ""
    candidates = ("an exact index of the holdout's shingles (no pair at or above the "
                  "thresholds is missed)" if params["candidates"] == "exact" else
                  f"MinHash/LSH banding (expected recall {params['expected_recall']:.4f} "
                  "at the threshold: pairs can be missed)")
    return CLAIM.format(threshold=params["threshold"], containment=containment,
                        candidates=candidates)


def build_report(*, params: dict[str, Any], splits: dict[str, Any], scans: list[dict[str, Any]],
                 holdout_key_fields: dict[str, int], paths: dict[str, Any],
                 producer: dict[str, Any], completed: bool, error: dict[str, str] | None,
                 shards: list[dict[str, Any]], warnings: list[dict[str, str]]
                 ) -> dict[str, Any]:
    """The report from the partitions' scan results (``scans``, in partition order)."""
    counts: dict[str, int] = {}
    for s in scans:
        for k, v in s["counts"].items():
            counts[k] = counts.get(k, 0) + int(v)
    left: dict[str, int] = {}
    for s in scans:
        for k, v in s["key_fields"].items():
            left[k] = left.get(k, 0) + int(v)
    groups: dict[str, dict[str, Any]] = {}
    for s in scans:
        for g in s["groups"]:
            have = groups.setdefault(g["key"], {"key": g["key"], "train_ids": [],
                                                "holdout_ids": [], "train_documents": 0})
            have["train_documents"] += g["train_documents"]
            have["train_ids"] = (have["train_ids"] + g["train_ids"])[:5]
            have["holdout_ids"] = list(dict.fromkeys(have["holdout_ids"] + g["holdout_ids"]))[:5]
    removed = [p for s in scans for p in s["removed"]]
    removed.sort(key=lambda p: (-(p["similarity"] or 0.0), p["train_id"]))
    unverifiable = [p for s in scans for p in s["unverifiable"]]
    n_in = counts.get("documents", 0)
    n_removed = counts.get("removed", 0)
    result = {
        "train_documents_in": n_in,
        "train_documents_removed": n_removed,
        "train_documents_out": counts.get("kept", 0),
        "removed_by_group_identity_only": counts.get("removed_by.identity_only", 0),
        "removed_by_similarity_only": counts.get("removed_by.similarity_only", 0),
        "removed_by_both": counts.get("removed_by.both", 0),
        "removed_by_rule": {r: counts.get(f"rule.{r}", 0)
                            for r in ("identity", "jaccard", "containment")},
    }
    train = dict(splits["train"])
    train.update({"documents": n_in,
                  "unparsable_lines": counts.get("rejected.unparsable_line", 0),
                  "skipped_non_mapping": counts.get("rejected.not_an_object", 0),
                  "skipped_missing_text": sum(counts.get(f"rejected.{r}", 0) for r in
                                              ("missing_text", "text_not_a_string",
                                               "empty_text"))})
    shared = sorted(set(left) & set(holdout_key_fields))
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "step_id": producer["step_id"],
        "started_at": producer["started_at"],
        "completed_at": producer.get("completed_at"),
        "config_hash": producer["config_hash"],
        "threat_model": THREAT_MODEL,
        "claim": claim(params),
        "parameters": params,
        "splits": {"train": train, "holdout": splits["holdout"]},
        "group_overlap": {
            "left_key_fields": dict(sorted(left.items())),
            "right_key_fields": dict(sorted(holdout_key_fields.items())),
            "unmatchable_left": 0, "unmatchable_right": 0,
            "shared_key_fields": shared,
            "shared_group_count": len(groups),
            "train_documents_affected": sum(g["train_documents"] for g in groups.values()),
            "groups": [groups[k] for k in sorted(groups)][:GROUPS],
            "note": ("the group key is the first of canonical URL, id, normalised-text hash"
                     + (" (id first: prefer_id_field)" if params["prefer_id_field"] else "")
                     + "; every document has a normalised-text key, so none is unmatchable"),
        },
        "similarity": {
            "skipped": params["skip_similarity"],
            "candidates": params["candidates"],
            "candidate_pairs": counts.get("candidate_pairs", 0),
            "verified_duplicates": counts.get("verified_duplicates", 0),
            "unverifiable_pairs": counts.get("unverifiable_pairs", 0),
            "removed_pairs": removed[:REMOVED_PAIRS],
            "unverifiable": unverifiable[:UNVERIFIABLE],
            "note": ("exact Jaccard and containment on string shingles for every candidate "
                     "pair; a pair is unverifiable when a document is shorter than one "
                     "shingle. Every removal, with all its matches: removed/*.jsonl"),
        },
        "containment": {
            "enabled": params["containment"]["enabled"],
            "threshold": params["containment"]["threshold"],
            "min_shingles": params["containment"]["min_shingles"],
            "removed": counts.get("rule.containment", 0),
        },
        "result": result,
        "output": {"shards": shards, "rows": sum(s["rows"] for s in shards)},
        "paths": paths,
        "warnings": warnings,
        "producer": producer,
    }
    if not completed:
        report["error"] = error or {"error_id": "incomplete", "message": "not completed"}
    return report


def render(report: DecontaminationReport) -> Rendering:
    r, p, sim = report.result, report.parameters, report.similarity
    holdout = report.splits.holdout  # a report without these is shown as failed, alone
    if r is None or p is None or sim is None or holdout is None:
        raise ValueError("a decontamination report without its result")
    rules = r.removed_by_rule or {}
    lines = [
        f"# {report.step_id}",
        "",
        f"- claim: {report.claim}",
        f"- candidates: `{p.candidates}`, shingles: {p.shingle_kind} x "
        f"{p.shingle_size}, threshold {p.threshold}",
        f"- training documents: {r.train_documents_in} in, "
        f"{r.train_documents_removed} removed, {r.train_documents_out} out",
        f"- rules matched: identity {rules.get('identity', 0)}, jaccard "
        f"{rules.get('jaccard', 0)}, containment {rules.get('containment', 0)} (a removed "
        "document may match several rules: these do not add up to the removed count)",
        f"- candidate pairs {sim.candidate_pairs}, verified {sim.verified_duplicates}, "
        f"unverifiable {sim.unverifiable_pairs}",
        f"- holdout: {holdout.documents} documents, modified: {holdout.modified}",
    ]
    if p.candidates == "minhash":
        lines.append(f"- MinHash expected recall at the threshold: {p.expected_recall:.4f}")
    for w in report.warnings or []:
        lines.append(f"- warning `{w.id}`: {w.message}")
    table = [{"metric": k, "value": v} for k, v in r.dump().items() if not isinstance(v, dict)]
    table += [{"metric": f"removed_by_rule.{k}", "value": v} for k, v in rules.items()]
    pairs = [{k: x[k] for k in ("train_id", "holdout_id", "reason", "similarity",
                                "containment")} for x in (sim.removed_pairs or [])[:50]]
    summary = (f"decontamination: {r.train_documents_removed} of {r.train_documents_in} "
               f"training documents removed; {r.train_documents_out} kept (rules matched: "
               f"identity {rules.get('identity', 0)}, jaccard {rules.get('jaccard', 0)}, "
               f"containment {rules.get('containment', 0)}; a document may match several)")
    return Rendering("\n".join(lines) + "\n", {"result": table, "removed": pairs}, summary)
