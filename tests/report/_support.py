"""A small flow run through all six steps, headless Chromium, and the text of a page."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.flow._support import APPROVE, base_config, demo_corpus

#: Debian's package (.ci/run installs it when missing); never a downloaded browser
CHROMIUM = os.environ.get("CURATE_TEST_CHROMIUM") or shutil.which("chromium") \
    or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


def full_run(base: Path, docs: int = 160) -> Path:
    """Measure (ingest, profile), then approve and apply (filter, audit,
    decontamination, subset) into ``base/run``; return the output root."""
    from curator_demo.holdout import write_holdout
    from flows.direct import run_flow_direct

    raw = demo_corpus(base / "raw", docs=docs)
    write_holdout(raw, base / "holdout")
    root = base / "run"
    run_flow_direct(base_config(raw, root), plan=False)
    config: dict[str, Any] = base_config(raw, root, profile=False, filt=True, approve=APPROVE)
    config["steps"].update({
        "audit": {"enabled": True, "mode": "all", "comparison_fields": ["id", "text"]},
        "decontamination": {"enabled": True, "holdout": str(base / "holdout/holdout.jsonl"),
                            "partition_size": "64KB"},
        "subset": {"enabled": True, "token_budgets": [4000, 10000, 20000],
                   "length_bands": [128, 512, 2048], "partition_size": "64KB"},
    })
    run_flow_direct(config, plan=False)
    return root


NO_CHROMIUM = (f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (.ci/run does it "
               "when it can; CURATE_TEST_CHROMIUM names another binary)")
#: skips a browser test (before its fixtures run) when there is no Chromium
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=NO_CHROMIUM)


def chromium(page: Path | str, tmp: Path, *args: str, timeout: float = 120) -> str:
    """Run headless Chromium on ``page`` (a file, or a URL) with ``args``; its stdout.
    Skips the test, saying why, when there is no Chromium."""
    if not Path(CHROMIUM).is_file():
        pytest.skip(NO_CHROMIUM)
    profile = tmp / "chromium-profile"
    profile.mkdir(exist_ok=True)
    argv = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args,
            page if isinstance(page, str) else page.resolve().as_uri()]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HOME": str(tmp)}, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.tags: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag in ("style", "title"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "title") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def page_text(html: str) -> tuple[str, list[str]]:
    """The visible text of a page (whitespace collapsed) and its tags in order."""
    parser = _Text()
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split()), parser.tags
