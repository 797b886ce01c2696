"""Every refusal of ``curate filter``: its error id, exit code 2, and what it leaves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from curator.langpack.loader import content_hash_of
from curator.signals.registry import IMPL_VERSION
from tests.filter._support import (
    LANGPACKS,
    approve,
    copy_pack,
    corpus_records,
    edit_policy,
    filter_keys,
    kept,
    ledger,
    manifest,
    policy_gates,
    profile_candidate,
    refusal,
    run,
    sha256_file,
    write_shards,
)
from tests.ingest._support import Cli, write_config


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("refusals")
    records = corpus_records(240, seed=5)
    inp = write_shards(root / "in", records, shards=2)
    candidate = profile_candidate(inp, root)
    return {"root": root, "records": records, "inp": inp, "candidate": candidate,
            "policy": approve(candidate, root / "approved_policy.yaml")}


@pytest.mark.slow
def test_cli_refuses_an_unapproved_policy_with_exit_2(world: dict[str, Any], tmp_path: Path,
                                                      prefect_api: str) -> None:
    policy = edit_policy(world["policy"], tmp_path / "p.yaml",
                         lambda d: d.update(approved=False))
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "filter.yaml", filter_keys(world["inp"], out, policy))
    with Cli(cfg, tmp_path / "logs", "unapproved", command="filter") as cli:
        code = cli.wait(120)
        err = cli.stderr()
    assert code == 2, err[-2000:]
    assert "policy_not_approved" in err
    assert "Traceback" not in err
    assert not out.exists() or not any(out.glob("*.jsonl"))


def test_unapproved_policy(world: dict[str, Any], tmp_path: Path) -> None:
    policy = edit_policy(world["policy"], tmp_path / "p.yaml",
                         lambda d: d.update(approved=False))
    err = refusal(world["inp"], tmp_path / "out", policy)
    assert err.error_id == "policy_not_approved"
    assert err.details["status"] == "unapproved"


def test_a_threshold_on_the_wrong_side_is_invalid(world: dict[str, Any], tmp_path: Path) -> None:
    def flip(doc: dict[str, Any]) -> None:  # white_space is a max signal
        entry = next(t for t in doc["thresholds"] if t["signal"] == "white_space")
        entry["min"] = entry.pop("max")

    policy = edit_policy(world["policy"], tmp_path / "p.yaml", flip)
    err = refusal(world["inp"], tmp_path / "out", policy)
    assert err.error_id == "policy_invalid"
    assert any("white_space" in p and "invert" in p for p in err.details["problems"])


def test_a_plausible_threshold_edit_shows_in_the_policy_digest(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A hand edit that keeps the policy valid is not refused (the file is not signed), but
    the manifest's policy digest and config hash name the edited bytes and the edited
    threshold is what is applied."""
    def loosen(doc: dict[str, Any]) -> None:
        entry = next(t for t in doc["thresholds"] if t["signal"] == "stopword_ratio")
        entry["min"] = 0.1

    edited = edit_policy(world["policy"], tmp_path / "p.yaml", loosen)
    a, b = tmp_path / "original", tmp_path / "edited"
    m_a = run(world["inp"], a, world["policy"])
    m_b = run(world["inp"], b, edited)
    assert m_a["policy"]["policy_digest"] == sha256_file(world["policy"])
    assert m_b["policy"]["policy_digest"] == sha256_file(edited)
    assert m_a["policy"]["policy_digest"] != m_b["policy"]["policy_digest"]
    assert m_a["producer"]["config_hash"] != m_b["producer"]["config_hash"]
    assert ("stopword_ratio", 0.1, None) in policy_gates(edited)
    assert m_b["declared"]["filtered"].get("stopword_ratio", 0) < \
        m_a["declared"]["filtered"]["stopword_ratio"]
    assert len(kept(b)) > len(kept(a))


def test_corpus_changed_by_one_document(world: dict[str, Any], tmp_path: Path) -> None:
    inp = shutil.copytree(world["inp"], tmp_path / "in")
    path = inp / "part_1.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    rec = json.loads(lines[7])
    rec["text"] += " One more sentence."
    lines[7] = json.dumps(rec, ensure_ascii=False) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "out"
    err = refusal(inp, out, world["policy"])
    assert err.error_id == "approval_corpus_mismatch"
    # refused before any threshold was applied: no shard, and the manifest says why
    assert not list(out.glob("part_*.jsonl"))
    m = manifest(out)
    assert "completed_at" not in m["producer"]
    assert m["error"]["error_id"] == "approval_corpus_mismatch"
    assert m["policy"]["thresholds_applied"] == 0
    assert "before any threshold" in m["policy"]["note"]
    led = ledger(out)
    assert led["balanced"] is True and led["n_success"] == 0
    assert led["n_input"] == m["input"]["row_count"] == len(world["records"])
    # every record is absent from the output: the output dir is a failed unit holding all
    assert led["failed_units"] == [{"unit": str(out), "reason": "approval_corpus_mismatch",
                                    "records": len(world["records"])}]


def test_corpus_missing_one_document(world: dict[str, Any], tmp_path: Path) -> None:
    inp = shutil.copytree(world["inp"], tmp_path / "in")
    path = inp / "part_0.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[1:]), encoding="utf-8")
    assert refusal(inp, tmp_path / "out", world["policy"]).error_id == "approval_corpus_mismatch"


def test_a_different_language_pack(world: dict[str, Any], tmp_path: Path) -> None:
    packs = copy_pack(tmp_path / "packs")
    words = packs / "en" / "stopwords.txt"
    lines = words.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0] + "x"
    words.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert content_hash_of(packs / "en") != content_hash_of(LANGPACKS / "en")
    err = refusal(world["inp"], tmp_path / "out", world["policy"],
                  heuristic_filters={"langpack_dir": str(packs)})
    assert err.error_id == "policy_langpack_mismatch"
    # an unchanged copy is the same pack
    same = copy_pack(tmp_path / "same")
    run(world["inp"], tmp_path / "ok", world["policy"],
        heuristic_filters={"langpack_dir": str(same)})


def test_a_pinned_langpack_hash_that_differs(world: dict[str, Any], tmp_path: Path) -> None:
    err = refusal(world["inp"], tmp_path / "out", world["policy"],
                  heuristic_filters={"langpack_content_hash": "sha256:" + "0" * 64})
    assert err.error_id == "policy_langpack_mismatch"
    run(world["inp"], tmp_path / "ok", world["policy"],
        heuristic_filters={"langpack_content_hash": content_hash_of(LANGPACKS / "en")})


def test_policy_without_a_pack_hash(world: dict[str, Any], tmp_path: Path) -> None:
    policy = edit_policy(world["policy"], tmp_path / "p.yaml",
                         lambda d: d["langpack"].pop("content_hash"))
    err = refusal(world["inp"], tmp_path / "out", policy)
    assert err.error_id == "policy_langpack_mismatch"


def test_wrong_signals_impl_version(world: dict[str, Any], tmp_path: Path) -> None:
    policy = edit_policy(world["policy"], tmp_path / "p.yaml",
                         lambda d: d.update(signals_impl_version=IMPL_VERSION + "-old"))
    err = refusal(world["inp"], tmp_path / "out", policy)
    assert err.error_id == "signals_impl_version_mismatch"
    assert not list((tmp_path / "out").glob("part_*.jsonl"))


def test_output_dir_already_holding_shards(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(world["inp"], out, world["policy"])
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert "run_manifest.json" in before and "curation_ledger.json" in before
    err = refusal(world["inp"], out, world["policy"])
    assert err.error_id == "stale_filter_output"
    # the refusal leaves the earlier run's artifacts as they were
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_manifest_path_equal_to_ledger_path(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    err = refusal(world["inp"], out, world["policy"], emit_manifest="both.json",
                  emit_ledger=str(out / "both.json"))
    assert err.error_id == "emit_paths_collide"
    assert not out.exists()


def test_parquet_only_input(tmp_path: Path) -> None:
    inp = tmp_path / "in"
    inp.mkdir()
    pq.write_table(pa.table({"text": ["a document"], "id": ["1"]}), inp / "part_0.parquet")
    err = refusal(inp, tmp_path / "out")
    assert err.error_id == "input_is_not_readable_here"
    assert "ingest" in str(err)


def test_no_match(tmp_path: Path) -> None:
    err = refusal(tmp_path / "nothing" / "*.jsonl", tmp_path / "out")
    assert err.error_id == "input_glob_no_matches"
    (tmp_path / "empty").mkdir()
    assert refusal(tmp_path / "empty", tmp_path / "out").error_id == "input_glob_no_matches"


def test_allow_unvalidated_policy(world: dict[str, Any], tmp_path: Path) -> None:
    """``override_unvalidated`` only when the flag is set and validation failed."""
    allow = {"allow_unvalidated_policy": True}
    m = run(world["inp"], tmp_path / "valid", world["policy"], heuristic_filters=allow)
    assert m["policy"]["status"] == "approved"

    no_evidence = edit_policy(world["policy"], tmp_path / "p.yaml",
                              lambda d: d["approval"].pop("evidence"))
    err = refusal(world["inp"], tmp_path / "refused", no_evidence)
    assert err.error_id == "policy_invalid"
    m = run(world["inp"], tmp_path / "override", no_evidence, heuristic_filters=allow)
    assert m["policy"]["status"] == "override_unvalidated"
    assert "approval.evidence" in m["policy"]["note"]
    assert m["policy"]["thresholds_applied"] == len(policy_gates(no_evidence))
    # the thresholds are applied as in the valid run
    assert kept(tmp_path / "override") == kept(tmp_path / "valid")

    unapproved = edit_policy(world["policy"], tmp_path / "u.yaml",
                             lambda d: d.update(approved=False))
    m = run(world["inp"], tmp_path / "override2", unapproved, heuristic_filters=allow)
    assert m["policy"]["status"] == "override_unvalidated"


def test_incomplete_word_filter(world: dict[str, Any], tmp_path: Path) -> None:
    for q in ({"min_words": 10, "max_words": None}, {"min_words": None, "max_words": 10}):
        err = refusal(world["inp"], tmp_path / "out", quality_filters=q)
        assert err.error_id == "incomplete_word_filter"


def test_word_bounds_with_a_pack_without_word_segmentation(tmp_path: Path) -> None:
    packs = copy_pack(tmp_path / "packs")
    toml = packs / "en" / "pack.toml"
    toml.write_text(toml.read_text().replace('  "word_segmentation",\n', ""))
    records = corpus_records(60, seed=9)
    inp = write_shards(tmp_path / "in", records, shards=1)
    policy = approve(profile_candidate(inp, tmp_path, signals=["urls_ratio", "white_space"],
                                       langpack_dir=packs),
                     tmp_path / "approved.yaml", {"white_space": 0.3})
    err = refusal(inp, tmp_path / "out", policy, heuristic_filters={"langpack_dir": str(packs)})
    assert err.error_id == "incomplete_word_filter"
    run(inp, tmp_path / "ok", policy, heuristic_filters={"langpack_dir": str(packs)},
        quality_filters={"min_words": None, "max_words": None})


def test_a_signal_the_pack_cannot_compute(world: dict[str, Any], tmp_path: Path) -> None:
    """The ru pack does not claim ascii_alphabet, which non_alpha_numeric needs."""
    def to_russian(doc: dict[str, Any]) -> None:
        doc["langpack"].update(language_tag="ru", id="curator-ru",
                               content_hash=content_hash_of(LANGPACKS / "ru"))

    policy = edit_policy(world["policy"], tmp_path / "p.yaml", to_russian)
    assert "non_alpha_numeric" in [name for name, _, _ in policy_gates(policy)]
    err = refusal(world["inp"], tmp_path / "out", policy)
    assert err.error_id == "unknown_signal_in_policy"
    assert "ascii_alphabet" in str(err)
    assert not (tmp_path / "out" / "run_manifest.json").exists()


def test_a_signal_outside_the_registry(world: dict[str, Any], tmp_path: Path) -> None:
    policy = edit_policy(world["policy"], tmp_path / "p.yaml",
                         lambda d: d["thresholds"].append({"signal": "shininess", "max": 1}))
    err = refusal(world["inp"], tmp_path / "out", policy,
                  heuristic_filters={"allow_unvalidated_policy": True})
    assert err.error_id == "unknown_signal_in_policy"


def test_missing_language_model(world: dict[str, Any], tmp_path: Path) -> None:
    err = refusal(world["inp"], tmp_path / "out",
                  models={"fasttext_langid": str(tmp_path / "lid.176.bin")})
    assert err.error_id == "missing_language_model"
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"not a fasttext model" * 10)
    err = refusal(world["inp"], tmp_path / "out", models={"fasttext_langid": str(garbage)})
    assert err.error_id == "missing_language_model"


def test_language_filter_removed_everything(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    err = refusal(world["inp"], out, world["policy"], language_codes=["ZZ"])
    assert err.error_id == "language_filter_removed_everything"
    assert not list(out.glob("part_*.jsonl"))
    led = ledger(out)
    assert led["filtered_by_reason"] == {"language": len(world["records"])}
    assert led["balanced"] is True
    m = manifest(out)
    assert m["error"]["error_id"] == "language_filter_removed_everything"
    assert "completed_at" not in m["producer"]  # a refused run is not a completed one


def test_empty_or_tiny_output(world: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    err = refusal(world["inp"], out, language_codes=[],
                  quality_filters={"min_words": 100_000, "max_words": 200_000})
    assert err.error_id == "empty_or_tiny_output"
    assert ledger(out)["filtered_by_reason"] == {"word_count_bounds": len(world["records"])}
    assert "completed_at" not in manifest(out)["producer"]


def test_missing_langpack_dir(world: dict[str, Any], tmp_path: Path) -> None:
    err = refusal(world["inp"], tmp_path / "out", world["policy"],
                  heuristic_filters={"langpack_dir": " "})
    assert err.error_id == "missing_langpack_dir"
    assert not (tmp_path / "out").exists()


def test_no_langpack_dir_applies_the_policy_with_the_packaged_pack(
        world: dict[str, Any], tmp_path: Path) -> None:
    """The policy was measured with curator/langpacks/en named by path: unset, the
    filter loads the same pack from inside the package (a pack of another hash would be
    refused, policy_langpack_mismatch) and keeps what the explicit run keeps."""
    out, explicit = tmp_path / "out", tmp_path / "explicit"
    run(world["inp"], out, world["policy"], heuristic_filters={"langpack_dir": None})
    run(world["inp"], explicit, world["policy"])
    assert kept(out) == kept(explicit) and kept(out)


def test_unreadable_policy(world: dict[str, Any], tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text(yaml.safe_dump(["not", "a", "mapping"]))
    assert refusal(world["inp"], tmp_path / "out", bad).error_id == "policy_unresolved"
    missing = tmp_path / "absent.yaml"
    assert refusal(world["inp"], tmp_path / "out", missing).error_id == "policy_unresolved"
