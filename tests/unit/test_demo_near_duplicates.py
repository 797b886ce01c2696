"""The demo corpus's planted near-duplicates are what ``curate dedup`` finds: ingested as
``make demo`` ingests it, then deduplicated with the step's defaults, every planted pair at
Jaccard >= 0.8 (the manifest's ``jaccard_words5``) loses one member and no pair below does
(docs/demo-corpus.md, "Near-duplicates")."""

from __future__ import annotations

import json
from pathlib import Path

from curator.steps.dedup import DedupConfig, run_dedup
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo import generate_demo_corpus


def test_dedup_finds_the_planted_pairs_at_or_above_the_threshold(tmp_path: Path) -> None:
    manifest = generate_demo_corpus(tmp_path / "raw", docs=1000, seed=7)
    pairs = manifest["near_duplicates"]["pairs"]
    assert manifest["near_duplicates"]["edited_copies"] == 5
    run_ingest(IngestConfig(input=str(tmp_path / "raw"), output_dir=str(tmp_path / "ingested"),
                            on_duplicate="drop", source_from="source", keep_fields=["url"],
                            execution={"executor": "inline"}))
    report = run_dedup(DedupConfig(input_glob=str(tmp_path / "ingested" / "*.jsonl"),
                                   output_dir=str(tmp_path / "dedup"), id_field="id",
                                   source_field="source", execution={"executor": "inline"}))
    removed = {json.loads(line)["url"]: json.loads(line)
               for p in (tmp_path / "dedup" / "removed").glob("*.jsonl")
               for line in p.read_text().splitlines()}
    assert report["removed"] == len(removed)
    compared = 0
    for pair in pairs:
        gone = [u for u in (pair["copy_url"], pair["original_url"]) if u in removed]
        if pair["jaccard_words5"] >= report["params"]["threshold"]:
            assert len(gone) == 1, pair
            # the step's similarity (hashed shingles) is the manifest's (shingle strings)
            rec = removed[gone[0]]
            if rec["dedup_neighbor_similarity"] == rec["dedup_similarity"]:
                assert round(rec["dedup_similarity"], 6) == pair["jaccard_words5"]
                compared += 1
        else:
            assert gone == [], pair
    assert compared >= 5
