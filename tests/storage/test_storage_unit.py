"""curator.io.storage without a server: what is a URL, where the local copy goes, and
that a local run never imports fsspec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from curator.io import storage


@pytest.mark.parametrize(("path", "remote"), [
    ("s3://b/k", True), ("gs://b/k/*.jsonl", True), ("memory://x", True),
    ("file:///tmp/x", False), ("/tmp/x", False), ("relative/x.jsonl", False),
    ("C:/x", False),
])
def test_is_remote(path: str, remote: bool) -> None:
    assert storage.is_remote(path) is remote
    assert storage.any_remote(["/tmp/a", path]) is remote


def test_the_local_copy_goes_beside_the_checkpoint_or_where_the_environment_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(storage.COPY_DIR_ENV, raising=False)
    beside = storage.local_copy_dir("s3://b/out/", str(tmp_path / "ckpt"), "ingest")
    assert beside.parent == tmp_path / "ckpt" and beside.name.startswith(".ingest-output-")
    assert beside == storage.local_copy_dir("s3://b/out", str(tmp_path / "ckpt"), "ingest")
    assert beside != storage.local_copy_dir("s3://b/other", str(tmp_path / "ckpt"), "ingest")
    monkeypatch.setenv(storage.COPY_DIR_ENV, str(tmp_path / "shared"))
    shared = storage.local_copy_dir("s3://b/out", str(tmp_path / "ckpt"), "ingest")
    assert shared.parent == tmp_path / "shared" and shared.name == beside.name


def test_a_url_without_its_package_is_an_error_id() -> None:
    from curator.errors import CuratorError

    with pytest.raises(CuratorError) as err:
        storage.glob("nosuchscheme://bucket/*.jsonl")
    assert err.value.error_id == "object_storage_unavailable"


def test_a_local_run_never_imports_fsspec(tmp_path: Path) -> None:
    """Local paths keep their own I/O: ingest and the filter end to end, fsspec unloaded."""
    code = f"""
import sys
from curator.steps.filter import FilterConfig, run_filter
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo import generate_demo_corpus
generate_demo_corpus({str(tmp_path / 'raw')!r}, docs=60, seed=3)
run_ingest(IngestConfig(input={str(tmp_path / 'raw')!r}, output_dir={str(tmp_path / 'i')!r},
                        on_duplicate="drop", execution={{"executor": "inline"}}))
run_filter(FilterConfig(input_glob={str(tmp_path / 'i' / 'part_*.jsonl')!r},
                        output_dir={str(tmp_path / 'f')!r}, language_codes=["EN", "DE", "FR",
                        "ES", "RU", "LA"], execution={{"executor": "inline"}}))
print(sorted(m for m in sys.modules if m.split(".")[0] in ("fsspec", "s3fs", "botocore")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_stores_own_errors_are_object_storage_error() -> None:
    """Around a read of objects, a store's exception (here a PermissionError, as s3fs
    raises for AccessDenied) is object_storage_error; a CuratorError passes unchanged;
    around local files nothing is mapped."""
    from curator.errors import CuratorError

    with pytest.raises(CuratorError) as err, storage.store_errors("reading x", True):
        raise PermissionError("Access Denied")
    assert err.value.error_id == "object_storage_error"
    assert "reading x" in err.value.message and "Access Denied" in err.value.message
    with pytest.raises(CuratorError) as kept, storage.store_errors("reading x", True):
        raise CuratorError("holdout_empty", "no documents")
    assert kept.value.error_id == "holdout_empty"
    with pytest.raises(PermissionError), storage.store_errors("reading x", False):
        raise PermissionError("local")
