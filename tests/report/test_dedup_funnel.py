"""report.html's funnel has dedup's row when a dedup report is under the output root: the
documents in and out of ``dedup_report.json`` and the near-duplicates removed as its loss
(the spec's ``funnel`` reader), balanced; the page shows the row."""

from __future__ import annotations

import json
import random
from pathlib import Path

from curator.report.collect import collect
from curator.report.page import build_html
from tests.dedup._support import change, dedup, text, write


def test_the_funnel_has_dedups_row(tmp_path: Path) -> None:
    rng = random.Random(8)
    base = text(rng)
    docs = [{"id": f"u{i}", "text": text(rng), "source": "s0"} for i in range(8)]
    docs += [{"id": "base", "text": base, "source": "s0"},
             {"id": "copy", "text": base, "source": "s1"},
             {"id": "near", "text": change(base, [30]), "source": "s2"}]
    inp = write(tmp_path / "in", {"a.jsonl": docs})
    root = tmp_path / "root"
    dedup(inp, root / "deduplicated")
    report = json.loads((root / "deduplicated" / "dedup_report.json").read_text())
    assert (report["documents_in"], report["documents_out"], report["removed"]) == (11, 9, 2)

    rows = [r for r in collect(root).funnel if r.key == "dedup"]
    assert len(rows) == 1
    row = rows[0]
    assert (row.documents_in, row.documents_out) == (11, 9)
    assert [(x.reason, x.documents) for x in row.losses] == [("near-duplicate", 2)]
    assert row.balanced
    page = build_html(root)
    assert "dedup (near-duplicates removed)" in page
    assert "near-duplicate" in page
