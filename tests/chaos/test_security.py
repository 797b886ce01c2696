"""Security defaults, checked at run time (issue 14; docs/reliability.md):

- **loopback only**: the Prefect API server the tests start (``SubprocessASGIServer``,
  as ``tests/conftest.py``, the benchmarks and Prefect's temporary server start it) and
  the temporary server a ``curate`` command starts under ``CURATE_PREFECT=always`` with
  no server configured listen on 127.0.0.1 only: the sockets actually bound are read
  from the kernel (psutil), even with ``PREFECT_SERVER_API_HOST=0.0.0.0`` in the
  environment;
- **no secret leaks**: with sentinel values in the environment (cloud and Prefect keys,
  a token, a ``CURATE_*`` variable that is no config key), no file under the output and
  checkpoint directories and neither stdout nor stderr contains any of them: a step
  on the process pool, a refused step, a flow;
- **nothing from a data directory is unpickled or executed**: files that would run code
  if unpickled, loaded as NumPy object arrays, imported (``__init__.py``,
  ``sitecustomize.py``, ``conftest.py``) or loaded as unsafe YAML are planted in the
  input, checkpoint and output directories (and the working directory is the input
  directory); after every registered step the marker they would create does not exist.

The static side (no unsafe load in the code, every ``prefect server start`` given
``--host 127.0.0.1``) is ``tests/unit/test_security_static.py``.

``make test`` runs: the checks' own checks, one pool run of the first registered step
started in its planted input directory with the sentinels in its environment (files,
logs, marker), a refused run, the session's Prefect server's socket, and the planted
directories for the first step in this process. ``make chaos`` (``CURATE_CHAOS_FULL=1``)
adds every other step, the flow, a fresh server and the temporary server under a hostile
``PREFECT_SERVER_API_HOST``.
"""

from __future__ import annotations

import ipaddress
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import yaml

from curator.config import validate_config
from curator.steps.registry import BY_KEY, STEPS
from curator_testing.environment import hermetic_env
from tests.chaos._harness import CURATE, Case
from tests.integration._support import Proc, ray_env

pytestmark = pytest.mark.timeout(600)
FULL = os.environ.get("CURATE_CHAOS_FULL") == "1"
full_only = pytest.mark.skipif(not FULL, reason="runs in make chaos (CURATE_CHAOS_FULL=1)")

SENTINELS = {
    "AWS_SECRET_ACCESS_KEY": "sentinel-aws-secret-7f3a9c",
    "AWS_ACCESS_KEY_ID": "SENTINELAKIA7F3A9C",
    "AWS_SESSION_TOKEN": "sentinel-aws-session-7f3a9c",
    "PREFECT_API_KEY": "sentinel-prefect-key-7f3a9c",
    "HF_TOKEN": "sentinel-hf-token-7f3a9c",
    "GITHUB_TOKEN": "sentinel-gh-token-7f3a9c",
    "CURATE_SECRET_SENTINEL": "sentinel-curate-7f3a9c",
    "DATABASE_PASSWORD": "sentinel-db-password-7f3a9c",
}


def leaks(*roots: Path, texts: tuple[str, ...] = ()) -> list[str]:
    """Where a sentinel value appears: a file under ``roots`` (any depth, hidden files
    and LMDB databases included) or one of ``texts``."""
    needles = [v.encode() for v in SENTINELS.values()]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")) if root.exists() else []:
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found += [f"{path}: {n.decode()}" for n in needles if n in data]
    for i, text in enumerate(texts):
        found += [f"text {i}: {n.decode()}" for n in needles if n.decode() in text]
    return found


def test_leaks_sees_a_sentinel(tmp_path: Path) -> None:
    """The check itself: a sentinel in a nested hidden file, and in a text, is found."""
    (tmp_path / ".work" / "deep").mkdir(parents=True)
    (tmp_path / ".work" / "deep" / "x.bin").write_bytes(
        b"\x00" + SENTINELS["PREFECT_API_KEY"].encode() + b"\xff")
    assert len(leaks(tmp_path, texts=("a " + SENTINELS["HF_TOKEN"],))) == 2


# -- no secret in artifacts, reports or logs ----------------------------------------------

@full_only
def test_no_environment_value_reaches_a_flows_outputs_or_logs(tmp_path: Path) -> None:
    """``curate flow`` (ingest and profile, inline): the flow's plan, report, HTML
    report and every step's artifacts."""
    world = Case(BY_KEY["profile"], "inline", tmp_path / "w").world
    root = tmp_path / "root"
    from tests.steps._worlds import KEYS

    profile = {k: v for k, v in KEYS["profile"][0].items()
               if k in ("max_total_docs", "signals", "partition_size")}
    cfg = {"corpus": {"input": str(world.raw), "source_field": "source", "language": "en",
                      "langpack_dir": KEYS["profile"][0]["langpack_dir"]},
           "output_root": str(root),
           "steps": {"ingest": {"enabled": True, "on_duplicate": "drop"},
                     "profile": {"enabled": True, **profile},
                     **{k: {"enabled": False} for k in
                        ("filter", "audit", "decontamination", "subset")}},
           "execution": {"executor": "inline", "checkpoint_path": str(tmp_path / "ckpt")}}
    path = tmp_path / "flow.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    with Proc([CURATE, "flow", "--config", str(path)], tmp_path / "logs", "flow",
              env={"CURATE_PREFECT": "never", **SENTINELS}) as proc:
        assert proc.wait(300) == 0, proc.stderr()[-3000:]
        texts = (proc.stderr(), proc.stdout_path.read_text(errors="replace"))
    assert (root / "flow_report.json").is_file()
    assert leaks(root, tmp_path / "ckpt", texts=texts) == []


# -- loopback only ------------------------------------------------------------------------

def listening(pids: set[int]) -> list[tuple[str, int]]:
    """``(ip, port)`` of every TCP socket in LISTEN held by one of ``pids``."""
    found = []
    for conn in psutil.net_connections(kind="inet"):
        if conn.status == psutil.CONN_LISTEN and conn.pid in pids and conn.laddr:
            found.append((conn.laddr.ip, conn.laddr.port))
    return found


def tree(pid: int) -> set[int]:
    try:
        root = psutil.Process(pid)
        return {pid, *(c.pid for c in root.children(recursive=True))}
    except psutil.Error:
        return set()


def assert_loopback(bound: list[tuple[str, int]]) -> None:
    assert bound, "no listening socket seen"
    for ip, port in bound:
        assert ipaddress.ip_address(ip).is_loopback, f"listening on {ip}:{port}"


def test_the_sessions_prefect_server_listens_on_loopback_only(prefect_api: str) -> None:
    """The one the tests use (``tests/conftest.py``: ``SubprocessASGIServer``): the
    socket bound on its port, whichever process holds it."""
    assert prefect_api.startswith("http://127.0.0.1:"), prefect_api
    port = int(prefect_api.split(":")[2].split("/")[0])
    bound = [(c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="inet")
             if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port]
    assert_loopback(bound)


@full_only
def test_the_test_and_benchmark_server_listens_on_loopback_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``SubprocessASGIServer`` as ``tests/conftest.py`` and the benchmarks start it,
    with a hostile ``PREFECT_SERVER_API_HOST`` in the environment."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import PREFECT_SERVER_API_HOST, temporary_settings

    with temporary_settings({PREFECT_SERVER_API_HOST: "0.0.0.0"}):
        server = SubprocessASGIServer()
        server.start(timeout=120)
        try:
            assert server.api_url.startswith("http://127.0.0.1:"), server.api_url
            pid = server.server_process.pid
            bound = [b for b in listening(tree(pid)) if b[1] == server.port]
            assert_loopback(bound)
        finally:
            server.stop()


@full_only
def test_the_temporary_server_of_a_curate_command_listens_on_loopback_only(
        tmp_path: Path) -> None:
    """``CURATE_PREFECT=always``, no server configured: Prefect starts a temporary
    server for the command. Even with ``PREFECT_SERVER_API_HOST=0.0.0.0`` in the
    environment (set for a user's own server), it binds 127.0.0.1; the run's files and
    logs hold none of the environment's secrets either."""
    spec = STEPS[0]
    case = Case(spec, "inline", tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(hermetic_env(tmp_path / "home"))
    env.update({"CURATE_PREFECT": "always", "PREFECT_SERVER_API_HOST": "0.0.0.0",
                **SENTINELS})
    env.pop("PREFECT_API_URL", None)
    proc = Proc([CURATE, spec.command_name, "--config", str(case.config_path)], case.logs,
                "always", env=env)
    proc._env = env  # exactly this environment: no inherited PREFECT_API_URL
    bound: set[tuple[str, int]] = set()
    with proc:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            bound.update(listening(tree(proc.pid)))
            time.sleep(0.2)
        code = proc.wait(10)
        texts = (proc.stderr(), proc.stdout_path.read_text(errors="replace"))
    assert code == 0, texts[0][-3000:]
    assert_loopback(sorted(bound))
    assert leaks(case.out, texts=texts) == []


# -- nothing from a data directory is unpickled or executed -------------------------------

class _Planted:
    """Unpickled, it creates the marker file (``open(marker, "w")``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


#: modules a pool worker imports as it starts (before it takes its parent's sys.path):
#: a worker whose sys.path began with its working directory would import these
SHADOWS = ("multiprocessing.py", "curator.py", "executors.py", "numpy.py", "polars.py",
           "orjson.py", "pyarrow.py", "lmdb.py", "cloudpickle.py", "psutil.py")


def plant(folder: Path, marker: Path, shadows: bool = False) -> None:
    """Files that create ``marker`` if unpickled, imported or unsafely YAML-loaded."""
    folder.mkdir(parents=True, exist_ok=True)
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("__init__.py", "sitecustomize.py", "usercustomize.py", "conftest.py",
                 "setup.py", *(SHADOWS if shadows else ())):
        (folder / name).write_text(code, encoding="utf-8")
    payload = pickle.dumps(_Planted(marker))
    for name in ("state.pkl", "checkpoint.pickle", "index.joblib", "model.pt"):
        (folder / name).write_bytes(payload)
    np.save(folder / "index.npy", np.array([_Planted(marker)], dtype=object),
            allow_pickle=True)
    unsafe = f"x: !!python/object/apply:builtins.open [{str(marker)!r}, w]\n"
    for name in ("config.yaml", "approved_policy.yaml", "flow.yml"):
        (folder / name).write_text(unsafe, encoding="utf-8")


def test_planted_payloads_would_run(tmp_path: Path) -> None:
    """The payloads are live: loaded unsafely, each creates the marker."""
    marker = tmp_path / "marker"
    plant(tmp_path / "p", marker, shadows=True)
    for load in (lambda: pickle.loads((tmp_path / "p" / "state.pkl").read_bytes()),
                 lambda: np.load(tmp_path / "p" / "index.npy", allow_pickle=True),
                 lambda: yaml.unsafe_load((tmp_path / "p" / "config.yaml").read_text()),
                 lambda: exec(compile((tmp_path / "p" / "sitecustomize.py").read_text(),
                                      "s", "exec"))):
        marker.unlink(missing_ok=True)
        load()
        assert marker.exists()


def data_dirs(spec, folder: Path) -> tuple[Any, Path, Path, Path]:  # type: ignore[no-untyped-def]
    """``(world, input directory, output, checkpoint)`` of a step's world."""
    world = Case(spec, "inline", folder / "case").world
    out, ckpt = folder / "out", folder / "ckpt"
    inputs = Path(world.config(out)[spec.input_key])
    return world, (inputs if inputs.is_dir() else inputs.parent), out, ckpt


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.key, marks=() if i == 0 else full_only)
                                  for i, s in enumerate(STEPS)])
def test_nothing_planted_in_a_data_directory_is_unpickled_or_run(
        spec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Every registered step, inline in this process, its working directory the input
    directory (the test runner's own ``''`` entry of ``sys.path`` removed: a ``curate``
    command has none)."""
    world, inputs, out, ckpt = data_dirs(spec, tmp_path)
    marker = tmp_path / "marker"
    for folder in (inputs, out, ckpt, ckpt / spec.key):
        plant(folder, marker)
    monkeypatch.chdir(inputs)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    cfg = world.config(out, ckpt)
    spec.run(validate_config(spec.config, cfg))
    assert not marker.exists(), f"{spec.key}: ran {marker.read_text()}"
    assert spec.is_complete(cfg)


@pytest.mark.parametrize("executor", ["local", pytest.param("ray", marks=full_only)])
def test_a_pool_run_in_a_planted_data_directory_runs_nothing_and_leaks_no_secret(
        executor: str, tmp_path: Path) -> None:
    """``curate <first step>`` on the process pool (and on Ray, in ``make chaos``),
    started in its input directory,
    which holds the planted files and modules named as those a spawned worker imports as
    it starts (as do the output and checkpoint directories), with the sentinels in its
    environment: the marker is never created, and no file of the output or checkpoint
    and no line of its stdout or stderr holds a sentinel. Then a refused run (an input
    that does not exist): its error names the config, never the environment."""
    spec = STEPS[0]
    case = Case(spec, executor, tmp_path)
    inputs = Path(case.cfg[spec.input_key])
    inputs = inputs if inputs.is_dir() else inputs.parent
    marker = tmp_path / "marker"
    for folder in (inputs, case.out, case.ckpt):
        plant(folder, marker, shadows=True)
    in_inputs = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(inputs), CURATE,
                 spec.command_name, "--config", str(case.config_path)]
    env = {"CURATE_PREFECT": "never", **SENTINELS, **(
        ray_env(case.ray_tmp) if case.ray_tmp is not None else {})}
    with Proc(in_inputs, case.logs, "pool-in-data-dir", env=env) as proc:
        code = proc.wait(300)
        texts = [proc.stderr(), proc.stdout_path.read_text(errors="replace")]
    assert not marker.exists(), f"ran: {marker.read_text()}\n{texts[0][-2000:]}"
    assert code == 0, texts[0][-3000:]
    assert spec.is_complete(case.cfg)
    with Proc([*in_inputs, "--set", f"{spec.input_key}={tmp_path / 'nowhere'}"], case.logs,
              "refused", env=env) as proc:
        assert proc.wait(120) == 2, proc.stderr()[-3000:]
        texts += [proc.stderr(), proc.stdout_path.read_text(errors="replace")]
    case.close()
    assert leaks(case.out, case.ckpt, texts=tuple(texts)) == []
    assert not marker.exists()
