"""``curate flow`` with ``output_root`` on object storage (``s3://``, any fsspec URL).

The root's URL is the truth; nothing the flow needs later lives only on this disk:

- each step's ``output_dir`` is ``<root URL>/<output_subdir>``: the step publishes there
  as a single step does (:mod:`curator.io.shared`), and its done-marker
  (:data:`curator.flow.plan.MARKER`) is an object beside its outputs;
- the checkpoint (``<root URL>/checkpoints``) is LMDB on this disk, mirrored to the URL
  (:mod:`curator.checkpoint_mirror`);
- the flow's own files (``flow_plan.json``, ``flow_report.json``, ``report.html``,
  ``policy/approved_policy.yaml``) are written to the root's *local copy*
  (:func:`root_copy`) while the flow's :class:`~curator.io.shared.SharedArea` is active,
  so each goes up to the URL as it is written. The approved policy is a local file
  because the filter and the audit read a local policy; a driver that starts on an
  empty disk fetches it (:func:`pull`) before anything reads it.

Step outputs are never downloaded to the root copy: the done-checks read the
completion artifacts and markers from the URL, and list the inputs there.

Paths in what the flow writes (``flow_plan.json``, ``flow_report.json``) and in what
decides whether a step is done (its config hash) name the URL, never the local copy
(:func:`rebase`): a driver with another scratch directory finds the same steps done.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from curator.checkpoint_mirror import resolve_checkpoint
from curator.io import storage
from curator.io.shared import SharedArea

#: the local copy's key (``.flow-output-<digest>``, beside the steps' own copies)
COPY_KEY = "flow"


def root_copy(url: str, checkpoint_path: str | None) -> Path:
    """The local copy of a URL root: where a step's copy of its URL output goes
    (:func:`curator.io.storage.local_copy_dir`): under ``$CURATE_OUTPUT_COPY_DIR``, else
    beside the flow's checkpoint on this disk (a URL checkpoint's directory under
    ``$CURATE_SCRATCH_DIR``). The same URL gives the same directory on a node."""
    local_ckpt, _ = resolve_checkpoint(checkpoint_path)
    return storage.local_copy_dir(url, str(local_ckpt) if local_ckpt else None, COPY_KEY)


def pull(area: SharedArea, path: Path) -> Path:
    """Make the root copy's ``path`` the URL's object: fetched when it is there
    (replacing what this disk holds: another driver may have written it since),
    removed from this disk when it is not. ``object_storage_error`` for the store's
    own errors."""
    url = area.url_of(path)
    if url is None:
        return path
    with storage.store_errors(f"curate flow: cannot fetch {url}", True, url=url):
        if not storage.isfile(url):
            path.unlink(missing_ok=True)
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.pull-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            storage.get_file(url, tmp)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return path


def rebase(value: Any, local: str, url: str) -> Any:
    """``value`` with every string that is ``local`` or a path under it named under
    ``url`` instead, recursively (dict keys too)."""
    if isinstance(value, str):
        if value == local:
            return url
        if value.startswith(local + "/"):
            return storage.join(url, value[len(local) + 1:])
        return value
    if isinstance(value, dict):
        return {rebase(k, local, url): rebase(v, local, url) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rebase(v, local, url) for v in value]
    return value


def read_bytes(url: str) -> bytes | None:
    """An object's bytes, ``None`` when there is none (``object_storage_error`` for the
    store's own errors)."""
    with storage.store_errors(f"curate flow: cannot read {url}", True, url=url):
        try:
            return storage.read(url)
        except FileNotFoundError:
            return None


def write_bytes(url: str, data: bytes) -> None:
    with storage.store_errors(f"curate flow: cannot write {url}", True, url=url):
        storage.write_bytes(url, data)


def remove(url: str) -> None:
    with storage.store_errors(f"curate flow: cannot remove {url}", True, url=url):
        storage.remove(url)


__all__ = ["COPY_KEY", "pull", "read_bytes", "rebase", "remove", "root_copy", "write_bytes"]
