"""Writing reports: canonical JSON, digests, timestamps, atomic writes."""

from __future__ import annotations

import hashlib
import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from curator.io.writers import write_atomic


def utc_now() -> str:
    """UTC RFC 3339, seconds."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN/inf are written as null
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def readable_number(value: Any, digits: int = 3) -> Any:
    """A number as a person reads it in a table: a float to ``digits`` significant
    digits (0.123456789 -> 0.123, 5.4321 -> 5.43), to the unit from 10**digits up
    (12345.678 -> 12346.0), NaN/inf as null; anything else (ints, bools, strings) as
    it is. For what is shown (Prefect table artifacts), never for what is written."""
    if not isinstance(value, float):
        return value
    if not math.isfinite(value):
        return None
    if value == 0:
        return 0.0
    magnitude = math.floor(math.log10(abs(value)))
    return round(value, max(digits - 1 - magnitude, 0))


def readable_table(rows: list[dict[str, Any]], digits: int = 3) -> list[dict[str, Any]]:
    """:func:`readable_number` over every cell of a table's rows."""
    return [{k: readable_number(v, digits) for k, v in row.items()} for row in rows]


def dump_json(data: dict[str, Any]) -> str:
    """The report form: indent 2, sorted keys, UTF-8 (not ASCII-escaped)."""
    return json.dumps(_clean(data), indent=2, sort_keys=True, ensure_ascii=False,
                      default=str) + "\n"


def write_json_atomic(path: str | os.PathLike[str], data: dict[str, Any]) -> Path:
    return write_atomic(path, dump_json(data))


def canonical_digest(data: Any) -> str:
    """``sha256:`` of the canonical JSON form (sorted keys, compact, UTF-8)."""
    text = json.dumps(_clean(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` of a local file's bytes."""
    with open(path, "rb") as f:
        return "sha256:" + hashlib.file_digest(f, "sha256").hexdigest()


def tool_revision() -> str:
    """What produced an artifact, first that works: ``CURATE_TOOL_REVISION``, the git
    commit of this source checkout (``git:<sha>[+dirty]``), the installed package
    version, or ``unknown``."""
    env = os.environ.get("CURATE_TOOL_REVISION")
    if env:
        return env
    import subprocess

    here = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
        if sha:
            return f"git:{sha}{'+dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from importlib.metadata import version

        return f"corpus-curator {version('corpus-curator')}"
    except Exception:
        return "unknown"
