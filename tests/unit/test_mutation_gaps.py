"""Tests for gaps found by mutating the code: each fails under a change that left the rest
of the suite green. Real components throughout: real files, real LMDB files, the bundled
language model; the only stand-in is a second host's name (gap 11), which one machine
cannot have otherwise.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from curator.corpus.langid import FastTextLangId
from curator.filter.gates import GatePlan, LanguageGate, decide
from curator.io.writers import JsonlWriter, atomic_file, clear_stale_temps
from curator.pipeline import Pipeline
from curator.steps.filter import FilterConfig, run_filter
from tests.ingest._support import read_jsonl, write_records
from tests.unit._support import (
    Emit,
)

# -- gap 8: a language score exactly at min_langid_score ---------------------------------------

_DIGITS = "12345 67890"  # labelled en by lid.176 with a low confidence
_PROSE = ("The city council met on Tuesday evening to discuss the new budget for the public "
          "library, and the mayor promised to review the proposal.")


def _digits_score() -> float:
    model = FastTextLangId.open(None, 500)
    labels, conf = model.predict([_DIGITS])
    assert labels == ["en"] and 0.05 < conf[0] < 0.3
    return float(conf[0])


def test_a_language_score_exactly_at_the_floor_is_kept() -> None:
    """Gap 8: the gate keeps a confidence of *at least* ``min_langid_score`` (docs/filter.md,
    docs/langid.md: ``score >= 0.3``): a score equal to the floor passes, one ulp more
    fails."""
    model = FastTextLangId.open(None, 500)
    score = _digits_score()
    texts = [_DIGITS, _PROSE]
    at = decide(GatePlan(language=LanguageGate(("EN",), score)), texts, model, lambda t, n: {})
    assert at.kept.tolist() == [True, True] and at.first_gate == [None, None]
    assert float(at.scores["language"][0]) == score
    above = float(np.nextafter(score, 1.0))
    over = decide(GatePlan(language=LanguageGate(("EN",), above)), texts, model,
                  lambda t, n: {})
    assert over.kept.tolist() == [False, True] and over.first_gate == ["language", None]


def test_the_filter_step_keeps_a_document_scored_exactly_at_min_langid_score(
    tmp_path: Path,
) -> None:
    """Gap 8 through ``curate filter``: the configured floor equal to the document's score
    keeps it; one ulp above removes it, attributed to the language gate."""
    score = _digits_score()
    inp = tmp_path / "in" / "part_0.jsonl"
    write_records(inp, [{"id": "digits", "text": _DIGITS}, {"id": "prose", "text": _PROSE}])
    for floor, kept in ((score, ["digits", "prose"]), (float(np.nextafter(score, 1.0)),
                                                       ["prose"])):
        out = tmp_path / f"out-{len(kept)}"
        run_filter(FilterConfig(input_glob=str(inp.parent), output_dir=str(out), id_field="id",
                                language_codes=["EN"],
                                quality_filters={"min_langid_score": floor}))
        assert [r["id"] for r in read_jsonl(out / "part_0.jsonl")] == kept
        ledger = json.loads((out / "curation_ledger.json").read_text())
        assert ledger["filtered_by_reason"] == ({} if len(kept) == 2 else {"language": 1})
        assert ledger["balanced"] is True


# -- gap 11: another host's files on a shared filesystem ----------------------------------------


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(proc.stdout)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    return pid


def _this_host() -> str:
    host = socket.gethostname()
    assert host and all(c.isalnum() or c in ".-" for c in host), host
    return host


def test_a_temp_file_names_its_host_and_pid(tmp_path: Path) -> None:
    """Gap 11: the temp name carries the host, so a pid is never read on the wrong host."""
    target = tmp_path / "out" / "part_0.jsonl"
    with atomic_file(target) as f:
        f.write(b"x\n")
        assert [p.name for p in target.parent.iterdir()] == [
            f".part_0.jsonl.tmp-{_this_host()}-{os.getpid()}"]
    assert [p.name for p in target.parent.iterdir()] == ["part_0.jsonl"]


def test_stale_temp_cleanup_judges_only_this_hosts_pids(tmp_path: Path) -> None:
    """Gap 11: an output directory several hosts share (a network filesystem). A temp file
    of pid N on another host must not be judged by this host's pid N: it may be a live
    writer there. Only this host's temps of dead writers are removed."""
    dead, me, host = _dead_pid(), os.getpid(), _this_host()
    out = tmp_path / "out"
    (out / "rejected").mkdir(parents=True)
    names = {
        f".a.jsonl.tmp-{host}-{dead}": False,  # this host, writer dead: removed
        f".b.jsonl.tmp-{dead}": False,  # an older run's name (no host), writer dead: removed
        f".c.jsonl.tmp-{host}-{me}": True,  # this host, writer alive: kept
        f".d.jsonl.tmp-node-7.cluster-{dead}": True,  # another host: kept
        f".e.jsonl.tmp-node-7.cluster-{me}": True,  # another host, pid alive here by chance
        f"rejected/.f.jsonl.tmp-node-7-{dead}": True,  # a host named with a dash and digit
    }
    for name in names:
        (out / name).write_text("half a record")
    clear_stale_temps(out)
    assert {name: (out / name).exists() for name in names} == names

    # the writer sink clears its output directory with the same rule
    (out / f".a.jsonl.tmp-{host}-{dead}").write_text("half a record")
    Pipeline("w", [Emit(n=1), JsonlWriter(path=str(out))]).run()
    assert not (out / f".a.jsonl.tmp-{host}-{dead}").exists()
    assert (out / f".d.jsonl.tmp-node-7.cluster-{dead}").exists()
    assert (out / "0.jsonl").exists()


