"""Input that changes under a running step: after the run listed its input and planned
its partitions, before a worker reads them, one input file is deleted, truncated to
half, or replaced by other bytes of the same size (an editor's save, a re-download).
On the process pool, through ``curate <command>``:

- the run ends with an error id (``input_changed``: the file named, what changed), exit 2,
  never a hang, a traceback, or a completed run built from half a file;
- its report is written with the error and without ``completed_at``, and its counts
  balance (every record the completed partitions read is accepted or rejected);
- once the file is restored, the same command resumes and ends with the bytes of a clean
  run.

The fault is injected in the driver by a wrapper around the engine's planning
(``Pipeline._plan_sources``): deterministic, and exactly "after the listing".
``make test`` runs one case (the filter, a file truncated: it used to complete with half
the file); ``make chaos`` (``CURATE_CHAOS_FULL=1``) the three faults for every step that
reads a corpus (ingest, filter, profile, decontamination, subset). docs/reliability.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from curator.config import validate_config
from curator.corpus.formats import is_compressed
from curator.steps.registry import BY_KEY
from tests.chaos._harness import Case, leftovers, scrub
from tests.integration._support import Proc
from tests.steps._worlds import data_files

FULL = os.environ.get("CURATE_CHAOS_FULL") == "1"
HANG = 180  # seconds: a run of the small world that takes longer hangs
pytestmark = pytest.mark.timeout(600)

#: ``curate`` with the engine's planning wrapped: the first pass's partitions are planned
#: (the input listed, byte ranges fixed), then the file is changed, then the pass runs
CHANGE_AFTER_LISTING = """
import os, sys
from pathlib import Path
from curator.pipeline import Pipeline
from flows.cli import main
original = Pipeline._plan_sources
done = []
def plan(self, *args, **kwargs):
    sources = original(self, *args, **kwargs)
    if not done:
        done.append(True)
        fault, target = os.environ["CHAOS_FAULT"], Path(os.environ["CHAOS_FILE"])
        if fault == "delete":
            target.unlink()
        elif fault == "truncate":
            os.truncate(target, target.stat().st_size // 2)
        else:  # replace: other bytes of the same size, a new file renamed over it
            swap = target.with_name(".swap")
            swap.write_bytes(Path(os.environ["CHAOS_REPLACEMENT"]).read_bytes())
            os.replace(swap, target)
        print("changed", target, file=sys.stderr)
    return sources
Pipeline._plan_sources = plan
sys.argv = ["curate", *sys.argv[1:]]
main()
"""

SAMPLE = {("filter", "truncate")}
CASES = [pytest.param(step, fault, id=f"{step}-{fault}",
                      marks=() if FULL or (step, fault) in SAMPLE else pytest.mark.skip(
                          reason="the full matrix runs in make chaos (CURATE_CHAOS_FULL=1)"))
         for step in ("ingest", "filter", "profile", "decontamination", "subset")
         for fault in ("delete", "truncate", "replace")]


def largest_plain_jsonl(folder: Path) -> Path:
    """The input file the fault hits: the largest uncompressed JSONL file (split into
    byte ranges when larger than a partition)."""
    files = [p for p in folder.rglob("*.jsonl") if p.is_file() and not is_compressed(str(p))
             and "rejected" not in p.parts]
    return max(files, key=lambda p: (p.stat().st_size, str(p)))


def same_size_other_bytes(data: bytes) -> bytes:
    """The lines of ``data`` in reverse order: the same size, other records where."""
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
        return b"".join(reversed(lines))[:-1]
    return b"".join(reversed(lines))


def balanced(key: str, report: dict[str, Any]) -> None:
    """A report's counts balance: every record read is accepted or rejected (ingest's
    report of a run that failed in its parse pass has no counts: it counts documents
    once their duplicates are resolved; its ``balance`` block then)."""
    if key == "ingest":
        bal = report.get("balance")
        if bal is not None:
            assert bal["ok"] and bal["seen"] == bal["accepted"] + bal["rejected"], bal
    elif "input" in report:  # the filter's (profile, decontamination and subset report
        # no counts for a failed run; their resumed run's bytes are compared below)
        n_in, n_out = report["input"]["row_count"], report["output"]["row_count"]
        assert n_out <= n_in, report
        rejected = report.get("rejections_by_reason")
        if rejected is not None:
            assert n_in == n_out + sum(rejected.values()), report


def figures(key: str, report: dict[str, Any]) -> Any:
    if key == "ingest":
        return scrub(report["counts"]), report["balance"]
    if key == "filter":
        return (report["input"]["row_count"], report["output"]["row_count"],
                report.get("rejections_by_reason"))
    return None  # the other steps: their output bytes are compared


@pytest.mark.parametrize(("step", "fault"), CASES)
def test_an_input_file_changed_after_listing_is_an_error_then_resumes(
        step: str, fault: str, tmp_path: Path) -> None:
    spec = BY_KEY[step]
    case = Case(spec, "local", tmp_path)
    clean = tmp_path / "clean"
    spec.run(validate_config(spec.config, case.world.config(clean)))
    target = largest_plain_jsonl(Path(case.cfg[spec.input_key]))
    pristine = target.read_bytes()
    replacement = tmp_path / "replacement.jsonl"
    replacement.write_bytes(same_size_other_bytes(pristine))
    argv = [sys.executable, "-c", CHANGE_AFTER_LISTING, spec.command_name,
            "--config", str(case.config_path)]
    env = {"CURATE_PREFECT": "never", "CHAOS_FAULT": fault, "CHAOS_FILE": str(target),
           "CHAOS_REPLACEMENT": str(replacement),
           "PYTHONPATH": str(Path(__file__).parents[2])}
    with Proc(argv, case.logs, f"{fault}", env=env) as proc:
        code = proc.wait(HANG)
        err = proc.stderr()
    assert "changed " in err, err[-3000:]  # the fault was injected
    assert "Traceback" not in err, err[-3000:]
    assert code == 2, f"exit {code}\n{err[-3000:]}"
    assert "input_changed" in err and str(target) in err, err[-3000:]
    found = spec.read_result(case.cfg)  # its model; the asserts read it as written
    result = found.dump() if found is not None else None
    assert result is not None, "the failed run's report is written"
    assert result["error"]["error_id"] in ("input_changed", "partition_failed"), result["error"]
    assert "input_changed" in result["error"]["message"] or (
        result["error"]["error_id"] == "input_changed")
    assert "completed_at" not in result["producer"]
    assert not spec.is_complete(case.cfg)
    balanced(step, result)

    target.write_bytes(pristine)  # restored (a new mtime: the same bytes)
    with case.proc("rerun") as proc:
        code = proc.wait(HANG)
        err = proc.stderr()
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    assert spec.is_complete(case.cfg)
    assert data_files(case.out) == data_files(clean)
    assert leftovers(case.out) == []
    read = [spec.read_result(case.cfg),
            spec.read_result({**case.cfg, "output_dir": str(clean)})]
    resumed, fresh = (r.dump() if r is not None else None for r in read)
    assert resumed is not None and fresh is not None
    balanced(step, resumed)
    assert figures(step, resumed) == figures(step, fresh)
