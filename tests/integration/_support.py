"""Helpers for the integration tests: real subprocesses, real signals, real LMDB files.

Every subprocess is started in its own session (``start_new_session=True``), its
descendants are recorded while it runs (Ray puts its workers in sessions of their
own), and :meth:`Proc.close` kills the group and every recorded descendant, so no
test leaves a process behind, whatever happens in it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest

from curator.checkpoint import METADATA_DIRNAME, read_checkpoint_file
from curator.tasks import FileGroupTask

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "resume_demo.py"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
FILES = 12  # input files (= source partitions) of the demo runs
DOCS_PER_FILE = 50  # what examples/resume_demo.make_input writes per file

_COUNTS = re.compile(r"(\d+) pending, (\d+) skipped as complete")
_COMPLETE = re.compile(r"partition (\S+) complete \(")


def ray_env(ray_tmp: Path) -> dict[str, str]:
    """Environment for a subprocess that starts or joins a Ray on this machine.

    ``RAY_TMPDIR``: Ray's files under a short, per-test directory. Ray 2.60 rewrites a
    loopback address (``ray.init(_node_ip_address="127.0.0.1")``, or joining
    ``127.0.0.1:port``) to the machine's routable IP, so a head started that way
    listens on every interface, and a driver cannot join a head bound to loopback.
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` makes Ray treat 127.0.0.1 as this node's
    address: every Ray process of the test binds to loopback only.
    """
    return {"RAY_TMPDIR": str(ray_tmp), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def short_tmp(prefix: str = "rt") -> Path:
    """A short directory under /tmp (Ray's AF_UNIX socket paths are limited to 107 bytes)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


class Proc:
    """A subprocess in its own session, with stdout/stderr in files, always cleaned up."""

    def __init__(
        self,
        argv: Sequence[str],
        log_dir: Path,
        tag: str,
        env: dict[str, str] | None = None,
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.argv = list(argv)
        self.stdout_path = log_dir / f"{tag}.out"
        self.stderr_path = log_dir / f"{tag}.err"
        self._env = {**os.environ, **(env or {})}
        self.popen: subprocess.Popen[bytes] | None = None
        self._seen: dict[int, psutil.Process] = {}
        self._recorded_at = 0.0

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> Proc:
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.popen = subprocess.Popen(
                self.argv, stdout=out, stderr=err, env=self._env, start_new_session=True
            )
        return self

    def __enter__(self) -> Proc:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def record_descendants(self, force: bool = True) -> None:
        now = time.monotonic()
        if not force and now - self._recorded_at < 0.5:
            return  # walking /proc costs CPU that the run under test needs
        self._recorded_at = now
        try:
            for child in psutil.Process(self.pid).children(recursive=True):
                self._seen.setdefault(child.pid, child)
        except psutil.Error:
            pass

    def close(self) -> None:
        """Kill the process group and every descendant seen; reap the child."""
        if self.popen is None:
            return
        self.record_descendants()
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - should not happen
            self.popen.kill()
            self.popen.wait(timeout=10)
        for proc in self._seen.values():
            try:
                if proc.is_running():  # is_running() also checks the pid was not reused
                    proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(list(self._seen.values()), timeout=10)

    def survivors(self, timeout: float) -> list[str]:
        """Descendants seen so far still running after ``timeout`` seconds (zombies are gone)."""

        def running() -> list[str]:
            out = []
            for proc in self._seen.values():
                with contextlib.suppress(psutil.Error):
                    if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                        out.append(f"{proc.pid} {proc.name()}")
            return out

        deadline = time.monotonic() + timeout
        while (alive := running()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return alive

    # -- interaction ------------------------------------------------------------------
    def poll(self) -> int | None:
        assert self.popen is not None
        return self.popen.poll()

    def send(self, sig: int, group: bool = False) -> None:
        self.record_descendants()
        if group:
            os.killpg(self.pid, sig)
        else:
            os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        assert self.popen is not None
        deadline = time.monotonic() + timeout
        while self.popen.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.argv} did not exit within {timeout}s\n{self.stderr()[-3000:]}"
                )
            self.record_descendants(force=False)
            time.sleep(0.05)
        return self.popen.returncode

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


class DemoRun(Proc):
    """``examples/resume_demo.py`` in ``workdir`` as a subprocess."""

    def __init__(
        self,
        workdir: Path,
        *,
        executor: str,
        delay: float,
        tag: str,
        files: int = FILES,
        workers: int = 2,
        ray_tmp: Path | None = None,
        ray_address: str | None = None,
    ) -> None:
        """``executor="ray"`` starts its own Ray under ``ray_tmp``, or joins ``ray_address``."""
        argv = [
            sys.executable, str(DEMO), "--workdir", str(workdir), "--executor", executor,
            "--workers", str(workers), "--delay", str(delay), "--files", str(files),
        ]
        env: dict[str, str] = {}
        if executor == "ray":
            assert (ray_tmp is None) != (ray_address is None), "one of ray_tmp, ray_address"
            env = ray_env(ray_tmp) if ray_tmp is not None else {"RAY_ADDRESS": str(ray_address)}
        super().__init__(argv, workdir.parent / "logs", tag, env)
        self.workdir = workdir

    def completed_lines(self) -> list[str]:
        """Source ids this run reported complete (recorded in the checkpoint)."""
        return _COMPLETE.findall(self.stderr())

    def wait_completed(self, n: int, timeout: float, check=None) -> list[str]:
        """Poll until this run has reported ``n`` partitions complete; fail if it exits first.

        ``check(output_dir)`` is called on every poll (e.g. to validate visible outputs).
        """
        deadline = time.monotonic() + timeout
        while True:
            done = self.completed_lines()
            if len(done) >= n:
                return done
            if self.poll() is not None:
                raise AssertionError(
                    f"the run exited ({self.poll()}) before {n} partitions completed\n"
                    + self.stderr()[-3000:]
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"fewer than {n} partitions completed in {timeout}s")
            if check is not None:
                check(self.workdir / "output")
            self.record_descendants(force=False)
            time.sleep(0.05)


def run_demo(
    workdir: Path,
    *,
    executor: str,
    tag: str,
    delay: float = 0.0,
    ray_tmp: Path | None = None,
    ray_address: str | None = None,
    timeout: float = 90,
) -> tuple[int, str]:
    """Run the demo to the end; return its exit code and stderr."""
    with DemoRun(
        workdir, executor=executor, delay=delay, tag=tag, ray_tmp=ray_tmp, ray_address=ray_address
    ) as run:
        code = run.wait(timeout)
        return code, run.stderr()


#: How a test names a backend: the process pool, a Ray the demo starts for itself
#: (killed with the demo's process group), or the session's Ray joined by address.
BACKENDS = ("local", "ray", "ray-shared")


def backend_kwargs(backend: str, ray_tmp: Path, request: pytest.FixtureRequest) -> dict:
    """``DemoRun``/``run_demo`` keyword arguments for a backend name (see BACKENDS)."""
    if backend == "local":
        return {"executor": "local"}
    if backend == "ray":
        return {"executor": "ray", "ray_tmp": ray_tmp}
    if backend == "ray-shared":
        return {"executor": "ray", "ray_address": request.getfixturevalue("ray_address")}
    raise ValueError(backend)


def pending_skipped(log: str) -> tuple[int, int]:
    """``(pending, skipped)`` from the pipeline's planning line."""
    found = _COUNTS.findall(log)
    assert len(found) == 1, f"expected one planning line in the log, found {found}\n{log}"
    return int(found[0][0]), int(found[0][1])


def output_name(source_id: str) -> str:
    return f"{source_id}.jsonl"


def source_ids(workdir: Path) -> dict[str, str]:
    """Input file name -> source id, as the demo's source stage derives it."""
    inputs = sorted((workdir.resolve() / "input").glob("*.jsonl"))
    return {p.name: FileGroupTask(data=[str(p)]).get_deterministic_id() for p in inputs}


def outputs_by_input(workdir: Path) -> dict[str, bytes]:
    """Output bytes keyed by the input file they came from; fails on any unexpected file.

    Source ids (and so output names) hash the absolute input paths, which differ
    between work directories; keying by input file name makes two work directories
    comparable byte for byte.
    """
    by_name = {output_name(sid): name for name, sid in source_ids(workdir).items()}
    out = workdir / "output"
    files = sorted(os.listdir(out))
    unexpected = [f for f in files if f not in by_name]
    assert not unexpected, f"unexpected files in {out}: {unexpected}"
    return {by_name[f]: (out / f).read_bytes() for f in files}


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """File name -> (inode, mtime_ns): a rewrite (temp file + rename) changes both."""
    result = {}
    for entry in os.scandir(folder):
        st = entry.stat()
        result[entry.name] = (st.st_ino, st.st_mtime_ns)
    return result


def checkpoint_dir(workdir: Path) -> Path:
    return workdir / "checkpoints" / "resume-demo" / METADATA_DIRNAME


def writer_files(metadata_dir: Path) -> list[Path]:
    return sorted(metadata_dir.glob("*.mdb"))


def completed_sources(metadata_dir: Path) -> set[str]:
    """The union of completed source ids over every writer file (all must be readable)."""
    done: set[str] = set()
    for path in writer_files(metadata_dir):
        done |= read_checkpoint_file(path)[0]
    return done


def check_visible_outputs(folder: Path, rows: int = DOCS_PER_FILE) -> list[str]:
    """Every ``*.jsonl`` visible under ``folder`` is whole: it parses and has every row.

    Anything else must be a hidden temp file (leading dot, not named ``*.jsonl``).
    Returns the visible output names.
    """
    if not folder.is_dir():
        return []
    names = []
    for name in os.listdir(folder):
        if name.startswith("."):
            assert not name.endswith(".jsonl"), f"a temp file is named like an output: {name}"
            continue
        assert name.endswith(".jsonl"), f"unexpected file in {folder}: {name}"
        try:
            text = (folder / name).read_text()
        except FileNotFoundError:  # replaced between listdir and open: atomic, fine
            continue
        lines = text.splitlines()
        assert len(lines) == rows, f"{name} has {len(lines)} rows, expected {rows}"
        for line in lines:
            json.loads(line)
        names.append(name)
    return names


def rmtree_quiet(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def make_inputs(folder: Path, files: int, docs_per_file: int = DOCS_PER_FILE) -> list[Path]:
    """Small deterministic JSONL inputs, one source partition each."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(files):
        path = folder / f"part-{f:03d}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for d in range(docs_per_file):
                text = f"Document {d} of file {f}. " * (1 + (f * 7 + d) % 5)
                out.write(json.dumps({"id": f"{f}-{d}", "text": text.strip()}) + "\n")
        paths.append(path)
    return paths


def script(name: str) -> str:
    return str(SCRIPTS / name)
