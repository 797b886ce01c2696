"""Security defaults, read from the source (issue 14; docs/reliability.md):

- nothing in ``curator/``, ``flows/`` or ``executors/`` can unpickle or execute what it
  reads: no ``pickle``/``marshal``/``shelve``/``dill``/``joblib`` loads, no ``np.load``
  without ``allow_pickle=False``, no ``yaml.load`` without a safe loader (nor
  ``yaml.unsafe_load``/``full_load``), no ``eval``/``exec``, no import of a module by a
  name or path that data could give. The one unpickling there is,
  the engine's own ``cloudpickle.loads`` of the stages its driver pickled for its workers
  (in memory on Ray; on the pool through a private temp file the driver wrote with
  ``mkstemp``, outside any data directory), is listed by name;
- every Prefect server the project's scripts and docs start is bound to 127.0.0.1.

The runtime checks (the servers' bound sockets, sentinel secrets, planted pickles and
modules) are in ``tests/chaos/test_security.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("curator", "flows", "executors")

#: (file, the call's source text): unpickling that reads no data directory (a worker
#: loads the stage chain its own driver pickled; never a file of a data directory)
ALLOWED = {
    ("curator/execution.py", "cloudpickle.loads(chain.blob)"),
    ("executors/ray.py", "cloudpickle.loads(chain.blob)"),
}
#: module.function calls that unpickle or run code, whatever their arguments
FORBIDDEN_CALLS = {
    ("pickle", "load"), ("pickle", "loads"), ("cPickle", "load"), ("cPickle", "loads"),
    ("cloudpickle", "load"), ("cloudpickle", "loads"), ("dill", "load"), ("dill", "loads"),
    ("marshal", "load"), ("marshal", "loads"), ("shelve", "open"), ("joblib", "load"),
    ("torch", "load"), ("pd", "read_pickle"), ("pandas", "read_pickle"),
    ("yaml", "unsafe_load"), ("yaml", "full_load"), ("yaml", "unsafe_load_all"),
    ("yaml", "full_load_all"), ("runpy", "run_path"), ("runpy", "run_module"),
    ("importlib", "import_module"), ("util", "spec_from_file_location"),
    ("importlib.util", "spec_from_file_location"),
}
FORBIDDEN_NAMES = {"eval", "exec", "compile", "__import__"}
SAFE_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}


def ours(path: Path) -> bool:
    """Not under a hidden folder inside a top-level one (a git-ignored virtualenv of a
    peer's tool, bench/peers/.venvs: third-party code, not the project's)."""
    return not any(part.startswith(".") for part in path.relative_to(REPO).parts[1:-1])


def sources() -> list[tuple[str, ast.Module, str]]:
    found = []
    for package in PACKAGES:
        for path in filter(ours, sorted((REPO / package).rglob("*.py"))):
            text = path.read_text(encoding="utf-8")
            found.append((str(path.relative_to(REPO)), ast.parse(text), text))
    return found


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return "?"


#: the last part of every name a forbidden call can have (a cheap first filter)
_SUSPECT = ({attr for _, attr in FORBIDDEN_CALLS} | FORBIDDEN_NAMES
            | {"load", "load_all"})


def unsafe_calls(rel: str, tree: ast.Module, text: str) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if attr not in _SUSPECT:
            continue
        owner = dotted(func.value) if isinstance(func, ast.Attribute) else ""
        call = ast.get_source_segment(text, node) or f"{owner}.{attr}"
        if (rel, call) in ALLOWED:
            continue
        where = f"{rel}:{node.lineno}: {call[:120]}"
        kwargs = {k.arg: k.value for k in node.keywords}
        forbidden = ((owner, attr) in FORBIDDEN_CALLS
                     or (owner.rsplit(".", 1)[-1], attr) in FORBIDDEN_CALLS
                     or (isinstance(func, ast.Name) and func.id in FORBIDDEN_NAMES))
        if forbidden:
            found.append(where)
        elif attr == "load" and owner in ("np", "numpy"):
            flag = kwargs.get("allow_pickle")
            if not (isinstance(flag, ast.Constant) and flag.value is False):
                found.append(where + " (np.load without allow_pickle=False)")
        elif attr in ("load", "load_all") and owner == "yaml":
            loader = kwargs.get("Loader") or (node.args[1] if len(node.args) > 1 else None)
            if loader is None or dotted(loader).rsplit(".", 1)[-1] not in SAFE_LOADERS:
                found.append(where + " (yaml.load without a safe loader)")
    return found


def test_nothing_read_is_unpickled_or_executed() -> None:
    found = [hit for rel, tree, text in sources() for hit in unsafe_calls(rel, tree, text)]
    assert found == [], "\n".join(found)


def test_the_scan_sees_what_it_forbids() -> None:
    """The checker itself: each forbidden form is found, each safe form is not."""
    bad = ("import pickle\npickle.loads(b)\nnp.load(p)\nnp.load(p, allow_pickle=True)\n"
           "yaml.load(t)\nyaml.load(t, Loader=yaml.Loader)\nyaml.unsafe_load(t)\neval(s)\n"
           "exec(s)\nimportlib.import_module(n)\ncloudpickle.loads(open(p, 'rb').read())\n")
    good = ("yaml.safe_load(t)\nyaml.load(t, Loader=yaml.SafeLoader)\n"
            "np.load(p, mmap_mode='r', allow_pickle=False)\nre.compile(x)\n")
    assert len(unsafe_calls("x.py", ast.parse(bad), bad)) == bad.count("\n") - 1
    assert unsafe_calls("x.py", ast.parse(good), good) == []
    for rel, call in ALLOWED:  # the allowed calls still exist (a stale allowance fails)
        assert call in (REPO / rel).read_text(encoding="utf-8"), (rel, call)


#: a shell command (scripts, docs) and a Python argv (tests, benchmarks)
SHELL_START = re.compile(r"prefect\"?[ \t]+server[ \t]+start\b", re.IGNORECASE)
ARGV_START = re.compile(r"[\"']prefect[\"'],\s*[\"']server[\"'],\s*[\"']start[\"']")
HOST = re.compile(r"--host[\"']?,?\s*[\"']?([\w.:]+)")
#: prose that names the command of a test whose argv this test checks itself
PROSE = ("tests/report/test_prefect_ui.py",)


def server_starts() -> list[tuple[str, str]]:
    """``(file:line, the command and what follows it)`` of every ``prefect server start``
    in the scripts, docs, tests and benchmarks."""
    found = []
    for root in ("deployments", "docs", "tests", "bench", "examples", "Makefile", ".ci",
                 "README.md"):
        base = REPO / root
        files = [base] if base.is_file() else sorted(
            p for p in base.rglob("*") if p.is_file() and ours(p) and p.suffix in (
                ".py", ".sh", ".md", ".yaml", ".yml", ""))
        for path in files:
            if path.name == Path(__file__).name:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            pattern = ARGV_START if path.suffix == ".py" else SHELL_START
            for m in pattern.finditer(text):
                end = text.find("\n", text.find("\n", m.end()) + 1)  # an argv may wrap once
                window = text[text.rfind("\n", 0, m.start()) + 1:end if end >= 0 else None]
                line = text.count("\n", 0, m.start()) + 1
                found.append((f"{path.relative_to(REPO)}:{line}", window))
    return found


def test_every_prefect_server_started_by_a_script_or_the_docs_binds_loopback() -> None:
    """``prefect server start`` (a shell line, a doc's command or a test's argv) always
    names ``--host 127.0.0.1``: Prefect's default host comes from the user's environment
    (``PREFECT_SERVER_API_HOST``), and a server on every interface would expose the API
    (flow runs, artifacts, the approval form) to the network."""
    starts = server_starts()
    for where, window in starts:
        if any(p in window for p in PROSE):
            continue
        host = HOST.search(window)
        assert host and host.group(1) == "127.0.0.1", f"{where}: {window!r}"
    places = {where.split(":")[0] for where, _ in starts}
    assert {"deployments/local.sh", "tests/report/test_prefect_ui.py"} <= places, places


def test_no_code_here_binds_a_server_beyond_loopback() -> None:
    """The Python servers the project starts are ``SubprocessASGIServer`` (which binds
    127.0.0.1: its socket is checked in ``tests/chaos/test_security.py``) or a
    ``prefect server start`` argv (above); no code passes another host (``host=`` a
    literal that is not loopback, or ``0.0.0.0`` / ``::`` anywhere)."""
    found = []
    for root in ("curator", "flows", "executors", "deployments", "bench", "tests",
                 "examples", "curator_testing", "curator_demo"):
        for path in filter(ours, sorted((REPO / root).rglob("*.py"))):
            if path.name in (Path(__file__).name, "test_security.py"):
                continue  # the checks name the hostile host themselves
            text = path.read_text(encoding="utf-8")
            rel = str(path.relative_to(REPO))
            if "0.0.0.0" in text or '"::"' in text:
                found.append(f"{rel}: names an unspecified (every-interface) address")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call):
                    for kw in node.keywords:
                        if (kw.arg in ("host", "bind", "listen_host")
                                and isinstance(kw.value, ast.Constant)
                                and kw.value.value not in (None, "127.0.0.1", "localhost", "::1")):
                            found.append(f"{rel}:{node.lineno}: {kw.arg}={kw.value.value!r}")
    assert found == [], "\n".join(found)
