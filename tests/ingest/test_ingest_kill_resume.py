"""SIGKILL a real ``curate ingest`` (its whole process group) in the parse phase, then in
the shard phase of the rerun; the third run ends with exactly the bytes of an
uninterrupted run, and a report that differs only in timing and resume fields."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.ingest._support import (
    RESUME,
    TIMING,
    Cli,
    artifacts,
    ingest,
    read_report,
    tree,
    without,
    write_config,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

WORDS = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
    "chi", "psi", "omega", "caf\u00e9", "na\u00efve", "\u201cquoted\u201d",
]


def make_corpus(folder: Path, files: int = 3, mb_per_file: int = 5) -> None:
    """About ``files * mb_per_file`` MB of JSONL with bad lines and duplicates."""
    rnd = random.Random(20240601)
    folder.mkdir(parents=True)
    for f in range(files):
        lines, size, n = [], 0, 0
        while size < mb_per_file * 1_000_000:
            if n % 211 == 3:
                line = '{"text": "cut off'
            elif n % 307 == 5:
                line = json.dumps({"text": "   ", "url": f"blank/{f}/{n}"})
            else:
                url = f"https://site/{n % 1000}" if n % 101 == 0 else f"https://site/{f}/{n}"
                text = " ".join(rnd.choice(WORDS) for _ in range(140)) if n % 101 else "dup"
                line = json.dumps({"text": text, "url": url, "n": n}, ensure_ascii=False)
            lines.append(line)
            size += len(line) + 1
            n += 1
        (folder / f"shard-{f}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


KEYS = {"on_duplicate": "drop", "partition_size": "300KB", "shard_size": 1500,
        "keep_fields": ["url", "n"]}


def _staged(out: Path) -> list[Path]:
    return [p for p in (out / ".staging").glob("*.parquet") if not p.name.startswith("_")]


def test_sigkill_in_parse_then_in_shards_then_resume(tmp_path: Path, prefect_api: str) -> None:
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    ref = ingest(str(corpus), tmp_path / "reference", **KEYS)
    total = ref["partitions"]["parse"]
    assert total >= 40 and len(ref["shards"]) >= 8
    assert ref["rejections_by_reason"].keys() == {"duplicate_id", "empty_text",
                                                  "unparsable_line"}

    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    cfg = write_config(tmp_path / "ingest.yaml", {
        "input": str(corpus), "output_dir": str(out), **KEYS,
        "execution": {"executor": "local", "workers": 2, "checkpoint_path": str(ckpt)},
    })

    # 1. Killed while parsing: some partitions staged, not all; no report, no shards.
    with Cli(cfg, tmp_path / "logs", "killed-parse") as cli:
        cli.kill_when(lambda: len(_staged(out)) >= 3, "three staged partitions", timeout=90)
    staged = len(_staged(out))
    assert 3 <= staged < total, f"{staged} of {total} partitions staged: not cut midway"
    assert not (out / "ingest_report.json").exists()
    assert not list(out.glob("part_*.jsonl"))
    assert list((ckpt / "ingest" / "parse").glob("*/*.mdb"))

    # 2. The rerun resumes the parse, then is killed once some shards are written.
    with Cli(cfg, tmp_path / "logs", "killed-shards") as cli:
        cli.kill_when(lambda: len(list(out.glob("part_*.jsonl"))) >= 2, "two shards", timeout=90)
    assert len(_staged(out)) == total  # the parse phase had finished
    assert not (out / "ingest_report.json").exists()
    written = len(list(out.glob("part_*.jsonl")))
    assert 2 <= written <= len(ref["shards"])

    # 3. The third run finishes: the same bytes as the uninterrupted run.
    with Cli(cfg, tmp_path / "logs", "resumed") as cli:
        code = cli.wait(120)
        assert code == 0, cli.stderr()[-3000:]
    report = read_report(out)
    assert artifacts(out) == artifacts(tmp_path / "reference")
    assert sorted(tree(out)) == sorted(tree(tmp_path / "reference"))  # no stray temp files
    assert without(report, TIMING + RESUME) == without(ref, TIMING + RESUME)
    assert report["was_resumed"] is True
    assert report["partitions"]["skipped_resumed"] >= total
    assert 0 < report["documents_skipped_resumed"] <= report["documents_seen"]
    assert report["balance"]["ok"] is True
    assert not (out / ".staging").exists()
    assert not (ckpt / "ingest").exists()  # a later run starts afresh
