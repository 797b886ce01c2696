"""``mode``: filter (records untouched), annotate (``__<signal>`` columns, nothing removed by
the policy), both (columns and removal); and the ``metadata_fields`` projection."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from curator.signals.registry import REGISTRY
from tests.filter._support import (
    approve,
    corpus_records,
    expect,
    kept,
    ledger,
    policy_gates,
    profile_candidate,
    rejected,
    run,
    shard_files,
    write_shards,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("modes")
    records = corpus_records(400, seed=21)
    inp = write_shards(root / "in", records, shards=3)
    policy = approve(profile_candidate(inp, root), root / "approved_policy.yaml")
    lines = {}
    for path in sorted(inp.glob("*.jsonl")):
        for line in path.read_bytes().split(b"\n")[:-1]:
            lines[json.loads(line)["id"]] = line
    return {"records": records, "inp": inp, "policy": policy, "lines": lines,
            "gates": policy_gates(policy)}


def _score_columns(world: dict[str, Any], exp: Any, rec_id: str) -> dict[str, Any]:
    i = next(i for i, r in enumerate(world["records"]) if r["id"] == rec_id)
    cols = {}
    for name, _, _ in world["gates"]:
        value = float(exp.scores[name][i])
        cols[f"__{name}"] = None if math.isnan(value) else value
    return cols


def test_filter_mode_writes_the_input_lines_unchanged(world: dict[str, Any],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "out"
    m = run(world["inp"], out, world["policy"], mode="filter")
    exp = expect(world["records"], policy=world["gates"])
    lines = [line for p in shard_files(out) for line in p.read_bytes().split(b"\n")[:-1]]
    assert lines == [world["lines"][r["id"]] for r in exp.kept]
    assert not any(k.startswith("__") for r in kept(out) for k in r)
    assert m["policy"]["thresholds_applied"] == len(world["gates"])


def test_annotate_mode_scores_without_removing(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    m = run(world["inp"], out, world["policy"], mode="annotate")
    exp = expect(world["records"], policy=world["gates"], policy_removes=False)
    assert set(exp.by_gate) == {"language", "word_count_bounds"}
    got = kept(out)
    assert [r["id"] for r in got] == [r["id"] for r in exp.kept]
    for rec, orig in zip(got, exp.kept, strict=True):
        assert rec == {**orig, **_score_columns(world, exp, orig["id"])}
    # counts are written as integers (12, not 12.0), ratios as floats
    integral = [n for n, _, _ in world["gates"] if REGISTRY[n].grid.integral]
    assert integral, "the policy has a count signal"
    for name, _, _ in world["gates"]:
        kinds = {type(r[f"__{name}"]) for r in got} - {type(None)}
        assert kinds == ({int} if name in integral else {float}), (name, kinds)
    assert ledger(out)["filtered_by_reason"] == exp.by_gate
    assert {r["removed_by"] for r in rejected(out)} == {"language", "word_count_bounds"}
    assert m["policy"]["status"] == "approved"
    assert m["policy"]["thresholds_applied"] == 0
    assert "annotate" in m["policy"]["note"]


def test_annotate_without_language_or_word_gates_keeps_every_document(
    world: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"], mode="annotate", language_codes=[],
        quality_filters={"min_words": None, "max_words": None})
    exp = expect(world["records"], codes=None, words=None, policy=world["gates"],
                 policy_removes=False)
    got = kept(out)
    assert len(got) == len(world["records"]) and not rejected(out)
    assert got == [{**r, **_score_columns(world, exp, r["id"])} for r in world["records"]]
    assert ledger(out)["n_filtered"] == 0


def test_both_mode_scores_and_removes(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    m = run(world["inp"], out, world["policy"], mode="both")
    exp = expect(world["records"], policy=world["gates"])
    assert set(exp.by_gate) > {"language", "word_count_bounds"}
    got = kept(out)
    assert got == [{**r, **_score_columns(world, exp, r["id"])} for r in exp.kept]
    for rec in got:  # every kept record passes every threshold it carries
        for name, lo, hi in world["gates"]:
            assert (lo is None or rec[f"__{name}"] >= lo) and (hi is None or rec[f"__{name}"] <= hi)
    assert ledger(out)["filtered_by_reason"] == exp.by_gate
    assert m["policy"]["thresholds_applied"] == len(world["gates"])


def test_metadata_fields_project_the_records(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"], metadata_fields=["url"])
    exp = expect(world["records"], policy=world["gates"])
    assert kept(out) == [{k: r[k] for k in ("text", "id", "source", "url")} for r in exp.kept]
    out2 = tmp_path / "out2"
    run(world["inp"], out2, world["policy"], metadata_fields=["url"], mode="both")
    assert kept(out2) == [{**{k: r[k] for k in ("text", "id", "source", "url")},
                           **_score_columns(world, exp, r["id"])} for r in exp.kept]
