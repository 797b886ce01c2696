"""What the Prefect UI shows of a step's report: its table artifacts read well (floats to
3 significant digits, units in the headers) and the subset's picture is in its markdown
report. Built with the same functions ``flows.steps.publish`` uses, from real step runs
(inline, the contract tests' small worlds); no Prefect server."""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path
from typing import Any

import pytest

from curator.artifacts import readable_number, readable_table
from curator.steps.registry import BY_KEY
from tests.steps._worlds import make_world


def _significant_digits(x: float) -> int:
    digits = f"{abs(x):.15g}".replace(".", "").lstrip("0").split("e")[0]
    return len(digits.rstrip("0")) or 1


def test_readable_number_keeps_three_significant_digits() -> None:
    assert readable_number(0.123456789) == 0.123
    assert readable_number(5.4321) == 5.43
    assert readable_number(-3.14159) == -3.14
    assert readable_number(0.00012345) == 0.000123
    assert readable_number(12345.678) == 12346.0  # to the unit, not 12300
    assert readable_number(float("nan")) is None
    for kept in (7, True, "0.123456789", None, 0.5):
        assert readable_number(kept) == kept
    assert readable_table([{"a": 0.987654, "b": 3}]) == [{"a": 0.988, "b": 3}]


def _run(key: str, tmp: Path) -> tuple[Any, dict[str, Any]]:
    spec = BY_KEY[key]
    world = make_world(key, spec.input_key, tmp)
    cfg = spec.config(**world.config(tmp / key))
    return spec, spec.run(cfg)


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tables")


def test_the_profile_signals_table_shows_rounded_floats_and_units(world_dir: Path) -> None:
    from flows.steps import published_tables

    spec, report = _run("profile", world_dir)
    raw = spec.rendered(report).tables["signals"]
    # the report itself keeps every digit (what the old table showed)
    assert any(isinstance(v, float) and _significant_digits(v) > 3
               for row in raw for v in row.values())
    shown = published_tables(spec, spec.rendered(report).tables)["profile-signals"]
    floats = [v for row in shown for v in row.values() if isinstance(v, float)]
    assert floats and all(_significant_digits(v) <= 3 or abs(v) >= 1000 for v in floats)
    for before, after in zip(raw, shown, strict=True):
        for col in ("p10", "p50", "p90"):
            if isinstance(before[col], float):
                assert math.isclose(after[col], before[col], rel_tol=5e-3, abs_tol=1e-9)
    by_signal = {r["signal"]: r for r in shown}
    assert by_signal["word_count"]["units"] == "words"
    assert all("documents scored" in r for r in shown)


def test_the_subset_tiers_table_names_its_units_and_the_report_holds_the_picture(
        world_dir: Path) -> None:
    from flows.steps import published_tables

    spec, report = _run("subset", world_dir)
    shown = spec.rendered(report)
    [table] = published_tables(spec, shown.tables).values()
    unit = report["unit"]
    assert {f"budget ({unit})", f"achieved ({unit})", f"shortfall ({unit})",
            "achieved (% of budget)"} <= set(table[0])
    for row, tier in zip(table, report["tiers"], strict=True):
        assert row[f"budget ({unit})"] == tier["budget"]
        assert row["achieved (% of budget)"] == round(
            100 * tier["achieved_tokens"] / tier["budget"], 1)
    # the markdown's tier table names its units too; the cache reads as words, not a dict
    assert f"| achieved ({unit}) | achieved (% of budget) | shortfall ({unit}) |" \
        in shown.markdown
    assert "{'dir'" not in shown.markdown and "hits" in shown.markdown
    # the picture, inline: the markdown artifact shows it without access to the disk
    picture = Path(report["picture"])
    [data] = re.findall(r"!\[[^\]]*\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)",
                        shown.markdown)
    assert base64.b64decode(data) == picture.read_bytes()
    assert picture.read_bytes()[:4] == b"\x89PNG"
