"""Where ``curate evaluate --report`` may write: never over an input, never a directory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from curator.errors import CuratorError
from curator.langpack.loader import resolve_langpack_dir


def _same(a: Path, b: Path) -> bool:
    """One file under two names (a symlink or a hard link too), or one resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare the resolved names
        return a.resolve() == b.resolve()


def check_report_path(
    report: str | os.PathLike[str],
    *,
    policy: str | os.PathLike[str],
    labelled: Sequence[str | os.PathLike[str]],
    langpack_dir: str | os.PathLike[str] | None = None,
) -> None:
    """Refuse a report path that would destroy an input or cannot be a file (exit 2).

    - ``report_is_a_directory``: the path is an existing directory or ends with ``/``;
    - ``report_overwrites_input``: the path is the policy, a labelled file, or a file
      under the language pack directory (the same file under any name).
    """
    text = os.fspath(report)
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        raise CuratorError("report_is_a_directory",
                           f"--report {text} is a directory: name a file "
                           "(e.g. evaluation.json)", path=text)
    inputs = [("--policy", Path(policy))] + [("--labelled", Path(p)) for p in labelled]
    for option, source in inputs:
        if _same(path, source):
            raise CuratorError("report_overwrites_input",
                               f"--report {text} is the {option} input {source}: writing the "
                               "report would destroy it; write it elsewhere", path=text)
    if langpack_dir is None or str(langpack_dir).strip():  # unset: the packaged packs
        pack_root = resolve_langpack_dir(langpack_dir).resolve()
        if path.resolve().is_relative_to(pack_root):
            raise CuratorError("report_overwrites_input",
                               f"--report {text} is inside the language packs {pack_root}: "
                               "write it elsewhere", path=text)
