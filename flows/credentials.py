"""Object-storage credentials for a flow run from a Prefect ``Secret`` block.

``curate-flow`` takes ``storage_credentials``: the *name* of a Secret block whose value
is a mapping of environment variables (``{"AWS_ACCESS_KEY_ID": ..., "AWS_SECRET_ACCESS_KEY":
...}``). The flow reads it first, before it touches storage, and sets those variables in
its own process for the run: fsspec and botocore read them from there as they read a
worker's environment (docs/storage.md), and the process pool's workers, spawned by the
run, inherit them. Restored when the run ends.

Only the block's name is a parameter, so only the name appears in the flow run, its
logs and the plan; the values are never logged, and an error names the variable, never
its value. Only variables that configure object storage are taken (:data:`ALLOWED`):
a block cannot change anything else about the run.

What it does not do: reach the nodes of a Ray cluster. A Ray worker on another machine
runs in that machine's environment, which the flow run does not set: give those nodes
their credentials themselves (docs/cluster.md).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from curator.errors import CuratorError

#: the variables a block may set: fsspec's and the object stores' own
ALLOWED = re.compile(r"^(AWS_[A-Z0-9_]+|FSSPEC_[A-Z0-9_]+|GOOGLE_APPLICATION_CREDENTIALS|"
                     r"GOOGLE_CLOUD_PROJECT|AZURE_STORAGE_[A-Z0-9_]+)$")


def block_variables(name: str) -> dict[str, str]:
    """The environment variables of the Secret block ``name`` (``config_error`` when it
    does not exist, or does not hold a mapping of allowed variables to strings)."""
    from prefect.blocks.system import Secret

    try:
        value: Any = Secret.load(name).get()
    except ValueError as exc:  # Prefect's "Unable to find block document named ..."
        raise CuratorError("config_error", f"storage_credentials: no Secret block named "
                           f"{name!r} ({type(exc).__name__})") from None
    if not isinstance(value, Mapping):
        raise CuratorError("config_error", f"storage_credentials: the Secret block {name!r} "
                           "must hold a JSON mapping of environment variables "
                           '({"AWS_ACCESS_KEY_ID": "...", ...}), not a single value')
    bad = sorted(str(k) for k in value if not isinstance(k, str) or not ALLOWED.match(k))
    if bad:
        raise CuratorError("config_error", f"storage_credentials: the Secret block {name!r} "
                           f"sets {bad}: only object-storage variables (AWS_*, FSSPEC_*, "
                           "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_CLOUD_PROJECT, "
                           "AZURE_STORAGE_*) are taken")
    wrong = sorted(k for k, v in value.items() if not isinstance(v, str))
    if wrong:
        raise CuratorError("config_error", f"storage_credentials: in the Secret block "
                           f"{name!r}, {wrong} must be strings")
    return dict(value)


@contextlib.contextmanager
def storage_environment(name: str | None) -> Iterator[None]:
    """The block ``name``'s variables in this process's environment for the block's
    duration (nothing when ``name`` is empty); the previous values afterwards."""
    if not name:
        yield
        return
    values = block_variables(name)
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


__all__ = ["ALLOWED", "block_variables", "storage_environment"]
