"""The layering rule: curator/ is the domain and imports neither prefect nor ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
