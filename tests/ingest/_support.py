"""Helpers for the ``curate ingest`` tests: real files, an independent id recipe,
readers for shards, rejections and reports, and a subprocess that is always reaped."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from curator.errors import CuratorError
from curator.steps.ingest import IngestConfig, run_ingest

CURATE = str(Path(sys.executable).parent / "curate")

#: Report fields that legitimately differ between two runs of the same input.
TIMING = ("run_id", "started_at", "completed_at", "seconds", "output_dir", "producer")
#: ... and between an uninterrupted run and an interrupted + resumed one.
RESUME = ("was_resumed", "documents_skipped_resumed", "partitions.skipped_resumed")


def recipe_id(rec: dict[str, Any], fields: Sequence[str] = ("url", "text"),
              prefix: str = "") -> str:
    """The documented id recipe, written out independently of the code under test."""
    payload = json.dumps([rec.get(f) for f in fields], ensure_ascii=False, sort_keys=True,
                         separators=(",", ":"), default=str)
    return prefix + hashlib.sha256(payload.encode("utf-8")).hexdigest()


def jline(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def write_lines(path: Path, lines: Iterable[str], encoding: str = "utf-8",
                newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(line + newline for line in lines).encode(encoding))
    return path


def write_records(path: Path, records: Iterable[dict[str, Any]]) -> Path:
    return write_lines(path, (jline(r) for r in records))


def ingest(inp: Any, out: Path, **keys: Any) -> dict[str, Any]:
    """run_ingest in this process (inline executor unless one is given)."""
    executor = keys.pop("executor", None)
    cfg = IngestConfig(input=inp, output_dir=str(out), **keys)
    return run_ingest(cfg, executor)


def ingest_error(inp: Any, out: Path, **keys: Any) -> CuratorError:
    try:
        ingest(inp, out, **keys)
    except CuratorError as exc:
        return exc
    raise AssertionError("ingest succeeded but an error was expected")


def shard_names(out: Path) -> list[str]:
    names = [p.name for p in out.glob("part_*.jsonl")]
    return sorted(names, key=lambda n: int(n[len("part_"):-len(".jsonl")]))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSONL file (split on "\\n" only: U+2028 and friends are not line ends)."""
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), f"{path} does not end with a newline"
    return [json.loads(line) for line in text.split("\n")[:-1]]


def shard_records(out: Path) -> list[dict[str, Any]]:
    """Every output record, shard after shard, in order."""
    return [rec for name in shard_names(out) for rec in read_jsonl(out / name)]


def rejections(out: Path) -> list[dict[str, Any]]:
    """Every rejection line under ``out/rejected``, in input order (path, line)."""
    rows = [r for p in sorted((out / "rejected").glob("*.jsonl")) for r in read_jsonl(p)]
    return sorted(rows, key=lambda r: (r["path"], r["line"] if r["line"] is not None
                                       else r.get("row", -1)))


def read_report(out: Path) -> dict[str, Any]:
    return json.loads((out / "ingest_report.json").read_text(encoding="utf-8"))


def tree(root: Path) -> dict[str, bytes]:
    """relative path -> bytes of every file under ``root`` (hidden ones included)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*")) if p.is_file() or p.is_symlink()
    }


def artifacts(out: Path) -> dict[str, bytes]:
    """Shards and rejection files (everything but the report)."""
    return {k: v for k, v in tree(out).items() if k != "ingest_report.json"}


def without(report: dict[str, Any], dotted: Iterable[str]) -> dict[str, Any]:
    """A deep copy of ``report`` without the given (dotted) keys."""
    copy = json.loads(json.dumps(report))
    for key in dotted:
        node = copy
        *parents, last = key.split(".")
        for part in parents:
            node = node.get(part, {})
        node.pop(last, None)
    return copy


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


class Cli:
    """``curate <command> --config FILE`` in its own session; the whole group is killed on
    exit."""

    def __init__(self, config: Path, log_dir: Path, tag: str, *sets: str,
                 command: str = "ingest") -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.cwd = log_dir.parent  # a relative output_dir lands in the test's directory
        self.argv = [CURATE, command, "--config", str(config)]
        for s in sets:
            self.argv += ["--set", s]
        self.out_path = log_dir / f"{tag}.out"
        self.err_path = log_dir / f"{tag}.err"
        self.popen: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Cli:
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=err,
                                          env=dict(os.environ), cwd=self.cwd,
                                          start_new_session=True)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.popen is not None
        if self.popen.poll() is None:
            self.kill_group()
        self.popen.wait(timeout=30)

    def kill_group(self) -> None:
        assert self.popen is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def poll(self) -> int | None:
        assert self.popen is not None
        return self.popen.poll()

    def kill_when(self, ready: Callable[[], bool], what: str, timeout: float = 180) -> None:
        """SIGKILL the whole group as soon as ``ready()`` holds (polled every 5 ms); the
        run must not end before. Waits until every process of the group is gone."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.poll() is not None:
                raise AssertionError(f"the run ended ({self.poll()}) before {what}\n"
                                     + self.stderr()[-3000:])
            assert time.monotonic() < deadline, f"no {what} within {timeout}s"
            time.sleep(0.005)
        self.kill_group()
        assert self.wait(30) == -signal.SIGKILL
        self.wait_group_gone(60)

    def wait_group_gone(self, timeout: float) -> None:
        """Wait until every process of the killed group is gone and reaped: a worker
        killed inside a system call dies after the CLI, and while it lingers its pid is
        alive, so a rerun started at once leaves its temp files alone."""
        assert self.popen is not None
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.killpg(self.popen.pid, 0)
            except ProcessLookupError:
                return
            assert time.monotonic() < deadline, "the killed process group is still alive"
            time.sleep(0.05)

    def wait(self, timeout: float) -> int:
        assert self.popen is not None
        deadline = time.monotonic() + timeout
        while self.popen.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.argv} ran over {timeout}s\n{self.stderr()[-3000:]}")
            time.sleep(0.02)
        return self.popen.returncode

    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")


def run_cli(config: Path, log_dir: Path, tag: str, *sets: str,
            timeout: float = 120) -> tuple[int, str, str]:
    with Cli(config, log_dir, tag, *sets) as cli:
        code = cli.wait(timeout)
        return code, cli.stdout(), cli.stderr()
