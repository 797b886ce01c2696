"""The chaos harness: a registered step run by ``curate <command>`` as a subprocess in a
session of its own, killed (SIGKILL to the whole group) at seeded random moments until it
finishes, then compared with a clean run of the same config at the same paths.

Used by ``tests/chaos`` (a small fixed-seed sample in ``make test``) and by
``bench/chaos.py`` (``make chaos``: >= 20 kills per step and executor). See
docs/reliability.md.
"""

from __future__ import annotations

import collections
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from curator.steps.spec import StepSpec
from tests.integration._support import Proc, ray_env, short_tmp
from tests.steps._worlds import data_files, make_world

CURATE = str(Path(sys.executable).parent / "curate")

#: Report keys that differ between two runs of one config (time) and between a clean
#: and a killed-and-resumed run (resume counters); dropped wherever they appear.
VOLATILE = frozenset({
    "started_at", "completed_at", "seconds", "run_id", "elapsed_seconds", "wall_seconds",
    "resumed_partitions", "was_resumed", "documents_skipped_resumed", "skipped_resumed",
    "resumed", "tool_revision",
})
#: a writer's temp file (curator.io.writers): never visible once a run is complete
_TEMP = re.compile(r"\.tmp-")


def scrub(value: Any) -> Any:
    """``value`` without :data:`VOLATILE` keys, at any depth; a flow report's step that
    a rerun skipped as done (``skipped``, with a note saying so) reads as ``ok``."""
    if isinstance(value, dict):
        if value.get("status") == "skipped" and "step_id" in value:
            value = {**value, "status": "ok", "notes": []}
        return {k: scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def comparable_files(out: Path) -> dict[str, bytes]:
    """:func:`data_files`, with the flow's ``report.html`` (rendered from the artifacts,
    which are compared themselves) without its timestamps and with a step skipped as
    done reading as ``ok``."""
    files = data_files(out)
    if "report.html" in files:
        files["report.html"] = _STAMP.sub(b"<t>", files["report.html"]).replace(
            b"<td>skipped</td>", b"<td>ok</td>")
    return files


def reports(out: Path) -> dict[str, Any]:
    """Every JSON report of an output directory (hidden work files aside), scrubbed."""
    found = {}
    for p in sorted(out.rglob("*.json")):
        rel = p.relative_to(out)
        if not any(part.startswith(".") for part in rel.parts):
            found[str(rel)] = scrub(json.loads(p.read_text(encoding="utf-8")))
    return found


def record_ids(out: Path) -> collections.Counter[tuple[str, str]]:
    """``(file, id)`` of every JSONL record with an ``id`` in the data files."""
    ids: collections.Counter[tuple[str, str]] = collections.Counter()
    for name, data in data_files(out).items():
        if name.endswith(".jsonl"):
            for line in data.splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and "id" in rec:
                    ids[(name, str(rec["id"]))] += 1
    return ids


def leftovers(out: Path) -> list[str]:
    """Temp files, work directories and lock files left under ``out``."""
    return sorted(str(p.relative_to(out)) for p in out.rglob("*")
                  if _TEMP.search(p.name) or p.name.endswith("-work")
                  or p.name == ".curate.lock")


@dataclass
class Case:
    """One step on one executor, in ``folder``: its world, config file and paths."""

    spec: StepSpec
    executor: str
    folder: Path
    workers: int = 2
    cfg: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.world = world = make_world(self.spec.key, self.spec.input_key,
                                        self.folder / "world")
        self.out = self.folder / "out"
        self.ckpt = self.folder / "ckpt"
        self.cfg = world.config(self.out, self.ckpt)
        self.cfg["execution"] = {"executor": self.executor, "workers": self.workers,
                                 "checkpoint_path": str(self.ckpt)}
        self.config_path = self.folder / "config.yaml"
        self.config_path.write_text(yaml.safe_dump(self.cfg), encoding="utf-8")
        self.logs = self.folder / "logs"
        self.ray_tmp = short_tmp() if self.executor == "ray" else None

    def proc(self, tag: str, *sets: str, config: Path | None = None) -> Proc:
        argv = [CURATE, self.spec.command_name, "--config", str(config or self.config_path)]
        for s in sets:
            argv += ["--set", s]
        env = {"CURATE_PREFECT": "never", "PYTHONPATH": str(Path(__file__).parents[2])}
        if self.ray_tmp is not None:
            env.update(ray_env(self.ray_tmp))
        return Proc(argv, self.logs, tag, env=env)

    def close(self) -> None:
        if self.ray_tmp is not None:
            shutil.rmtree(self.ray_tmp, ignore_errors=True)


@dataclass(frozen=True)
class FlowSpec:
    """The whole flow (``curate flow``) in the place of a step's spec: what the harness
    asks of a spec (its key, its command, whether a run of its config is complete)."""

    key: str = "flow"
    command_name: str = "flow"

    def is_complete(self, cfg: dict[str, Any]) -> bool:
        report = Path(cfg["output_root"]) / "flow_report.json"
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return data.get("status") == "ok" and bool(data.get("completed_at"))


FLOW = FlowSpec()
#: the flow's approval, the demo's choices (examples/demo/flow-apply.yaml)
FLOW_APPROVE = {"thresholds": {"stopword_ratio": 0.0952381, "unicode_alpha_numeric": 0.269841,
                               "boilerplate_hits": 3},
                "approver": "chaos harness", "evidence": "the demo's thresholds"}


class FlowCase(Case):
    """The whole flow of the demo's second run (examples/demo/flow-apply.yaml): ingest,
    the approval of the demo's thresholds, filter, audit, decontamination (a planted
    holdout) and subset, on the demo corpus of the steps' worlds, each step with its
    world's small keys. The profile the approval reads is measured once, uninterrupted,
    by a first flow (ingest and profile, as ``make demo`` does) in the world folder: a
    flow that profiles may not also approve (``profile_enabled_during_approval``)."""

    def __init__(self, executor: str, folder: Path, workers: int = 2) -> None:
        self.spec = FLOW  # type: ignore[assignment]
        self.executor, self.folder, self.workers = executor, folder, workers
        from tests.steps._worlds import KEYS, decontamination_world

        raw = folder / "world" / "raw"
        if not raw.is_dir():
            from curator_demo import generate_demo_corpus

            generate_demo_corpus(raw, docs=240, seed=7)
        _, holdout = decontamination_world(folder / "world" / "decontamination")
        self.out, self.ckpt = folder / "out", folder / "ckpt"
        pick = {  # each step's world keys that a flow does not derive
            "ingest": {"on_duplicate": "drop", "partition_size": "64KB", "shard_size": 100},
            "profile": {k: v for k, v in KEYS["profile"][0].items()
                        if k in ("max_total_docs", "signals", "partition_size")},
            "filter": {k: v for k, v in KEYS["filter"][0].items() if k != "source_field"},
            "audit": {"mode": "all", "comparison_fields": ["id", "text"]},
            "decontamination": {"partition_size": "64KB",
                                "holdout": str(holdout / "holdout.jsonl")},
            "subset": {k: v for k, v in KEYS["subset"][0].items()
                       if k not in ("id_field", "source_field")},
        }
        corpus = {"input": str(raw), "source_field": "source", "metadata_fields": ["url"],
                  "language": "en",
                  "langpack_dir": str(Path(__file__).parents[2] / "curator" / "langpacks")}
        measured = folder / "world" / "measured"
        candidate = measured / "profile" / "candidate_policies.yaml"
        if not candidate.is_file():
            measure = folder / "world" / "measure.yaml"
            measure.write_text(yaml.safe_dump({
                "corpus": corpus, "output_root": str(measured),
                "steps": {k: ({"enabled": True, **pick[k]} if k in ("ingest", "profile")
                              else {"enabled": False}) for k in pick},
                "execution": {"executor": "inline"}}), encoding="utf-8")
            done = subprocess.run(
                [CURATE, "flow", "--config", str(measure)], capture_output=True, text=True,
                env={**os.environ, "CURATE_PREFECT": "never",
                     "PYTHONPATH": str(Path(__file__).parents[2])}, timeout=600)
            if done.returncode != 0:
                raise AssertionError(f"the measuring flow failed:\n{done.stderr[-3000:]}")
        pick.pop("profile")
        self.cfg = {
            "corpus": corpus,
            "output_root": str(self.out),
            "steps": {"profile": {"enabled": False},
                      **{key: {"enabled": True, **keys} for key, keys in pick.items()}},
            "approve": {**FLOW_APPROVE, "from": str(candidate)},
            "execution": {"executor": executor, "workers": workers,
                          "checkpoint_path": str(self.ckpt)},
        }
        self.config_path = folder / "config.yaml"
        folder.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(yaml.safe_dump(self.cfg), encoding="utf-8")
        self.logs = folder / "logs"
        self.ray_tmp = short_tmp() if executor == "ray" else None

    def proc(self, tag: str, *sets: str, config: Path | None = None) -> Proc:
        argv = [CURATE, "flow", "--config", str(config or self.config_path)]
        env = {"CURATE_PREFECT": "never", "PYTHONPATH": str(Path(__file__).parents[2])}
        if self.ray_tmp is not None:
            env.update(ray_env(self.ray_tmp))
        return Proc(argv, self.logs, tag, env=env)


def make_case(key: str, executor: str, folder: Path) -> Case:
    """The harness's case for a registered step's key, or ``flow`` for the whole flow."""
    if key == FLOW.key:
        return FlowCase(executor, folder)
    from curator.steps.registry import BY_KEY

    return Case(BY_KEY[key], executor, folder)


def wait_group_gone(proc: Proc, timeout: float = 60) -> None:
    """Until no process of ``proc``'s group is left (a worker killed in a system call
    dies after the driver; a rerun must not see its pid alive)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            raise AssertionError("the killed process group is still alive")
        time.sleep(0.05)


def run_to_end(case: Case, tag: str, timeout: float = 600) -> tuple[int, float, str]:
    """One uninterrupted run: ``(exit code, seconds, stderr)``."""
    t0 = time.monotonic()
    with case.proc(tag) as proc:
        code = proc.wait(timeout)
        return code, time.monotonic() - t0, proc.stderr()


@dataclass
class Figures:
    step: str
    executor: str
    seed: int
    kills: int = 0
    runs: int = 0
    cycles: int = 0  # clean-to-finished sequences of killed runs, each compared
    resumed_runs: int = 0  # runs that resumed partitions a killed run had completed
    resumed_then_killed: int = 0  # runs that resumed so, then were killed themselves
    killed_after_completion: int = 0  # kills that landed once the report was complete
    mismatches: list[str] = field(default_factory=list)
    seconds: float = 0.0
    clean_seconds: float = 0.0


def chaos(case: Case, kills: int, seed: int, timeout: float = 600) -> Figures:
    """A clean run, then cycles of the same config killed at seeded random moments
    (uniform over the clean run's wall time) and run again until it finishes, each
    cycle compared with the clean run, until ``kills`` kills have landed. A run counts
    as finished when it exits 0, or when the kill landed after its completion artifact
    was complete (then it is not run again: its output is final)."""
    fig = Figures(case.spec.key, case.executor, seed)
    t0 = time.monotonic()
    code, clean_s, err = run_to_end(case, "clean", timeout)
    if code != 0:
        raise AssertionError(f"clean run failed ({code}):\n{err[-3000:]}")
    fig.clean_seconds = clean_s
    clean_out = case.folder / "clean"
    case.out.rename(clean_out)
    shutil.rmtree(case.ckpt, ignore_errors=True)
    rng = random.Random(seed)
    while fig.kills < kills and not fig.mismatches:
        fig.cycles += 1
        killed_at_end = _cycle(case, fig, rng, clean_s, kills, timeout)
        fig.mismatches += compare(clean_out, case.out, work_may_remain=killed_at_end)
        shutil.rmtree(case.out, ignore_errors=True)
        shutil.rmtree(case.ckpt, ignore_errors=True)
        if fig.runs > 6 * kills + 10:
            fig.mismatches.append(f"only {fig.kills} kills landed in {fig.runs} runs")
    fig.seconds = time.monotonic() - t0
    return fig


def _cycle(case: Case, fig: Figures, rng: random.Random, clean_s: float, kills: int,
           timeout: float) -> bool:
    """Kill and rerun until finished; whether a kill landed after completion."""
    while True:
        fig.runs += 1
        last = fig.kills >= kills  # enough kills: run to the end
        moment = rng.uniform(0.0, clean_s)
        with case.proc(f"run-{fig.runs}") as proc:
            deadline = time.monotonic() + (timeout if last else moment)
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if proc.poll() is not None:  # it finished before the moment came
                if proc.popen.returncode != 0:
                    fig.mismatches.append(f"run {fig.runs} exited {proc.popen.returncode}: "
                                          + proc.stderr()[-1500:])
                fig.resumed_runs += bool(re.search(r"[1-9]\d* skipped as complete",
                                                   proc.stderr()))
                return False
            proc.record_descendants()
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
            fig.resumed_then_killed += bool(re.search(r"[1-9]\d* skipped as complete",
                                                      proc.stderr()))
            wait_group_gone(proc)
            # Ray's workers live in sessions of their own: they end once their raylet
            # is gone; a rerun must not find their temp files' pids alive
            if left := proc.survivors(timeout=60):
                fig.mismatches.append(f"still running after the kill: {left}")
            fig.kills += 1
        if case.spec.is_complete(case.cfg):
            fig.killed_after_completion += 1
            return True


def compare(clean: Path, out: Path, work_may_remain: bool = False) -> list[str]:
    """What differs between a clean run's output and a killed-and-resumed one's
    (``work_may_remain``: killed during its final cleanup, after its reports were
    complete, a run may leave its hidden work directory and lock file)."""
    problems = []
    a, b = comparable_files(clean), comparable_files(out)
    if a != b:
        differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        problems.append(f"data files differ: {differ[:10]}")
    ra, rb = reports(clean), reports(out)
    for found in (ra, rb):
        # the audit's config digest covers the mtimes of the files it scans (a changed
        # file is rescanned), and each run of a flow writes the files it audits anew
        if "audit/audit_report.json" in found and (clean / "flow_plan.json").is_file():
            found["audit/audit_report.json"].get("producer", {}).pop("config_hash", None)
    if ra != rb:
        differ = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
        problems.append(f"reports differ: {differ} {_first_diff(ra, rb)}")
    ia, ib = record_ids(clean), record_ids(out)
    if ia != ib:
        problems.append(f"records lost {sorted(ia - ib)[:5]} or duplicated "
                        f"{sorted(ib - ia)[:5]}")
    left = [p for p in leftovers(out)
            if not work_may_remain or (_TEMP.search(p) and "-work" not in p)]
    if left:
        problems.append(f"left behind: {left[:10]}")
    return problems


def _first_diff(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _first_diff(a.get(k), b.get(k), f"{path}.{k}")
        return ""
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_diff(x, y, f"{path}[{i}]")
    return f"at {path}: {str(a)[:200]!r} != {str(b)[:200]!r}"
