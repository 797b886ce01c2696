"""Hypothesis profiles for the property-based fuzzing of the readers and loaders.

``make test`` runs the ``curate-default`` profile: ~50 examples a property, derandomized
(the same examples every run, so the suite is repeatable), no example database written
into the checkout. ``CURATE_FUZZ_FULL=1`` selects ``curate-full``: thousands of examples
a property, randomized (a new search each run; a failure prints the
``@reproduce_failure`` blob and the falsifying example). docs/reliability.md.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture,
                                      HealthCheck.filter_too_much])
settings.register_profile("curate-default", max_examples=50, derandomize=True, **_COMMON)
settings.register_profile("curate-full", max_examples=int(os.environ.get(
    "CURATE_FUZZ_EXAMPLES", "3000")), **_COMMON)
settings.load_profile("curate-full" if os.environ.get("CURATE_FUZZ_FULL") == "1"
                      else "curate-default")

FULL = os.environ.get("CURATE_FUZZ_FULL") == "1"


def examples(default: int) -> settings:
    """``default`` examples in ``make test`` (a property run once per registered step,
    or slower than the rest, takes fewer than 50), the full count under
    ``CURATE_FUZZ_FULL=1``."""
    return settings(max_examples=settings().max_examples if FULL else default)


@contextmanager
def sandbox() -> Iterator[Path]:
    """A fresh directory per example (pytest's ``tmp_path`` is one per test function,
    and hypothesis runs many examples in one)."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def files_under(root: Path) -> set[str]:
    """Every path under ``root``, relative: what a loader or reader wrote is the
    difference of two calls."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}
