"""Every error id the code raises is in the user guide's error table
(docs/user-guide.md, "Every error id, and what to do"): a user who sees
``error: [<id>]`` finds what to do. A new id without a row fails here."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: ``CuratorError("some_id", ...)`` (the id may be on the next line, or a keyword)
RAISED = re.compile(r"""CuratorError\(\s*(?:error_id\s*=\s*)?["']([a-z][a-z0-9_]*)["']""")
ROW_ID = re.compile(r"`([a-z][a-z0-9_]*)`")


def raised_ids() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in ("curator", "executors", "flows"):
        for path in sorted((REPO / package).rglob("*.py")):
            for m in RAISED.finditer(path.read_text(encoding="utf-8")):
                found.setdefault(m.group(1), []).append(str(path.relative_to(REPO)))
    return found


def table_ids() -> set[str]:
    text = (REPO / "docs" / "user-guide.md").read_text(encoding="utf-8")
    section = text.split("## 7. Every error id", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {eid for row in rows for eid in ROW_ID.findall(row.split("|")[1])}


def test_the_scan_finds_the_ids_it_should() -> None:
    ids = raised_ids()
    # a literal id, a keyword-less multi-line call, and one from each package
    for eid in ("partition_failed", "checkpoint_write_failed", "ray_cluster_mismatch",
                "output_root_missing"):
        assert eid in ids, eid
    assert len(ids) > 50


def test_every_raised_error_id_has_a_row_in_the_user_guide() -> None:
    missing = {eid: where for eid, where in raised_ids().items() if eid not in table_ids()}
    assert missing == {}, (
        "error ids raised in the code but absent from docs/user-guide.md section 7: "
        + ", ".join(f"{eid} ({', '.join(sorted(set(w)))})" for eid, w in sorted(missing.items())))
