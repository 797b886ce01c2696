"""The same report on every executor and after SIGKILL-and-resume (real subprocesses,
a real process pool, real Ray), and the flow's Prefect artifacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curator.profile.summary import render_summary
from curator.steps.profile import ProfileConfig, run_profile
from executors import make_executor
from tests.ingest._support import Cli, write_config
from tests.prefect_support import latest_artifact, table_rows
from tests.profile._support import corpus_records, profile_keys, write_shards

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

KEYS: dict[str, Any] = {"max_total_docs": 1500, "partition_size": "120KB",
                        "signals": ["word_count", "stopword_ratio", "urls_ratio",
                                    "repeating_duplicate_ngrams", "boilerplate_hits"]}


def _comparable(out: Path) -> tuple[dict[str, Any], bytes, bytes, bytes]:
    report = json.loads((out / "profile_report.json").read_text())
    report.pop("producer")
    return (report, (out / "sample_manifest.json").read_bytes(),
            (out / "candidate_policies.yaml").read_bytes(),
            (out / "profile_summary.md").read_bytes())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    return write_shards(root / "in", corpus_records(4000, seed=11), shards=5)


def _run(corpus: Path, out: Path, executor: str, workers: int | None) -> None:
    cfg = ProfileConfig(**profile_keys(corpus, out, **KEYS),
                        execution={"executor": executor, "workers": workers})
    ex = cfg.execution
    with make_executor(ex.executor, ex.workers, ex.ray_address) as pool:
        run_profile(cfg, pool)


def test_inline_local_and_ray_give_the_same_profile(
    tmp_path: Path, corpus: Path, ray_local: None
) -> None:
    _run(corpus, tmp_path / "inline", "inline", None)
    _run(corpus, tmp_path / "local", "local", 2)
    _run(corpus, tmp_path / "ray", "ray", 2)
    reference = _comparable(tmp_path / "inline")
    assert reference[0]["sampling"]["sampled"] == 1500
    assert _comparable(tmp_path / "local") == reference
    assert _comparable(tmp_path / "ray") == reference


def test_sigkill_while_scoring_then_resume(tmp_path: Path, corpus: Path,
                                           prefect_api: str) -> None:
    _run(corpus, tmp_path / "reference", "inline", None)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    cfg = write_config(tmp_path / "profile.yaml", {
        **profile_keys(corpus, out, **KEYS),
        "execution": {"executor": "local", "workers": 2, "checkpoint_path": str(ckpt)},
    })
    scores = out / ".profile-work" / "scores"
    with Cli(cfg, tmp_path / "logs", "killed", command="profile") as cli:
        cli.kill_when(lambda: len(list(scores.glob("*.parquet"))) >= 10, "10 scored partitions")
    done = len(list(scores.glob("*.parquet")))
    total = len(list((out / ".profile-work" / "fingerprint").glob("*.json")))
    assert 10 <= done < total, f"{done} of {total} partitions scored: not cut midway"
    assert not (out / "profile_report.json").exists()

    with Cli(cfg, tmp_path / "logs", "resumed", command="profile") as cli:
        assert cli.wait(240) == 0, cli.stderr()[-3000:]
    report = json.loads((out / "profile_report.json").read_text())
    # both earlier passes and some scored partitions (not necessarily every scored file:
    # completions are committed in groups, so the newest may be replayed) are skipped
    assert report["producer"]["resumed_partitions"] > 2 * total
    assert _comparable(out) == _comparable(tmp_path / "reference")
    assert not (out / ".profile-work").exists() and not (ckpt / "profile").exists()


def test_flow_publishes_summary_and_key_numbers(tmp_path: Path, corpus: Path,
                                                prefect_api: str) -> None:
    from flows.steps import profile_flow

    report = profile_flow({**profile_keys(corpus, tmp_path / "out", **KEYS),
                           "execution": {"executor": "inline"}})
    assert report["corpus"]["document_count"] == 4000

    summary = latest_artifact("profile-report")
    assert summary.type == "markdown"
    written = json.loads((tmp_path / "out" / "profile_report.json").read_text())
    assert summary.data == render_summary(written)  # the summary, without local plot links
    assert summary.data.replace("\n\n", "\n").count("## Signals") == 1
    rows = table_rows(latest_artifact("profile-signals"))
    assert [r["signal"] for r in rows] == KEYS["signals"]
