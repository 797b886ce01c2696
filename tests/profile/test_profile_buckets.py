"""The sample's selection on the exchange: the same artifacts (sample, scores, report
digest) for 1, 7 and 64 buckets, on the pool too; each source's sample is still its
bottom-k by rank over the whole corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from curator.steps.profile import ProfileConfig, run_profile
from executors import LocalExecutor
from tests.profile._support import corpus_records, profile_keys, recipe_rank, write_shards


def _artifacts(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "profile_report.json"}


def test_any_bucket_count_selects_the_same_sample(tmp_path: Path) -> None:
    records = corpus_records(600)
    inp = write_shards(tmp_path / "in", records, shards=4)
    reports: dict[int, dict[str, Any]] = {}
    for buckets in (1, 7, 64):
        keys = profile_keys(inp, tmp_path / f"b{buckets}", max_total_docs=240,
                            partition_size="50KB",
                            execution={"executor": "inline", "exchange_buckets": buckets})
        executor = LocalExecutor(workers=2) if buckets == 7 else None
        reports[buckets] = run_profile(ProfileConfig(**keys), executor)
    base = _artifacts(tmp_path / "b1")
    for buckets in (7, 64):
        assert _artifacts(tmp_path / f"b{buckets}") == base, buckets
        assert reports[buckets]["profile_digest"] == reports[1]["profile_digest"]
    manifest = json.loads((tmp_path / "b1" / "sample_manifest.json").read_text())
    seed = manifest["seed"]
    by_source: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_source.setdefault(r["source"], []).append(r)
    sampled = manifest["sampled_keys"]
    assert len(sampled) == len(by_source) > 3
    for source, docs in by_source.items():
        k = len(sampled[source])
        want = sorted(docs, key=lambda d: recipe_rank(seed, d["id"]))[:k]
        assert sorted(sampled[source]) == sorted(recipe_rank(seed, d["id"]) for d in want)
