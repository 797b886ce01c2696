"""A document `curate evaluate` drops is one `curate filter`, configured the same way,
drops, at the same gate: both go through curator.filter.gates.decide with the same pack."""

from __future__ import annotations

from pathlib import Path

from curator.evaluate import evaluate_policy
from curator.execution import InlineExecutor
from tests.evaluate._support import write_labelled
from tests.filter._support import (
    LANGPACKS,
    approve,
    corpus_records,
    profile_candidate,
    rejected,
    run,
    write_shards,
)


def test_evaluate_and_filter_drop_the_same_documents_at_the_same_gate(tmp_path: Path) -> None:
    records = corpus_records(300, seed=5)
    inp = write_shards(tmp_path / "in", records, shards=2)
    policy = approve(profile_candidate(inp, tmp_path), tmp_path / "approved_policy.yaml")
    out = tmp_path / "filtered"
    run(inp, out, policy, InlineExecutor(), execution={"executor": "inline"})
    by_filter = {r["id"]: (r["removed_by"], r["gates"]) for r in rejected(out)}
    assert by_filter  # the policy removes something, or this test shows nothing

    # every record labelled keep: the false rejections are exactly the filter's removals
    labelled = write_labelled(tmp_path / "set.jsonl", [
        {"id": r["id"], "text": r["text"], "label": "keep", "phenomenon": "clean"}
        for r in records])
    report = evaluate_policy(policy, [labelled], langpack_dir=LANGPACKS,
                             language_codes=["EN"], words=(20, 5000))
    assert report["totals"]["keep_dropped"] == len(by_filter)
    listed = {f["id"]: (f["removed_by"], f["gates"]) for f in report["false_rejections"]}
    assert len(listed) == min(len(by_filter), 50)
    assert all(by_filter[i] == v for i, v in listed.items())
    counts: dict[str, int] = {}
    for gate, _ in by_filter.values():
        counts[gate] = counts.get(gate, 0) + 1
    assert {a["gate"]: a["removed_keep"] for a in report["attribution"]
            if a["removed_keep"]} == counts
