"""``run_profile`` end to end on real files: artifacts, the fingerprint and sample against
their recipes, digests, independence of sharding, and every refusal."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.errors import CuratorError
from curator.steps.profile import ProfileConfig, run_profile
from tests.profile._support import (
    corpus_records,
    profile_keys,
    recipe_fingerprint,
    recipe_rank,
    write_shards,
)


def profile(inp: Path, out: Path, executor: Any = None, **keys: Any) -> dict[str, Any]:
    return run_profile(ProfileConfig(**profile_keys(inp, out, **keys)), executor)


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return corpus_records(600)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory, records) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("profiled")
    inp = write_shards(root / "in", records, shards=3)
    out = root / "out"
    return out, profile(inp, out, max_total_docs=200, partition_size="60KB")


def _canonical(data: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def test_every_artifact_is_written(profiled, records) -> None:
    out, report = profiled
    names = {p.name for p in out.iterdir()}
    assert {"profile_report.json", "sample_manifest.json", "candidate_policies.yaml",
            "profile_summary.md", "plots"} <= names
    assert not (out / ".profile-work").exists()
    on_disk = json.loads((out / "profile_report.json").read_text())
    assert on_disk["profile_digest"] == report["profile_digest"]
    corpus = on_disk["corpus"]
    assert corpus["document_count"] == len(records) == corpus["records_read"]
    assert corpus["source_count"] == len({r["source"] for r in records})
    assert corpus["fingerprint"] == recipe_fingerprint(records)
    assert corpus["unparsable_lines"] == corpus["records_without_text"] == 0
    # the digest covers everything but the producer block
    body = {k: v for k, v in on_disk.items() if k not in ("producer", "profile_digest")}
    assert on_disk["profile_digest"] == _canonical(body)
    assert on_disk["producer"]["step_id"] == "curate/profile"
    assert on_disk["producer"]["config_hash"].startswith("sha256:")
    # every signal the en pack supports, token_count skipped for want of a tokenizer
    names = [b["signal"] for b in on_disk["signals"]]
    assert "token_count" not in names and len(names) == 23
    assert any("skipped token_count" in n for n in on_disk["notes"])
    candidate = yaml.safe_load((out / "candidate_policies.yaml").read_text())
    assert candidate["approved"] is False
    assert candidate["profile_digest"] == on_disk["profile_digest"]
    assert candidate["corpus"]["fingerprint"] == corpus["fingerprint"]
    summary = (out / "profile_summary.md").read_text()
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert pngs and all(name in summary for name in pngs)
    assert all((out / "plots" / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in pngs)


def test_sample_is_the_per_source_bottom_k(profiled, records) -> None:
    out, report = profiled
    manifest = json.loads((out / "sample_manifest.json").read_text())
    assert report["sampling"]["sampled"] == 200
    populations: dict[str, list[dict]] = {}
    for r in records:
        populations.setdefault(r["source"], []).append(r)
    rows = {a["source"]: a for a in manifest["allocations"]}
    assert sum(a["sampled"] for a in rows.values()) == 200
    for source, docs in populations.items():
        k = rows[source]["sampled"]
        assert rows[source]["population"] == len(docs)
        assert k == min(len(docs), max(1, round(200 * len(docs) / len(records)))) or \
            k == max(rows[s]["sampled"] for s in rows)  # only the largest may be trimmed
        expected = sorted(recipe_rank(0, d["id"]) for d in docs)[:k]
        assert manifest["sampled_keys"][source] == expected
        assert rows[source]["drawn"] == k
        assert rows[source]["effective_weight"] == pytest.approx(len(docs) / k)


def test_sharding_and_order_do_not_change_the_result(tmp_path: Path, profiled, records) -> None:
    _, report = profiled
    inp = write_shards(tmp_path / "in", records, shards=7, shuffle_seed=3)
    other = profile(inp, tmp_path / "out", max_total_docs=200)
    assert other["corpus"]["fingerprint"] == report["corpus"]["fingerprint"]
    assert other["signals"] == report["signals"]
    assert other["policy_simulation"] == report["policy_simulation"]
    assert other["cooccurrence"] == report["cooccurrence"]


def test_digest_is_stable_and_follows_the_corpus(tmp_path: Path, records) -> None:
    inp = write_shards(tmp_path / "in", records[:300], shards=2)
    first = profile(inp, tmp_path / "a", max_total_docs=100)
    again = profile(inp, tmp_path / "a", max_total_docs=100)  # same config, same output dir
    assert again["profile_digest"] == first["profile_digest"]
    changed = [dict(r) for r in records[:300]]
    changed[5]["text"] = changed[5]["text"] + " One more sentence."
    inp2 = write_shards(tmp_path / "in", changed, shards=2)
    assert inp2 == inp
    third = profile(inp, tmp_path / "a", max_total_docs=100)
    assert third["corpus"]["fingerprint"] != first["corpus"]["fingerprint"]
    assert third["profile_digest"] != first["profile_digest"]


def test_without_a_source_field_each_shard_is_a_source(tmp_path: Path, records) -> None:
    inp = write_shards(tmp_path / "in", records[:120], shards=3)
    report = profile(inp, tmp_path / "out", source_field=None, max_total_docs=0)
    assert report["corpus"]["source_count"] == 3
    assert report["sampling"]["sampled"] == 120  # 0 = everything
    assert any("each shard file is its own source" in n for n in report["notes"])


def test_lines_without_text_are_counted_not_profiled(tmp_path: Path, records) -> None:
    inp = write_shards(tmp_path / "in", records[:50], shards=1)
    with (inp / "part_0.jsonl").open("a") as f:
        f.write('{"id": "x", "source": "s"}\n{"text": 3}\n{broken\n[1, 2]\n\n'
                '{"id": "e", "text": " ", "source": "s"}\n')
    report = profile(inp, tmp_path / "out")
    corpus = report["corpus"]
    assert corpus["records_read"] == 55
    assert corpus["rejections_by_reason"] == {"empty_text": 1, "missing_text": 1,
                                              "not_an_object": 1, "text_not_a_string": 1,
                                              "unparsable_line": 1}
    assert corpus["records_without_text"] == 3  # missing, not a string, empty
    assert corpus["unparsable_lines"] == 2  # not JSON, not an object
    assert corpus["document_count"] == 50
    assert corpus["fingerprint"] == recipe_fingerprint(records[:50])


@pytest.mark.parametrize(
    ("keys", "error_id"),
    [
        ({"langpack_dir": ""}, "missing_langpack_dir"),
        ({"langpack_dir": "  "}, "missing_langpack_dir"),
        ({"language": "xx"}, "language_pack_not_found"),
        ({"signals": ["no_such_signal"]}, "unknown_signal"),
        ({"signals": ["token_count"]}, "signal_requirements_unmet"),
    ],
)
def test_refusals(tmp_path: Path, records, keys: dict, error_id: str) -> None:
    inp = write_shards(tmp_path / "in", records[:20], shards=1)
    with pytest.raises(CuratorError) as err:
        profile(inp, tmp_path / "out", **keys)
    assert err.value.error_id == error_id
    assert not (tmp_path / "out" / "profile_report.json").exists()


def test_an_empty_corpus_fails_and_leaves_only_the_failed_report(tmp_path: Path,
                                                                  records) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "part_0.jsonl").write_text('{"id": "a"}\n{"text": null}\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "profile_report.json").write_text("{}")  # a previous run's report goes
    (out / "profile_summary.md").write_text("# an earlier summary\n")
    with pytest.raises(CuratorError) as err:
        profile(inp, out)
    assert err.value.error_id == "empty_corpus"
    report = json.loads((out / "profile_report.json").read_text())
    assert report["error"]["error_id"] == "empty_corpus"
    assert "completed_at" not in report["producer"]
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "profile_report.json"]  # the work files stay for a resume


def test_named_signals_only(tmp_path: Path, records) -> None:
    inp = write_shards(tmp_path / "in", records[:80], shards=1)
    report = profile(inp, tmp_path / "out", signals=["word_count", "stopword_ratio"])
    assert [b["signal"] for b in report["signals"]] == ["word_count", "stopword_ratio"]


def test_language_composition_counts_the_models_top_label_of_each_sampled_document(
    tmp_path: Path, records
) -> None:
    from collections import Counter

    import numpy as np

    from curator.corpus.langid import DEFAULT_MAX_CHARS, FastTextLangId

    mine = records[:300]
    inp = write_shards(tmp_path / "in", mine, shards=2)
    report = profile(inp, tmp_path / "out", max_total_docs=1000, signals=["word_count"])
    assert report["sampling"]["sampled"] == len(mine)  # everything sampled
    comp = report["language_composition"]

    model = FastTextLangId.open(None, DEFAULT_MAX_CHARS)  # computed here, independently
    labels, conf = model.predict([r["text"] for r in mine])
    expected = Counter(labels)
    assert len(expected) >= 2, "the demo text mixes languages (English, Russian pages)"
    assert comp["scored"] == len(mine)
    assert [(x["language"], x["documents"]) for x in comp["languages"]] == sorted(
        expected.items(), key=lambda kv: (-kv[1], kv[0]))
    assert sum(x["share"] for x in comp["languages"]) == pytest.approx(1.0, abs=1e-5)
    assert comp["confidence"]["p50"] == pytest.approx(float(np.quantile(conf, 0.5)), rel=1e-6)
    assert comp["model"].startswith("lid.176.ftz (sha256:")
    top = comp["languages"][0]
    summary = (tmp_path / "out" / "profile_summary.md").read_text()
    assert "## Language composition" in summary
    assert f"| {top['language']} | {top['documents']} |" in summary


def test_a_signal_the_pack_cannot_support_is_skipped_with_a_warning(caplog) -> None:
    import logging

    from curator.langpack.loader import load_langpack
    from curator.steps.profile import select_signals
    from tests.profile._support import LANGPACKS

    pack = load_langpack(LANGPACKS, "en")
    with caplog.at_level(logging.WARNING, logger="curator.profile"):
        specs, notes = select_signals([], pack, has_tokenizer=False)
    assert "token_count" not in {s.name for s in specs}
    assert any(n.startswith("skipped token_count") for n in notes)
    assert any("skipped token_count" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
