"""Labelled sets: JSON lines ``{id, text, label, phenomenon}``, read and validated whole.

Every line of every file is checked before anything is scored, and every problem is
collected: the refusal names the first problem's error id and lists the first few
problems (``file:line: ...``), so one run shows what to fix. Extra keys are allowed
and ignored (the demo's sample carries its ``kind``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.artifacts import file_digest
from curator.errors import CuratorError

LABELS = ("keep", "drop")
PHENOMENA = ("clean", "nfd", "local_digits", "ocr_noise", "code_mixing", "langid_error")
REQUIRED = ("id", "text", "label", "phenomenon")
#: problems listed in a refusal's message (all of them are in ``details["problems"]``)
SHOWN = 10


@dataclass(frozen=True)
class LabelledDoc:
    id: str | int
    text: str
    label: str  # keep | drop
    phenomenon: str
    file: str
    line: int


@dataclass(frozen=True)
class LabelledFile:
    path: str
    sha256: str
    records: int
    keep: int
    drop: int

    def describe(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "records": self.records,
                "keep": self.keep, "drop": self.drop}


def _line_problems(obj: Any) -> list[tuple[str, str]]:
    """(error id, message) for every unmet rule of one parsed line."""
    if not isinstance(obj, dict):
        return [("labelled_line_unparsable",
                 f"not a JSON object but {type(obj).__name__}")]
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        return [("labelled_field_missing", f"missing {', '.join(missing)}")]
    out: list[tuple[str, str]] = []
    doc_id = obj["id"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or doc_id == "":
        out.append(("labelled_field_invalid",
                    f"id must be a non-empty string or an integer, not {doc_id!r}"))
    text = obj["text"]
    if not isinstance(text, str) or not text.strip():
        out.append(("labelled_field_invalid",
                    "text must be a non-empty string (an empty text never reaches a gate)"))
    if obj["label"] not in LABELS:
        out.append(("unknown_label", f"label {obj['label']!r} is not keep or drop"))
    if obj["phenomenon"] not in PHENOMENA:
        out.append(("unknown_phenomenon", f"phenomenon {obj['phenomenon']!r} is not one of "
                                          f"{', '.join(PHENOMENA)}"))
    return out


def read_labelled(paths: Sequence[str | os.PathLike[str]]
                  ) -> tuple[list[LabelledDoc], list[LabelledFile]]:
    """Every document of every file, and each file's digest and counts; refuse a set
    with any problem (ids below, all exit 2).

    - ``labelled_set_empty``: no file given, or a file with no record (blank lines only);
    - ``labelled_file_unreadable``: missing, a directory, unreadable, or not UTF-8;
    - ``labelled_line_unparsable``: a line that is not a JSON object;
    - ``labelled_field_missing``: ``id``, ``text``, ``label`` or ``phenomenon`` absent;
    - ``labelled_field_invalid``: an id that is not a non-empty string or an integer, a
      text that is not a non-empty string;
    - ``unknown_label`` / ``unknown_phenomenon``: a value outside the closed lists;
    - ``duplicate_labelled_id``: an id seen before, in this file or an earlier one
      (ids compare by their JSON form: ``1`` and ``"1"`` differ).
    """
    if not paths:
        raise CuratorError("labelled_set_empty", "no labelled file given (--labelled FILE)")
    docs: list[LabelledDoc] = []
    files: list[LabelledFile] = []
    problems: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for raw_path in paths:
        path = str(raw_path)
        try:
            data = Path(path).read_bytes()
            text = data.decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CuratorError("labelled_file_unreadable",
                               f"cannot read labelled file {path}: {exc}", path=path) from exc
        counts = {"keep": 0, "drop": 0}
        records = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            records += 1
            where = f"{path}:{number}"
            try:
                obj = json.loads(line)
            except ValueError as exc:
                problems.append(("labelled_line_unparsable", f"{where}: not JSON ({exc})"))
                continue
            found = _line_problems(obj)
            if not found:
                key = json.dumps(obj["id"])
                if key in seen:
                    found = [("duplicate_labelled_id",
                              f"id {obj['id']!r} already at {seen[key]}")]
                else:
                    seen[key] = where
            if found:
                problems += [(eid, f"{where}: {msg}") for eid, msg in found]
                continue
            counts[obj["label"]] += 1
            docs.append(LabelledDoc(obj["id"], obj["text"], obj["label"], obj["phenomenon"],
                                    path, number))
        if records == 0:
            problems.append(("labelled_set_empty", f"{path}: no labelled record"))
        files.append(LabelledFile(path, file_digest(path), records, counts["keep"],
                                  counts["drop"]))
    if problems:
        shown = "; ".join(msg for _, msg in problems[:SHOWN])
        more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        raise CuratorError(problems[0][0],
                           f"the labelled set has {len(problems)} problem(s): {shown}{more}",
                           problems=[msg for _, msg in problems])
    return docs, files
