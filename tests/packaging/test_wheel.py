"""The wheel is what a cluster node installs: it must carry everything a step loads.

The wheel is built from a copy of the packages (nothing is written into the checkout)
and installed into a fresh venv outside the repository. Installing every dependency
from the registry takes minutes (docs/cluster.md, "Installing on every node"), so the
venv takes them from the test interpreter's site-packages through a plain path line in
a ``.pth`` file: a path line adds the directory only, so the checkout's editable-install
hook (``__editable__*.pth``) in that directory is never run, and ``curator`` is
imported from the wheel -- which the tests below check rather than assume.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from curator.langpack import content_hash_of
from curator_testing import hermetic_env

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("curator", "curator_demo", "curator_testing", "executors", "flows")
IMPORTED = ("curator", "curator.langpack", "curator.report", "flows", "executors")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel`` of a copy of the packages, pyproject.toml and README.md."""
    src = tmp_path_factory.mktemp("src")
    for name in PACKAGES:
        shutil.copytree(REPO / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist),
                    str(src)], check=True, capture_output=True, timeout=300)
    (found,) = dist.glob("corpus_curator-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv outside the repository with the wheel installed (no dependencies:
    those come from the test interpreter's site-packages by a path line)."""
    root = tmp_path_factory.mktemp("venv") / "node"
    assert not root.resolve().is_relative_to(REPO)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    python = root / "bin" / "python"
    # without the session's PYTHONPATH (the checkout, whose corpus_curator.egg-info pip
    # would take for an installed copy and skip the install: seen in a fresh clone)
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", "--ignore-installed", str(wheel)], check=True,
                   capture_output=True, timeout=300, env=clean)
    purelib = Path(_run([str(python), "-c", "import sysconfig; "
                         "print(sysconfig.get_paths()['purelib'])"], root, clean).stdout.strip())
    assert (purelib / "curator" / "__init__.py").is_file(), "the wheel was not installed"
    deps = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (purelib / "_deps_from_the_test_venv.pth").write_text("".join(f"{p}\n" for p in deps))
    return root


def _env(venv: Path) -> dict[str, str]:
    """The node's environment: no PYTHONPATH (the test session points it at the
    checkout), its own Prefect home, no Prefect server (the step runs directly)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PREFECT_API_URL")
           and not k.startswith("COVERAGE_")}
    env.update(hermetic_env(venv.parent / "home"))
    env.update(CURATE_PREFECT="never", VIRTUAL_ENV=str(venv),
               PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_the_wheel_carries_every_pack_file_and_template(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = [p for d in ("curator/langpacks", "curator/report/templates")
               for p in (REPO / d).rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert len(shipped) >= 20
    missing = [str(p.relative_to(REPO)) for p in shipped
               if p.relative_to(REPO).as_posix() not in names]
    assert not missing


def test_an_installed_wheel_imports_from_the_venv_and_finds_its_packs(
        venv: Path, tmp_path: Path) -> None:
    code = ("import json, sys, importlib; "
            f"mods = {{m: importlib.import_module(m).__file__ for m in {IMPORTED!r}}}; "
            "from curator.langpack import PACKAGED_LANGPACK_DIR as d; "
            "print(json.dumps({'mods': mods, 'packs': str(d), 'path': sys.path, "
            "'editable': [m for m in sys.modules if 'editable' in m]}))")
    seen = json.loads(_run([str(venv / "bin" / "python"), "-c", code], tmp_path,
                           _env(venv)).stdout)
    site = venv.resolve()
    for module, path in seen["mods"].items():
        assert Path(path).resolve().is_relative_to(site), (module, path)
    assert Path(seen["packs"]).resolve().is_relative_to(site)
    assert not seen["editable"]  # the checkout's editable finder never ran
    assert not [p for p in seen["path"] if p and Path(p).resolve() in (REPO, REPO / "curator")]


def test_a_step_run_from_the_wheel_uses_the_packaged_packs(venv: Path, tmp_path: Path) -> None:
    """``curate profile`` with no ``langpack_dir``, run outside the checkout: the report
    names the pack installed in the venv (its content hash and its note)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = ("The council met on Tuesday to discuss the new library, which will open in "
            "the spring after two years of building work.")
    (corpus / "part_0.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": f"{text} Item {i}.", "source": "s"}) + "\n"
        for i in range(40)))
    _run([str(venv / "bin" / "curate"), "profile", "--set", f"input_glob={corpus}",
          "--set", "output_dir=out", "--set", "language=en", "--set", "id_field=id",
          "--set", "execution.executor=local", "--set", "execution.workers=1"],
         tmp_path, _env(venv))
    report = json.loads((tmp_path / "out" / "profile_report.json").read_text())
    (installed,) = venv.glob("lib/python*/site-packages/curator/langpacks/en")
    assert report["langpack"]["content_hash"] == content_hash_of(installed)
    assert report["langpack"]["version"] == "1.0.1"
    assert "installed with the package" in report["langpack"]["notes"]["example"]
    assert report["corpus"]["document_count"] == 40
