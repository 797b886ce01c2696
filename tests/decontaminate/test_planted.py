"""Planted contamination with known answers, on real files through the real step."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from curator.steps.decontamination import DecontaminationConfig, run_decontamination
from tests.decontaminate.brute import pairs
from tests.decontaminate.conftest import kept_ids, removed_rows
from tests.steps._worlds import decontamination_world

WORDS = ["river", "stone", "apple", "cloud", "engine", "garden", "silver", "market",
         "window", "harbor", "lantern", "meadow", "copper", "violin", "desert", "forest",
         "candle", "bridge", "ocean", "pepper"]


def prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randint(0, 99)) for _ in range(n)) + "."


def test_the_planted_holdout_is_found_with_the_right_rule(tmp_path: Path) -> None:
    train, holdout = decontamination_world(tmp_path / "w")
    planted = json.loads((tmp_path / "w" / "planted.json").read_text())
    out = tmp_path / "out"
    report = run_decontamination(DecontaminationConfig(
        train_glob=str(train), holdout_glob=str(holdout), output_dir=str(out), id_field="id",
        execution={"executor": "inline"}))
    removed = removed_rows(out)
    by_holdout: dict[str, list[dict]] = {}
    for row in removed.values():
        for m in row["matches"]:
            by_holdout.setdefault(m["holdout_id"], []).append(row)
    rule = {"copy": "jaccard", "edited": "jaccard", "passage": "containment",
            "same_url": "identity"}
    for hid, p in planted.items():
        hits = by_holdout.get(hid, [])
        if p["expected"] == "removed":
            assert [r["id"] for r in hits] == [p["source_id"]], (hid, p)
            assert hits[0]["rules"][0] == rule[p["kind"]], (hid, hits[0])
        else:  # rewritten (Jaccard below 0.8) and unseen passages remove nothing
            assert hits == [], (hid, p)
    assert report["result"]["train_documents_removed"] == len(removed) == sum(
        p["expected"] == "removed" for p in planted.values())
    assert report["result"]["train_documents_out"] == len(kept_ids(out))
    assert not set(removed) & kept_ids(out)
    passage = next(r for r in removed.values() if r["rule"] == "containment")
    assert passage["containment"] == 1.0 and passage["similarity"] < 0.5
    assert passage["document"]["id"] == passage["id"]


def test_edited_copies_just_above_and_below_the_threshold(decon, tmp_path: Path) -> None:
    rng = random.Random(5)
    base = prose(rng, 120)
    words = base.split(" ")
    for i in rng.sample(range(len(words)), 6):
        words[i] = "zzz" + words[i]
    edited = " ".join(words)
    jac = pairs({"t": edited}, {"h": base})[("t", "h")][0]
    assert 0.5 < jac < 0.95
    train = [{"id": "t", "text": edited}, {"id": "other", "text": prose(rng, 80)}]
    holdout = [{"id": "h", "text": base}]
    off = {"containment": {"enabled": False}}
    above = decon(train, holdout, out="below-t", threshold=round(jac - 1e-4, 6), **off)
    assert above["result"]["train_documents_removed"] == 1
    row = removed_rows(tmp_path / "below-t")["t"]
    assert row["rule"] == "jaccard" and row["similarity"] == pytest.approx(jac, abs=1e-6)
    below = decon(train, holdout, out="above-t", threshold=round(jac + 1e-4, 6), **off)
    assert below["result"]["train_documents_removed"] == 0
    assert kept_ids(tmp_path / "above-t") == {"t", "other"}


def test_a_pasted_passage_is_caught_by_containment_only(decon, tmp_path: Path) -> None:
    rng = random.Random(6)
    passage = prose(rng, 40)
    page = prose(rng, 150) + " " + passage + " " + prose(rng, 150)
    train = [{"id": "page", "text": page}]
    holdout = [{"id": "q1", "text": passage}]
    report = decon(train, holdout, out="on")
    row = removed_rows(tmp_path / "on")["page"]
    assert row["rules"] == ["containment"] and row["holdout_id"] == "q1"
    assert row["containment"] == 1.0 and row["similarity"] < 0.3
    assert report["result"]["removed_by_rule"]["containment"] == 1
    off = decon(train, holdout, out="off", containment={"enabled": False})
    assert off["result"]["train_documents_removed"] == 0


def test_url_and_id_identity(decon, tmp_path: Path) -> None:
    rng = random.Random(7)
    train = [{"id": "a", "text": prose(rng, 60),
              "url": "http://www.www.Example.com/post/1/?utm_source=x&b=2&a=1#top"},
             {"id": "b", "text": prose(rng, 60), "url": "https://example.com/post/2"},
             {"id": "c", "text": prose(rng, 60), "url": "https://example.com/post/3"}]
    holdout = [{"id": "x", "text": prose(rng, 60), "url": "https://example.com/post/1?a=1&b=2"},
               {"id": "c", "text": prose(rng, 60), "url": "https://bench.example/q/9"}]
    report = decon(train, holdout, out="url")
    removed = removed_rows(tmp_path / "url")
    assert set(removed) == {"a"} and removed["a"]["rules"] == ["identity"]
    assert report["result"]["removed_by_group_identity_only"] == 1
    assert report["group_overlap"]["shared_group_count"] == 1
    report = decon(train, holdout, out="id", prefer_id_field=True)
    assert set(removed_rows(tmp_path / "id")) == {"c"}
    assert removed_rows(tmp_path / "id")["c"]["holdout_id"] == "c"


def test_identity_of_short_documents_is_unverifiable(decon, tmp_path: Path) -> None:
    """Shorter than one shingle: only identity can match, and the pair is unverifiable."""
    train = [{"id": "a", "text": "Short  TEXT", "url": "https://a.example/1"},
             {"id": "b", "text": "short text", "url": "https://a.example/2"}]
    holdout = [{"id": "h", "text": "short text", "url": "https://a.example/1/"}]
    report = decon(train, holdout)
    assert set(removed_rows(tmp_path / "out")) == {"a"}
    assert removed_rows(tmp_path / "out")["a"]["verifiable"] is False
    assert report["similarity"]["unverifiable_pairs"] == 1
    assert [w["id"] for w in report["warnings"]] == ["unverifiable_pairs"]


def test_unseen_passages_remove_nothing(decon, tmp_path: Path) -> None:
    rng = random.Random(8)
    train = [{"id": f"t{i}", "text": prose(rng, 100)} for i in range(30)]
    holdout = [{"id": f"h{i}", "text": prose(random.Random(100 + i), 60)} for i in range(10)]
    report = decon(train, holdout)
    assert report["result"]["train_documents_removed"] == 0
    assert kept_ids(tmp_path / "out") == {r["id"] for r in train}
    assert not list((tmp_path / "out" / "removed").glob("*.jsonl"))
    # the kept shards are the input bytes, in order
    shard = (tmp_path / "out" / "part_0.jsonl").read_bytes()
    assert shard == (tmp_path / "train" / "t.jsonl").read_bytes()


def test_skip_similarity_keeps_identity_only(decon, tmp_path: Path) -> None:
    rng = random.Random(9)
    text = prose(rng, 80)
    train = [{"id": "copy", "text": text}, {"id": "url", "text": prose(rng, 50),
                                              "url": "https://a.example/x"}]
    holdout = [{"id": "h", "text": text + " extra", "url": "https://a.example/x"}]
    report = decon(train, holdout, skip_similarity=True)
    assert set(removed_rows(tmp_path / "out")) == {"url"}
    assert "similarity was not checked" in report["claim"]
