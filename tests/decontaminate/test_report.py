"""``decontamination_report.json`` from the partitions' scan results (``build_report``,
a pure function): removed pairs listed most similar first, whichever partition found
them, and a group found in several partitions listing each holdout id once."""

from __future__ import annotations

from typing import Any

from curator.decontamination.report import build_report, render
from curator.models import DecontaminationReport, parse


def scan(removed: list[tuple[str, float]], groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {"counts": {"documents": 10, "removed": len(removed)}, "key_fields": {"url": 10},
            "groups": groups, "unverifiable": [],
            "removed": [{"train_id": t, "holdout_id": "h", "reason": "jaccard",
                         "similarity": s, "containment": s} for t, s in removed]}


def report(scans: list[dict[str, Any]]) -> dict[str, Any]:
    params = {"skip_similarity": False, "candidates": "exact", "threshold": 0.8,
              "prefer_id_field": False,
              "containment": {"enabled": False, "threshold": 0.8, "min_shingles": 25}}
    producer = {"step_id": "decontamination", "started_at": "t0", "config_hash": "x"}
    params["shingle_kind"], params["shingle_size"] = "char", 24
    return build_report(params=params, splits={"train": {},
                                               "holdout": {"documents": 7, "modified": False}},
                        scans=scans,
                        holdout_key_fields={"url": 3}, paths={}, producer=producer,
                        completed=True, error=None, warnings=[],
                        shards=[{"name": "part_0.jsonl", "rows": 3},
                                {"name": "part_1.jsonl", "rows": 1}])


def test_removed_pairs_are_listed_most_similar_first_across_partitions() -> None:
    r = report([scan([("a", 0.85), ("b", 1.0)], []), scan([("c", 0.9), ("d", 0.85)], [])])
    pairs = r["similarity"]["removed_pairs"]
    assert [(p["train_id"], p["similarity"]) for p in pairs] == [
        ("b", 1.0), ("c", 0.9), ("a", 0.85), ("d", 0.85)]  # a tie: by train id


def test_a_group_found_in_several_partitions_lists_each_holdout_id_once() -> None:
    def group(train: list[str], holdout: list[str]) -> dict[str, Any]:
        return {"key": "url:example.org/x", "train_ids": train, "holdout_ids": holdout,
                "train_documents": len(train)}

    r = report([scan([], [group(["t1"], ["h1", "h2"])]),
                scan([], [group(["t2", "t3"], ["h2", "h1", "h3"])])])
    (g,) = r["group_overlap"]["groups"]
    assert g["holdout_ids"] == ["h1", "h2", "h3"]
    assert g["train_ids"] == ["t1", "t2", "t3"] and g["train_documents"] == 3
    assert r["group_overlap"]["shared_group_count"] == 1


def test_the_rendering_names_the_holdouts_documents_and_the_pairs_most_similar_first() -> None:
    r = report([scan([("a", 0.85)], []), scan([("c", 0.9)], [])])
    out = render(parse(DecontaminationReport, r, "test"))
    assert "- holdout: 7 documents, modified: False\n" in out.markdown
    assert [p["train_id"] for p in out.tables["removed"]] == ["c", "a"]
    assert out.summary.startswith("decontamination: 2 of 20 training documents removed")


def test_each_partitions_counts_are_summed_into_the_reports_fields() -> None:
    counts = {"documents": 5, "removed": 3, "kept": 2, "removed_by.identity_only": 1,
              "removed_by.similarity_only": 1, "removed_by.both": 1, "rule.identity": 2,
              "rule.jaccard": 2, "rule.containment": 1, "rejected.unparsable_line": 1,
              "rejected.not_an_object": 1, "rejected.missing_text": 1,
              "rejected.text_not_a_string": 1, "rejected.empty_text": 1}
    parts = [scan([], []), scan([], [])]
    for s in parts:
        s["counts"] = counts
    r = report(parts)
    assert r["result"] == {
        "train_documents_in": 10, "train_documents_removed": 6, "train_documents_out": 4,
        "removed_by_group_identity_only": 2, "removed_by_similarity_only": 2,
        "removed_by_both": 2,
        "removed_by_rule": {"identity": 4, "jaccard": 4, "containment": 2}}
    train = r["splits"]["train"]
    assert (train["unparsable_lines"], train["skipped_non_mapping"],
            train["skipped_missing_text"]) == (2, 2, 6)
    overlap = r["group_overlap"]
    assert (overlap["unmatchable_left"], overlap["unmatchable_right"]) == (0, 0)
    assert overlap["left_key_fields"] == {"url": 20}
    assert r["output"]["rows"] == 4
    sim = r["similarity"]
    assert (sim["candidate_pairs"], sim["verified_duplicates"], sim["unverifiable_pairs"]) == (
        0, 0, 0)
    assert r["containment"] == {"enabled": False, "threshold": 0.8, "min_shingles": 25,
                                "removed": 2}
    for s in parts:
        s["counts"] = {"candidate_pairs": 4, "verified_duplicates": 3, "unverifiable_pairs": 1}
    r = report(parts)
    sim = r["similarity"]
    assert (sim["candidate_pairs"], sim["verified_duplicates"], sim["unverifiable_pairs"]) == (
        8, 6, 2)
    assert r["containment"]["removed"] == 0 and r["result"]["removed_by_rule"] == {
        "identity": 0, "jaccard": 0, "containment": 0}
    assert (r["result"]["train_documents_out"], r["splits"]["train"]["skipped_non_mapping"],
            r["splits"]["train"]["skipped_missing_text"]) == (0, 0, 0)  # absent counts
    assert r["schema_version"] == 1
