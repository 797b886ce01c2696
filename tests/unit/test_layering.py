"""The layering rule: curator/ is the domain and imports neither prefect nor ray; the
registered steps share code only through the kernel and the engine."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[2]


def test_import_linter_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), lint_imports
    proc = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "broken" not in proc.stdout.lower().replace("0 broken", "")


def test_importing_every_curator_module_loads_neither_prefect_nor_ray() -> None:
    script = """
import importlib, json, pkgutil, sys
import curator
names = sorted(m.name for m in pkgutil.walk_packages(curator.__path__, "curator."))
for name in names:
    importlib.import_module(name)
heavy = sorted(m for m in sys.modules
               if m.split(".")[0] in ("prefect", "prefect_ray", "ray", "executors", "flows"))
print(json.dumps({"modules": names, "heavy": heavy}))
"""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["heavy"] == []
    for expected in ("curator.adapter", "curator.checkpoint", "curator.completion",
                     "curator.pipeline", "curator.execution", "curator.io.writers"):
        assert expected in report["modules"]


def independence_breaches(graph: grimp.ImportGraph, keys: Iterable[str],
                          root: str = "curator") -> list[str]:
    """The import chains between two steps: from one step module (``<root>.steps.<key>``)
    to another, from one step package (``<root>.<key>``, with everything under it) to
    another's, or from the kernel (``<root>.corpus``) to a step. import-linter's
    independence and forbidden semantics (any chain, direct or through other modules,
    function-level imports included), derived from the registry so that a new step is
    covered without naming it in pyproject.toml. A package's ``__init__`` is not an
    edge of its modules' imports (grimp records ``curator.steps.audit ->
    curator.steps.spec``, not ``-> curator.steps``), so ``curator/steps/__init__.py``
    importing the registry does not make every step module import every other."""
    keys = list(keys)
    pairs: list[tuple[str, str, bool]] = []
    for a, b in itertools.permutations(keys, 2):
        pairs += [(f"{root}.steps.{a}", f"{root}.steps.{b}", False),
                  (f"{root}.{a}", f"{root}.{b}", True)]
    for key in keys:
        pairs += [(f"{root}.corpus", f"{root}.{key}", True),
                  (f"{root}.corpus", f"{root}.steps.{key}", True)]
    found = []
    for importer, imported, as_packages in pairs:
        if importer not in graph.modules or imported not in graph.modules:
            continue  # a step without a package of its own
        chain = graph.find_shortest_chain(importer, imported, as_packages=as_packages)
        if chain:
            found.append(f"{importer} -> {imported}: {' -> '.join(chain)}")
    return found


def test_no_registered_step_imports_another() -> None:
    from curator.steps.registry import STEPS

    graph = grimp.build_graph("curator", cache_dir=None)
    keys = [spec.key for spec in STEPS]
    assert {f"curator.steps.{k}" for k in keys} <= graph.modules  # each is checked
    assert independence_breaches(graph, keys) == []


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize(("plant", "breach"), [
    pytest.param({"probe/steps/b.py": "from probe.steps import spec\nimport probe.steps.a\n"},
                 "probe.steps.b -> probe.steps.a", id="step-module-direct"),
    pytest.param({"probe/a/work.py": "def f():\n    from probe.kernel_extra import g\n",
                  "probe/kernel_extra.py": "from probe.b.stage import x\n"},
                 "probe.a -> probe.b: probe.a.work -> probe.kernel_extra -> probe.b.stage",
                 id="step-package-indirect-in-a-function"),
    pytest.param({"probe/corpus/read.py": "import probe.steps.b\n"},
                 "probe.corpus -> probe.steps.b", id="kernel-imports-a-step"),
])
def test_independence_breaches_finds_a_planted_import(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: dict[str, str],
        breach: str) -> None:
    # a tree shaped like curator/: steps/__init__ imports a registry that imports every
    # step module, and each step module imports steps.spec (which the check must not
    # take for an import of every step through the package's __init__)
    base = {
        "probe/__init__.py": "", "probe/corpus/__init__.py": "", "probe/corpus/read.py": "",
        "probe/steps/__init__.py": "from probe.steps import registry\n",
        "probe/steps/registry.py": "import probe.steps.a\nimport probe.steps.b\n",
        "probe/steps/spec.py": "import probe.corpus.read\n",
        "probe/steps/a.py": "from probe.steps import spec\nimport probe.a.work\n",
        "probe/steps/b.py": "from probe.steps import spec\nimport probe.b.stage\n",
        "probe/a/__init__.py": "", "probe/a/work.py": "import probe.corpus.read\n",
        "probe/b/__init__.py": "", "probe/b/stage.py": "x = 1\n",
    }
    _package(tmp_path, base)
    monkeypatch.syspath_prepend(str(tmp_path))
    clean = grimp.build_graph("probe", cache_dir=None)
    assert independence_breaches(clean, ["a", "b"], root="probe") == []

    _package(tmp_path, plant)
    found = independence_breaches(grimp.build_graph("probe", cache_dir=None), ["a", "b"],
                                  root="probe")
    assert any(line.startswith(breach) for line in found), found
