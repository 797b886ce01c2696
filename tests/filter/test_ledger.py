"""``curation_ledger.json``'s accounting: records nowhere are ``unattributed``, an
over-count stays unbalanced and is refused by the loader, an exact count has no note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator.filter.ledger import KEYS, build_ledger, load_ledger

_UNPARSABLE = {"unit": "records:unparsable_line", "reason": "unparsable_line", "records": 1}


def _ledger(n_input: int, n_success: int, filtered: dict[str, int]) -> dict[str, Any]:
    return build_ledger(stage="curate/filter", source="in/*.jsonl", n_input=n_input,
                        n_success=n_success, filtered_by_reason=filtered,
                        failed_units=[dict(_UNPARSABLE)], quarantined_units=[],
                        mode="filter", completed=True)


def test_build_ledger_attributes_lost_records_to_unattributed(tmp_path: Path) -> None:
    """2 of 10 records are nowhere; the ledger says so and still balances."""
    ledger = _ledger(10, 5, {"word_count_bounds": 0, "language": 2})
    assert ledger == {
        "schema_version": 1, "stage": "curate/filter", "source": "in/*.jsonl",
        "n_input": 10, "n_success": 5, "n_filtered": 4, "n_failed": 1, "n_quarantined": 0,
        "n_accounted": 10, "balanced": True,
        "filtered_by_reason": {"language": 2, "unattributed": 2},
        "failed_units": [_UNPARSABLE], "quarantined_units": [],
        "notes": {"attribution": "per_gate", "completed": True, "mode": "filter",
                  "unreconciled": "2 input records are neither in the output nor attributed "
                                  "to a gate or a failed unit"},
    }
    assert list(ledger) == list(KEYS)
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(ledger))
    assert load_ledger(path) == ledger


def test_build_ledger_over_count_is_unbalanced_and_never_hidden(tmp_path: Path) -> None:
    """More accounted than input. No negative ``unattributed`` may balance it: the
    ledger stays unbalanced, and the loader refuses it."""
    ledger = _ledger(7, 5, {"language": 2})
    assert ledger == {
        "schema_version": 1, "stage": "curate/filter", "source": "in/*.jsonl",
        "n_input": 7, "n_success": 5, "n_filtered": 2, "n_failed": 1, "n_quarantined": 0,
        "n_accounted": 8, "balanced": False,
        "filtered_by_reason": {"language": 2},
        "failed_units": [_UNPARSABLE], "quarantined_units": [],
        "notes": {"attribution": "per_gate", "completed": True, "mode": "filter"},
    }
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(ledger))
    with pytest.raises(CuratorError) as exc:
        load_ledger(path)
    assert exc.value.error_id == "ledger_invalid"
    assert "n_input 7 != n_accounted 8" in str(exc.value)


def test_build_ledger_balanced_has_no_unattributed() -> None:
    """Exactly accounted: no ``unattributed`` (not even 0) and no note."""
    ledger = _ledger(8, 5, {"language": 2})
    assert ledger["filtered_by_reason"] == {"language": 2}
    assert ledger["n_accounted"] == 8 and ledger["balanced"] is True
    assert "unreconciled" not in ledger["notes"]
