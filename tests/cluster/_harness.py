"""A shared-nothing Ray cluster on one machine: worker nodes that cannot see the driver's
files, and a local S3 server that every node reaches (issue 26).

- A moto S3 server (``python -m moto.server``) on a free loopback port.
- A Ray head with ``num_cpus=0`` (no unit runs there), in the machine's own mount
  namespace; its Ray files under a short directory of its own (never ``/tmp/ray``).
- Worker nodes (``num_cpus=1`` each), each in a mount namespace of its own
  (``unshare --mount --propagation private``) with empty tmpfs mounts over ``/tmp``,
  ``/dev/shm`` and the home's ``.cache``, ``.prefect`` and ``.config``: a file the
  driver writes there is not on a worker's disk. The code, the venv and the interpreter
  (under ``/root/.pyenv``) stay visible. Their ``/tmp`` is mounted ``strictatime``, so a
  read of a file planted there shows in its access time.

Every node is a ``ray start ... --block`` process in a session of its own, ended by
killing its process group (and the descendants seen): never ``ray stop``, which ends
every Ray on the machine. Drivers (``python -m flows.entry <step> --config FILE``) run
in the machine's namespace or in a fresh one with an empty disk (:meth:`driver`).
Needs root; :func:`namespace_refusal` says why not where it is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from curator_testing.moto import CREDENTIALS, MotoServer, free_port, start_moto

REPO = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).parent / "ray")
HOME = Path.home()
#: what a driver may write to, hidden from every worker node (and from a fresh driver)
HIDDEN = ("/tmp", "/dev/shm", str(HOME / ".cache"), str(HOME / ".prefect"),
          str(HOME / ".config"))
OBJECT_STORE = 80_000_000  # bytes per node: the machine has 2 cores and many tenants
_NOT_A_UNIT = {"ray::IDLE", "ray::DashboardAgent", "ray::RuntimeEnvAgent"}
PLANTED_ATIME = 946_684_800.0  # 2000-01-01: what a planted file's access time is set to


def namespace_refusal() -> str | None:
    """Why a private mount namespace with a tmpfs cannot be made here, or None."""
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        return "unshare/nsenter (util-linux) not installed"
    try:
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "--",
             "sh", "-c", "mount -t tmpfs none /tmp && test -z \"$(ls -A /tmp)\""],
            capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    if done.returncode != 0:
        why = done.stderr.strip() or f"exit {done.returncode}"
        return f"a private mount namespace with a tmpfs needs root (CAP_SYS_ADMIN): {why}"
    return None


def hide_script(keep: Sequence[str] = (), strictatime: bool = False) -> str:
    """Shell lines that, in a fresh mount namespace, put an empty tmpfs over each of
    :data:`HIDDEN` and bind the paths ``keep`` (files or directories, opened before they
    are hidden) back at their own place. The command follows as ``"$@"``."""
    if len(keep) > 7:
        raise ValueError("at most 7 paths to keep (descriptors 3 to 9: sh has no more)")
    lines = ["set -e"]
    for i, path in enumerate(keep):
        lines.append(f"exec {3 + i}<{shlex.quote(path)}")
    for path in HIDDEN:
        opts = "-o mode=1777,strictatime" if strictatime and path == "/tmp" else "-o mode=1777"
        if path.startswith(str(HOME)):
            opts = "-o mode=0700"
            lines.append(f"mkdir -p {shlex.quote(path)}")  # a mount point must exist
        lines.append(f"mount -t tmpfs {opts} none {shlex.quote(path)}")
    for i, path in enumerate(keep):
        q = shlex.quote(path)
        if Path(path).is_dir():
            lines.append(f"mkdir -p {q}")
        else:
            lines.append(f"mkdir -p {shlex.quote(str(Path(path).parent))} && touch {q}")
        # -c: bind what the descriptor holds, not what its path now names (the tmpfs)
        lines.append(f"mount -c --bind /proc/self/fd/{3 + i} {q}")
        lines.append(f"exec {3 + i}<&-")
    lines.append('exec "$@"')
    return "\n".join(lines)


def code_paths() -> list[str]:
    """The checkout and the interpreter's environments where a hidden folder covers them
    (a checkout under /tmp, as CI's fresh clone with its venv): kept visible on every
    node, as the code of a real node is. The smallest set: none inside another."""
    kept: list[str] = []
    for path in sorted({os.path.realpath(p) for p in (REPO, sys.prefix, sys.base_prefix)}):
        hidden = any(path == h or path.startswith(h.rstrip("/") + "/") for h in HIDDEN)
        if hidden and not any(path == k or path.startswith(k + "/") for k in kept):
            kept.append(path)
    return kept


def in_fresh_namespace(argv: Sequence[str], keep: Sequence[str] = (),
                       strictatime: bool = False) -> list[str]:
    """``argv`` run in a private mount namespace with :data:`HIDDEN` empty (same pid);
    the code (:func:`code_paths`) and ``keep`` stay visible."""
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            hide_script([*code_paths(), *keep], strictatime), "sh", *argv]


@dataclass
class Node:
    """One ``ray start --block`` process, in a session (and perhaps a namespace) of its own."""

    name: str
    argv: list[str]
    log: Path
    env: dict[str, str]
    popen: subprocess.Popen[bytes] | None = None
    seen: dict[int, psutil.Process] = field(default_factory=dict)

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                          env=self.env, cwd=REPO, start_new_session=True)

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def record(self) -> None:
        """Remember every descendant (Ray puts some processes in sessions of their own)."""
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.pid).children(recursive=True):
                self.seen.setdefault(child.pid, child)

    def kill(self) -> None:
        """SIGKILL the node's process group and every descendant seen; reap."""
        if self.popen is None:
            return
        self.record()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        for proc in self.seen.values():
            with contextlib.suppress(psutil.Error):
                if proc.is_running():
                    proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)
        psutil.wait_procs(list(self.seen.values()), timeout=10)
        self.seen.clear()


class SharedNothingCluster:
    """The moto server, the head and ``workers`` namespaced worker nodes (see the module)."""

    def __init__(self, root: Path, workers: int = 2) -> None:
        self.root = root  # logs and the head's Ray files; a short path (AF_UNIX limit)
        self.logs = root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.head_temp = root / "r"
        self.head_temp.mkdir(exist_ok=True)
        self.n_workers = workers
        self.moto: MotoServer | None = None
        self.endpoint = ""
        self.port = 0
        self.head: Node | None = None
        self.workers: list[Node] = []
        self.started_in = 0.0  # seconds start() took
        self.timings: dict[str, float] = {}  # seconds of each part of start()

    # -- environment ------------------------------------------------------------------
    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def s3_env(self) -> dict[str, str]:
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint,
                "FSSPEC_S3_ENDPOINT_URL": self.endpoint}

    def node_env(self) -> dict[str, str]:
        """What every node (so every Ray worker) runs with: the S3 endpoint and fake
        credentials, the project on the path, no usage stats, no token auth."""
        # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (the tests' single-machine Ray) refuses a
        # second node: a multi-node cluster runs with Ray's default. No temp or scratch
        # directory of the test process's: each process's temp dir is its own /tmp
        env = {k: v for k, v in os.environ.items()
               if k not in ("RAY_ADDRESS", "PREFECT_API_URL", "RAY_TMPDIR",
                            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "CURATE_OUTPUT_COPY_DIR",
                            "CURATE_SCRATCH_DIR", "TMPDIR", "TEMP", "TMP")}
        path = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        env.update(self.s3_env, PYTHONPATH=path, RAY_USAGE_STATS_ENABLED="0",
                   RAY_AUTH_MODE="disabled", CURATE_PREFECT="never", PYTHONUNBUFFERED="1",
                   # a raylet registers within 60 s by default: not at a load of 15
                   RAY_raylet_start_wait_time_s="300")
        return env

    def driver_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**self.node_env(), "RAY_ADDRESS": self.address, **(extra or {})}

    # -- lifecycle --------------------------------------------------------------------
    def start(self, timeout: float = 420) -> SharedNothingCluster:
        t0 = time.monotonic()
        self._start_moto()
        self.timings["moto"] = time.monotonic() - t0
        self.port = free_port()
        head = [RAY, "start", "--head", f"--port={self.port}", "--num-cpus=0",
                f"--temp-dir={self.head_temp}", "--include-dashboard=false",
                f"--dashboard-port={free_port()}", f"--ray-client-server-port={free_port()}",
                *self._node_args()]
        self.head = Node("head", head, self.logs / "head.log", self.node_env())
        self.head.start()
        self._wait_for_head(timeout)
        self.timings["head"] = time.monotonic() - t0 - sum(self.timings.values())
        for i in range(self.n_workers):  # one after the other: less contention
            self.workers.append(self._worker(i))
            self._join(i, timeout)
            self.timings[f"worker{i}"] = time.monotonic() - t0 - sum(self.timings.values())
        self.started_in = time.monotonic() - t0
        return self

    def _node_args(self) -> list[str]:
        return ["--node-ip-address=127.0.0.1", f"--object-store-memory={OBJECT_STORE}",
                f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}",
                f"--dashboard-agent-listen-port={free_port()}",
                f"--dashboard-agent-grpc-port={free_port()}",
                f"--runtime-env-agent-port={free_port()}",
                f"--metrics-export-port={free_port()}", "--disable-usage-stats",
                "--log-style=record", "--block"]

    def _worker(self, i: int) -> Node:
        argv = [RAY, "start", f"--address={self.address}", "--num-cpus=1", *self._node_args()]
        return Node(f"worker{i}", in_fresh_namespace(argv, strictatime=True),
                    self.logs / f"worker{i}.log", self.node_env())

    def _start_moto(self) -> None:
        self.moto = start_moto(self.logs / "moto.log")
        self.endpoint = self.moto.endpoint

    def _gcs(self) -> Any:  # Ray's private GcsClient: no ray.init in this process
        from ray._raylet import GcsClient

        return GcsClient(address=self.address)

    def nodes(self) -> list[dict[str, object]]:
        """The cluster's alive nodes: ``{"id", "head", "cpus"}`` each."""
        from ray.core.generated.gcs_pb2 import GcsNodeInfo

        infos = self._gcs().get_all_node_info(
            timeout=10, state_filter=GcsNodeInfo.GcsNodeState.ALIVE).values()
        return [{"id": info.node_id.hex(), "head": info.is_head_node,
                 "cpus": dict(info.resources_total).get("CPU", 0.0)} for info in infos]

    def _wait_for_head(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.head is not None
            if not self.head.alive():
                raise RuntimeError(f"the head exited: {self.tail('head')}")
            with contextlib.suppress(Exception):  # the port first: no GCS client warnings
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                if any(n["head"] for n in self.nodes()):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the head did not come up: {self.tail('head')}")
            time.sleep(0.5)

    def _cpu_nodes(self) -> set[str]:
        with contextlib.suppress(Exception):
            return {str(n["id"]) for n in self.nodes() if n["cpus"]}
        return set()

    def _join(self, i: int, timeout: float, attempts: int = 3) -> None:
        """Start worker node ``i`` and wait until a new node with CPUs is alive. Ray
        gives a raylet 30 s to register (hard-coded); on a loaded machine it may take
        longer and the node exits: it is started again, up to ``attempts`` times."""
        known = self._cpu_nodes()
        for attempt in range(1, attempts + 1):
            node = self.workers[i]
            node.start()
            deadline = time.monotonic() + timeout
            while node.alive() and time.monotonic() < deadline:
                if self._cpu_nodes() - known:
                    return
                time.sleep(0.5)
            why = "exited" if not node.alive() else f"not joined within {timeout} s"
            node.kill()
            if attempt == attempts:
                raise RuntimeError(f"{node.name} {why} ({attempts} attempts): "
                                   f"{self.tail(node.name)}")
            self.workers[i] = self._worker(i)

    def tail(self, name: str, chars: int = 3000) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker node ``i`` (its ``ray start``, raylet and Ray workers)."""
        self.workers[i].kill()

    def heal(self, timeout: float = 180) -> None:
        """Start again every worker node that is gone; wait until each has joined."""
        for i, node in enumerate(self.workers):
            if not node.alive():
                node.kill()  # reap it, and end what is left of it
                self.workers[i] = self._worker(i)
                self._join(i, timeout)

    def close(self) -> None:
        nodes = [*self.workers, *([self.head] if self.head else [])]
        for node in nodes:  # every group first, then the waits
            node.record()
            if node.popen is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.pid, signal.SIGKILL)
        for node in nodes:
            node.kill()
        if self.moto is not None:
            self.moto.stop(grace=0)
        shutil.rmtree(self.root, ignore_errors=True)  # the logs and the head's Ray files

    # -- the bucket -----------------------------------------------------------------------
    def s3(self) -> Any:
        """A boto3 S3 client of the moto server (not through fsspec)."""
        assert self.moto is not None, "start() first"
        return self.moto.client()

    def new_bucket(self) -> str:
        name = f"c-{uuid.uuid4().hex[:12]}"
        self.s3().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str, prefix: str) -> dict[str, bytes]:
        """Every object under ``prefix/`` and its bytes, named relative to the prefix."""
        client, out = self.s3(), {}
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                     Prefix=prefix):
            for obj in page.get("Contents", []):
                out[obj["Key"][len(prefix):]] = client.get_object(
                    Bucket=bucket, Key=obj["Key"])["Body"].read()
        return out

    def upload(self, local: Path, bucket: str, prefix: str) -> None:
        """Every file under ``local`` to ``s3://bucket/prefix/...``."""
        client = self.s3()
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(local).as_posix()}",
                              Body=path.read_bytes())

    # -- inside a worker node's namespace ----------------------------------------------
    def in_worker(self, i: int, argv: Sequence[str], timeout: float = 60
                  ) -> subprocess.CompletedProcess[str]:
        """``argv`` run in worker node ``i``'s mount namespace (what its disk holds)."""
        ns = f"--mount=/proc/{self.workers[i].pid}/ns/mnt"
        return subprocess.run(["nsenter", ns, "--", *argv], capture_output=True, text=True,
                              timeout=timeout, check=True)

    def plant_in_worker(self, i: int, root: Path, files: dict[str, bytes]) -> None:
        """Write ``files`` (paths relative to ``root``) on worker ``i``'s own disk, then
        set the access time of ``root`` and of everything under it to
        :data:`PLANTED_ATIME`: its ``/tmp`` is ``strictatime``, so a later read of a
        file, or a listing of a directory, moves it."""
        self.in_worker(i, [sys.executable, "-c", _PLANT, str(root), json.dumps(
            {name: data.hex() for name, data in files.items()}), str(PLANTED_ATIME)])

    def planted_state(self, i: int, root: Path, names: Iterable[str]
                      ) -> dict[str, tuple[float, str | None] | None]:
        """``{path: (atime, hex bytes, or None for a directory), or None where it is
        gone}`` for ``root`` (``"."``), the files ``names`` under it and the directories
        between, on worker ``i``'s disk. Nothing is listed (a listing is a read), every
        access time is taken before a byte is read, and the bytes are read with
        ``O_NOATIME``: asking leaves the access times as they were."""
        out = self.in_worker(i, [sys.executable, "-c", _STATE, str(root),
                                 json.dumps(sorted(names))]).stdout
        return {k: (v[0], v[1]) if v is not None else None
                for k, v in json.loads(out).items()}

    def units_on(self, i: int) -> int:
        """Ray workers of worker node ``i`` busy with a task now: a Ray worker's title is
        ``ray::<task>`` while it runs one (a unit: ``ray::_ray_run``), ``ray::IDLE``
        otherwise; the node's agents are not workers."""
        n = 0
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.workers[i].pid).children(recursive=True):
                with contextlib.suppress(psutil.Error, IndexError):
                    title = child.cmdline()[0]
                    if title.startswith("ray::") and title not in _NOT_A_UNIT:
                        n += 1
        return n

    # -- drivers -----------------------------------------------------------------------
    def spawn(self, argv: Sequence[str], logs: Path, tag: str, *, fresh: bool = False,
              keep: Iterable[Path] = (), env: dict[str, str] | None = None
              ) -> subprocess.Popen[bytes]:
        """``argv`` as a driver of this cluster (``RAY_ADDRESS``, the S3 environment), in
        a session of its own (:func:`kill_group` kills it). ``fresh``: in a new mount
        namespace with :data:`HIDDEN` empty, a new driver with an empty disk; the head's
        Ray files (Ray connects a driver to the head's raylet: one host) and ``keep``
        (files or directories) are bound back at their own paths. stdout and stderr
        go to ``logs/<tag>.out`` and ``.err``."""
        logs.mkdir(parents=True, exist_ok=True)
        argv = list(argv)
        if fresh:
            argv = in_fresh_namespace(argv, keep=[str(self.head_temp), *map(str, keep)])
        with open(logs / f"{tag}.out", "wb") as out, open(logs / f"{tag}.err", "wb") as err:
            return subprocess.Popen(argv, stdout=out, stderr=err, cwd=REPO,
                                    env=self.driver_env(env), start_new_session=True)

    def driver(self, step: str, config: Path, logs: Path, tag: str, *, fresh: bool = False,
               keep: Iterable[Path] = (), env: dict[str, str] | None = None
               ) -> subprocess.Popen[bytes]:
        """``python -m flows.entry <step> --config FILE`` (the ``curate`` entry point)
        by :meth:`spawn`; a fresh namespace keeps ``config`` too."""
        argv = [sys.executable, "-m", "flows.entry", step, "--config", str(config)]
        return self.spawn(argv, logs, tag, fresh=fresh, keep=[config, *keep], env=env)

    def run_driver(self, step: str, config: Path, logs: Path, tag: str, *,
                   timeout: float = 300, fresh: bool = False, keep: Iterable[Path] = (),
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """:meth:`driver` to its end: the CompletedProcess with its stdout and stderr."""
        proc = self.driver(step, config, logs, tag, fresh=fresh, keep=keep, env=env)
        return finish(proc, logs, tag, timeout)


def finish(proc: subprocess.Popen[bytes], logs: Path, tag: str, timeout: float
           ) -> subprocess.CompletedProcess[str]:
    """Wait for a process :meth:`SharedNothingCluster.spawn` started (its group killed
    when it outlives ``timeout``); the CompletedProcess with its stdout and stderr."""
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise
    return subprocess.CompletedProcess(
        proc.args, code, (logs / f"{tag}.out").read_text(errors="replace"),
        (logs / f"{tag}.err").read_text(errors="replace"))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process started in a session of its own, with its group; reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def short_root(prefix: str = "sn") -> Path:
    """A short directory under /tmp for the cluster's logs and the head's Ray files."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


_PLANT = """
import json, os, sys
root, files, atime = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
for name, data in files.items():
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes.fromhex(data))
for d, dirs, names in os.walk(root):
    for p in [d, *(os.path.join(d, n) for n in names)]:
        os.utime(p, (atime, os.stat(p).st_mtime))
"""

_STATE = """
import json, os, sys
root, names = sys.argv[1], json.loads(sys.argv[2])
paths = {"."}
for name in names:
    parts = name.split("/")
    paths |= {"/".join(parts[:k]) for k in range(1, len(parts) + 1)}
times = {}
for rel in sorted(paths):
    try:
        times[rel] = os.stat(os.path.join(root, rel)).st_atime
    except FileNotFoundError:
        times[rel] = None
out = {}
for rel in sorted(paths):
    p = os.path.join(root, rel)
    if times[rel] is None:
        out[rel] = None
    else:
        data = None
        if not os.path.isdir(p):  # O_NOATIME: this read must not move the access time
            fd = os.open(p, os.O_RDONLY | os.O_NOATIME)
            with os.fdopen(fd, "rb") as f:
                data = f.read().hex()
        out[rel] = [times[rel], data]
print(json.dumps(out))
"""
