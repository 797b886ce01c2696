"""A run that fails inside a partition, on every executor: the partition's own error id
reaches the user, the other partitions are not lost with it, and the manifest and ledger
describe what is on disk."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator.steps.filter import FilterConfig, run_filter
from executors import make_executor
from tests.filter._support import (
    corpus_records,
    filter_keys,
    ledger,
    manifest,
    sha256_file,
    shard_files,
    write_shards,
)

#: records with a ``lang`` field, then records without one
HAVE_LANG = 150


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("failures")
    records = corpus_records(200, seed=17)
    for rec in records[:HAVE_LANG]:
        rec["lang"] = "en"
    return {"records": records, "inp": write_shards(root / "in", records, shards=2)}


def test_a_curator_error_survives_pickling() -> None:
    """A process pool hands a worker's exception back pickled; one that cannot be
    unpickled breaks the pool (BrokenProcessPool) and loses every partition in flight."""
    err = CuratorError("metadata_field_absent_from_some_records", "field x absent", record=3)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is CuratorError
    assert (back.error_id, back.message, back.details) == (err.error_id, err.message,
                                                           err.details)
    assert str(back) == str(err)


@pytest.mark.parametrize("executor", [
    "inline",
    pytest.param("local", marks=pytest.mark.slow),
    pytest.param("ray", marks=pytest.mark.slow),
])
def test_a_failed_partition_on_each_executor(corpus: dict[str, Any], tmp_path: Path,
                                             executor: str,
                                             request: pytest.FixtureRequest) -> None:
    if executor == "ray":
        request.getfixturevalue("ray_local")
    out = tmp_path / "out"
    keys = filter_keys(corpus["inp"], out, metadata_fields=["lang"], partition_size="40KB",
                       quality_filters={"min_words": None, "max_words": None},
                       language_codes=[])
    cfg = FilterConfig(**keys, execution={"executor": executor,
                                          "workers": None if executor == "inline" else 2})
    ex = cfg.execution
    with make_executor(ex.executor, ex.workers, ex.ray_address) as pool, \
            pytest.raises(CuratorError) as caught:
        run_filter(cfg, pool)
    err = caught.value
    # the partition's own refusal, not the engine's wrapper or a broken pool
    assert err.error_id == "metadata_field_absent_from_some_records", err
    assert err.exit_code == 2
    assert "BrokenProcessPool" not in str(err) and "terminated abruptly" not in str(err)

    m, led = manifest(out), ledger(out)
    on_disk = shard_files(out)
    rows = sum(len(p.read_bytes().splitlines()) for p in on_disk)
    # partitions before the first record without `lang` completed and are on disk
    assert 0 < rows < HAVE_LANG
    assert "completed_at" not in m["producer"]
    assert m["error"]["error_id"] == "metadata_field_absent_from_some_records"
    # the manifest's output is what is on disk, shard by shard
    assert m["output"]["row_count"] == rows
    assert m["output"]["file_count"] == len(on_disk)
    assert m["output"]["shards"] == [
        {"name": p.name, "rows": len(p.read_bytes().splitlines()), "sha256": sha256_file(p)}
        for p in on_disk]
    assert sum(m["output"]["per_source"].values()) == rows
    # the ledger: what is on disk is success, the rest belongs to the failed output dir
    assert led["n_input"] == m["input"]["row_count"] == len(corpus["records"])
    assert led["n_success"] == rows
    assert led["failed_units"] == [{"unit": str(out),
                                    "reason": "metadata_field_absent_from_some_records",
                                    "records": len(corpus["records"]) - rows}]
    assert led["balanced"] is True and led["notes"]["completed"] is False
    assert m["declared"]["failed"] == len(corpus["records"]) - rows
    assert m["declared"]["rows_absent_from_output"] == len(corpus["records"]) - rows


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (hidden ones too), with file contents."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


def test_a_refused_rerun_leaves_the_interrupted_run_resumable(tmp_path: Path) -> None:
    """A failed checkpointed run, then a rerun with another configuration: the rerun is
    refused (stale output) without touching the output dir or the checkpoint, so the
    first configuration still resumes once its input is fixed."""
    records = corpus_records(200, seed=19)
    for i, rec in enumerate(records):
        rec["lanx" if i >= HAVE_LANG else "lang"] = "en"  # same length: same partitions
    inp = write_shards(tmp_path / "in", records, shards=2)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    keys = {"metadata_fields": ["lang"], "partition_size": "40KB", "language_codes": [],
            "quality_filters": {"min_words": None, "max_words": None},
            "execution": {"checkpoint_path": str(ckpt)}}
    with pytest.raises(CuratorError) as caught:
        run_filter(FilterConfig(**filter_keys(inp, out, **keys)))
    assert caught.value.error_id == "metadata_field_absent_from_some_records"
    done = len(shard_files(out))
    assert done > 0
    out_before, ckpt_before = _tree(out), _tree(ckpt)
    assert ckpt_before

    other = FilterConfig(**filter_keys(inp, out, **{**keys, "language_codes": ["EN"]}))
    with pytest.raises(CuratorError) as caught:
        run_filter(other)
    assert caught.value.error_id == "stale_filter_output"
    assert _tree(out) == out_before
    assert _tree(ckpt) == ckpt_before

    for path in inp.glob("*.jsonl"):  # fix the input, byte length unchanged
        path.write_bytes(path.read_bytes().replace(b'"lanx"', b'"lang"'))
    m = run_filter(FilterConfig(**filter_keys(inp, out, **keys)))
    assert m["producer"]["completed_at"]
    assert m["producer"]["resumed_partitions"] >= done
    fresh = tmp_path / "fresh"
    m_fresh = run_filter(FilterConfig(**filter_keys(inp, fresh, **keys)))
    assert [p.read_bytes() for p in shard_files(out)] == \
        [p.read_bytes() for p in shard_files(fresh)]
    assert m["output"]["row_count"] == m_fresh["output"]["row_count"] == len(records)
    assert ledger(out) == ledger(fresh)


def test_rejection_files_of_an_earlier_run_are_stale_output(corpus: dict[str, Any],
                                                            tmp_path: Path) -> None:
    """A refused run leaves only rejection files; a rerun into the same output dir (here
    with other partitions) would mix its rejections with the earlier run's, and a grep
    for a kept record would say it was removed: refused as stale output."""
    out = tmp_path / "out"
    no_words = {"min_words": None, "max_words": None}
    with pytest.raises(CuratorError) as caught:
        run_filter(FilterConfig(**filter_keys(corpus["inp"], out, language_codes=["ZZ"],
                                              quality_filters=no_words,
                                              partition_size="10KB")))
    assert caught.value.error_id == "language_filter_removed_everything"
    assert not shard_files(out) and len(list((out / "rejected").glob("*.jsonl"))) > 4
    before = _tree(out)
    with pytest.raises(CuratorError) as caught:
        run_filter(FilterConfig(**filter_keys(corpus["inp"], out, language_codes=[],
                                              quality_filters=no_words,
                                              partition_size="40KB")))
    assert caught.value.error_id == "stale_filter_output"
    assert _tree(out) == before
    # the same for a configured rejected_dir outside the output dir
    why = tmp_path / "why"
    why.mkdir()
    (why / "part_9.jsonl").write_text('{"id": "old"}\n')
    with pytest.raises(CuratorError) as caught:
        run_filter(FilterConfig(**filter_keys(corpus["inp"], tmp_path / "out2",
                                              language_codes=[], quality_filters=no_words,
                                              rejected_dir=str(why))))
    assert caught.value.error_id == "stale_filter_output"


def test_killed_while_writing_the_manifest_still_resumes(
    corpus: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every shard is on disk but the process dies before the manifest is written: the
    checkpoint must still be there, so the rerun resumes and writes the manifest
    (rather than refusing its own shards as stale output)."""
    import curator.steps.base as step  # where every step's artifacts are written

    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    keys = {"partition_size": "40KB", "language_codes": [],
            "quality_filters": {"min_words": 20, "max_words": 5000},
            "execution": {"checkpoint_path": str(ckpt)}}
    real = step.write_json_atomic

    def dies_at_the_manifest(path: Any, data: Any) -> None:
        if Path(path).name == "run_manifest.json":
            raise SystemExit(137)
        real(path, data)

    monkeypatch.setattr(step, "write_json_atomic", dies_at_the_manifest)
    with pytest.raises(SystemExit):
        run_filter(FilterConfig(**filter_keys(corpus["inp"], out, **keys)))
    monkeypatch.setattr(step, "write_json_atomic", real)
    shards = {p.name: p.read_bytes() for p in shard_files(out)}
    assert shards and not (out / "run_manifest.json").exists()

    m = run_filter(FilterConfig(**filter_keys(corpus["inp"], out, **keys)))
    assert m["producer"]["completed_at"]
    assert m["producer"]["resumed_partitions"] >= len(shards)
    assert {p.name: p.read_bytes() for p in shard_files(out)} == shards
    assert m["output"]["row_count"] == sum(v.count(b"\n") for v in shards.values())
    assert ledger(out)["balanced"] is True
    assert not ckpt.exists() or not any(ckpt.iterdir())
    assert not (out / ".filter-work").exists()


def test_a_token_count_threshold_needs_a_tokenizer(tmp_path: Path) -> None:
    """``token_count`` in a policy: refused without a tokenizer (the pack cannot compute
    it), and refused with one too, since no tokenizer backend is bundled; either way
    before the output dir is touched."""
    from tests.filter._support import approve, edit_policy, profile_candidate, refusal

    inp = write_shards(tmp_path / "in", corpus_records(60, seed=23), shards=1)
    policy = approve(profile_candidate(inp, tmp_path, signals=["white_space"]),
                     tmp_path / "approved.yaml", {"white_space": 0.3})
    with_tokens = edit_policy(policy, tmp_path / "tokens.yaml", lambda d: d["thresholds"]
                              .append({"signal": "token_count", "min": 1, "max": 4096}))
    out = tmp_path / "out"
    err = refusal(inp, out, with_tokens)
    assert err.error_id == "unknown_signal_in_policy" and "tokenizer" in str(err)
    err = refusal(inp, out, with_tokens, heuristic_filters={
        "tokenizer": {"name": "gpt2", "revision": "main"}})
    assert err.error_id == "config_error" and "token_count" in str(err)
    assert not out.exists()
