"""``report.html``: written by the flow and by ``curate report``, self-contained, holding
this run's numbers (counted here from the corpora on disk, not from the reports), safe
with hostile strings, and rendered by headless Chromium (docs/report.md)."""

from __future__ import annotations

import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
import yaml
from typer.testing import CliRunner

from curator.report import build_html, write_report
from tests.report._support import chromium, full_run, needs_chromium, page_text


def _rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted(folder.glob("*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_run(tmp_path_factory.mktemp("report-run"))


@pytest.fixture(scope="module")
def expected(run: Path) -> dict[str, Any]:
    """This run's numbers, counted from the corpora and record files themselves."""
    manifest = yaml.safe_load((run.parent / "raw/demo_corpus_manifest.yaml").read_text())
    tiers = {}
    for folder in sorted(run.glob("subset/budget_*")):
        docs = _rows(folder)
        tiers[folder.name] = (len(docs), sum(len(d["text"].split()) for d in docs))
    return {
        "raw": manifest["expected_ingest"]["documents_seen"],  # what the generator wrote
        "ingest": len(_rows(run / "ingested")),
        "filter": len(_rows(run / "filtered_jsonl")),
        "gates": Counter(r["removed_by"] for r in _rows(run / "filtered_jsonl/rejected")),
        "decontamination": len(_rows(run / "decontaminated")),
        "decontaminated_removed": len(_rows(run / "decontaminated/removed")),
        "tiers": tiers,
    }


def check_numbers(text: str, expected: dict[str, Any]) -> None:
    assert f"read by ingest {expected['raw']:,} " in text
    for step in ("ingest", "filter", "decontamination"):
        assert f"after {step} {expected[step]:,} " in text, step
    for gate, n in expected["gates"].items():
        assert re.search(rf"{gate} {n:,} [\d.]+%", text), gate
    removed = expected["filter"] - expected["decontamination"]
    assert removed == expected["decontaminated_removed"]
    assert f"{removed:,} removed)" in text
    assert len(expected["tiers"]) == 3
    for name, (docs, words) in expected["tiers"].items():
        assert re.search(rf"tier {name} \(budget [\d,]+ words\) {docs:,} [\d.]+% {words:,}",
                         text), name
    assert "verdict: PASSED" in text
    assert "does not balance" not in text


def test_the_flow_writes_the_report_with_the_runs_numbers(run: Path, expected: dict) -> None:
    html = (run / "report.html").read_text(encoding="utf-8")  # written by the flow's end
    text, tags = page_text(html)
    check_numbers(text, expected)
    # self-contained: no script, nothing fetched; links are relative and resolve
    assert "script" not in tags and "<link" not in html
    assert not re.search(r"""(src|href)=["'](https?:)?//""", html)
    hrefs = re.findall(r'href="([^"]+)"', html)
    assert hrefs and all(not h.startswith("/") and (run / h).exists() for h in hrefs)
    for name in ("flow_report.json", "ingested/ingest_report.json", "profile/profile_report.json",
                 "filtered_jsonl/run_manifest.json", "filtered_jsonl/curation_ledger.json",
                 "audit/audit_report.json", "decontaminated/decontamination_report.json",
                 "subset/subset_report.json", "subset/plan.json",
                 "policy/approved_policy.yaml"):
        assert f'href="{name}"' in html, name
    # the profile's histograms with the approved thresholds drawn on them
    assert tags.count("svg") >= 5
    for signal, value in (("stopword_ratio", "min 0.0952381"),
                          ("repeating_duplicate_ngrams", "max 0.507937")):
        assert signal in text and f"approved {value}" in text


def test_curate_report_rewrites_it(run: Path) -> None:
    from flows.cli import app

    (run / "report.html").unlink()
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"report {run / 'report.html'}"
    assert (run / "report.html").read_text(encoding="utf-8") == build_html(run)
    missing = CliRunner().invoke(app, ["report", str(run / "nowhere")])
    assert missing.exit_code == 2


def test_missing_and_hostile_artifacts(tmp_path: Path) -> None:
    empty = build_html(tmp_path)  # nothing there: a page that says so
    assert "no flow_report.json here" in empty and "no subset artifact" in empty
    evil = '<script>alert("x")</script>'
    (tmp_path / "subset").mkdir()
    (tmp_path / "subset/subset_report.json").write_text(json.dumps({
        "producer": {"completed_at": "2026-01-01T00:00:00Z"}, "unit": "words",
        "corpus": {"documents": 2, "total_tokens": 10},
        "tiers": [{"budget": 5, "document_count": 1, "achieved_tokens": 4,
                   "token_shortfall": 1, "strata_exhausted": [], "output": f"x/{evil}",
                   "per_stratum_tokens": {f"{evil}|0-128": 4}}],
        "stratification": {"strata": {f"{evil}|0-128": {"documents": 2, "tokens": 10}}},
        "warnings": [{"id": evil, "message": evil}]}))
    (tmp_path / "filtered_jsonl").mkdir()
    (tmp_path / "filtered_jsonl/run_manifest.json").write_text(json.dumps({
        "producer": {}, "error": {"error_id": "boom", "message": evil}}))
    html = write_report(tmp_path).read_text(encoding="utf-8")
    assert "<script" not in html and "&lt;script&gt;" in html
    text, _ = page_text(html)
    assert "incomplete: boom" in text  # a failed step's artifact is shown as such
    # shown as text, in the funnel and the tiers (a tier's name: after the last "/")
    assert f"tier {Path(f'x/{evil}').name} (budget 5 words) 1 " in text
    assert "&ndash;" not in text
    assert f"{evil}|0-128 2 10" in text


@needs_chromium
def test_chromium_renders_it(run: Path, expected: dict, tmp_path: Path) -> None:
    page = run / "report.html"
    dom = chromium(page, tmp_path, "--dump-dom")
    text, tags = page_text(dom)
    check_numbers(text, expected)
    assert tags.count("svg") >= 5 and "Curation run report" in text
    shot = tmp_path / "report.png"  # kept under pytest's tmp dir: look at it
    chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1200,3000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_a_failed_flow_still_writes_the_report(tmp_path: Path) -> None:
    """The flow writes report.html after a step fails too, and the page shows it."""
    import logging

    from curator.errors import CuratorError
    from curator.flow.run import run_flow, start_flow
    from tests.flow._support import base_config, demo_corpus

    class Failing:
        def run_step(self, step: Any) -> dict[str, Any]:
            raise CuratorError("disk_on_fire", f"{step.key}: <b>no</b> space left")

    log = logging.getLogger("test.report")
    config = base_config(demo_corpus(tmp_path / "raw", docs=50), tmp_path / "run")
    with pytest.raises(CuratorError):
        run_flow(start_flow(config, False, log), Failing(), log)  # type: ignore[arg-type]
    html = (tmp_path / "run/report.html").read_text(encoding="utf-8")
    text, _ = page_text(html)
    assert "last flow: failed" in text
    assert "error disk_on_fire: ingest: <b>no</b> space left" in text  # escaped, shown
    assert "<b>no</b>" not in html


def test_a_copied_root_reports_itself(run: Path, expected: dict, tmp_path: Path) -> None:
    """The page of a copied output root reads the copy's artifacts and links into it."""
    import shutil

    copy = tmp_path / "copied"
    shutil.copytree(run, copy, ignore=shutil.ignore_patterns("checkpoints"))
    for p in copy.glob("subset/budget_*/*"):
        p.write_text("")  # the copy's tiers differ from the original's: the page says so
    html = build_html(copy)
    text, _ = page_text(html)
    assert f"output root {copy}" in text
    hrefs = re.findall(r'href="([^"]+)"', html)
    assert hrefs and all(not h.startswith("..") and (copy / h).exists() for h in hrefs)
    assert f"after filter {expected['filter']:,} " in text  # the copied artifacts' counts


class _Attrs(HTMLParser):
    """Every start tag's attributes, as a browser reads them (entities decoded)."""

    def __init__(self) -> None:
        super().__init__()
        self.attrs: list[tuple[str, str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [(tag, k, v) for k, v in attrs]


def test_hostile_strings_in_every_section(tmp_path: Path) -> None:
    """Every section's values reach the page through the templates' autoescape: shown
    as text, never as markup, also inside an attribute; a file name with ``"``, ``&``,
    ``<`` and ``%`` is shown as it is and linked percent-encoded."""
    evil = '<script>alert("x")</script> & \'q\''
    odd = '<b>"x" & y%'
    done = {"completed_at": "2026-01-01T00:00:00Z"}

    def write(rel: str, data: dict[str, Any]) -> None:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(json.dumps(data), encoding="utf-8")

    write("flow_report.json", {"status": evil, "started_at": evil, "policy_status": evil,
                               "error": {"error_id": evil, "message": evil},
                               "steps": [{"step_id": "curate/audit", "status": evil}]})
    (tmp_path / "filtered_jsonl" / odd).mkdir(parents=True)
    write("filtered_jsonl/run_manifest.json", {
        "producer": done, "gates": [evil], "declared": {"filtered": {evil: 3}},
        "input": {"row_count": 10}, "rejected_dir": str(tmp_path / "filtered_jsonl" / odd)})
    write("decontaminated/decontamination_report.json", {
        "producer": done, "claim": evil,
        "result": {"train_documents_in": 7, "train_documents_removed": 1,
                   "removed_by_rule": {evil: 1}}})
    write("profile/profile_report.json", {
        "producer": done, "corpus": {"document_count": 2, "source_count": 1},
        "signals": [{"signal": evil, "direction": evil, "units": evil,
                     "histogram": {"edges": [0, 1], "counts": [2]}}]})
    write("audit/audit_report.json", {
        "producer": done, "passed": False, "mode": evil, "target": {"digest": evil},
        "strengths": [{"level": 1, "claim": evil, "made": False, "reason": evil}],
        "steps": {evil: {"artifact": evil, "findings": [evil]}},
        "findings": [{"name": evil, "message": evil}]})
    (tmp_path / "audit" / odd).write_text("", encoding="utf-8")

    html = build_html(tmp_path)
    assert "<script" not in html and "<b>" not in html
    text, _ = page_text(html)
    for shown in (f"last flow: {evil} , started {evil},", f"error {evil}: {evil}",
                  f"curate/audit {evil} complete",  # the step's status in the last flow
                  f"{evil} 3 30.0%", "1 removed)", f"{evil} 1 14.3%", f"Claim: {evil}",
                  f"{evil} ({evil}; )",  # the profile's signal
                  f"(mode {evil}); \u2013 shards", f"corpus digest {evil}", f"1 {evil} no {evil}",
                  f"{evil} {evil} {evil}", f"{evil} : {evil}", f"{odd}/", odd):
        assert shown in text, shown
    parser = _Attrs()
    parser.feed(html)
    assert ("svg", "aria-label", evil) in parser.attrs  # the histogram's, read back whole
    hrefs = [v for tag, k, v in parser.attrs if tag == "a" and k == "href"]
    for name in (f"filtered_jsonl/{odd}", f"audit/{odd}"):
        assert any(h == quote(name) or h == quote(name) + "/" for h in hrefs), name
    assert all(h and (tmp_path / unquote(h)).exists() for h in hrefs)


def test_the_templates_ship_with_the_package() -> None:
    """Every file the page is rendered from is package data of ``curator.report`` in
    pyproject.toml (a wheel without it would fail at import: jinja2's PackageLoader)."""
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parents[2]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = setuptools["tool"]["setuptools"]["package-data"]["curator.report"]
    package = root / "curator/report"
    files = [p.relative_to(package).as_posix() for p in (package / "templates").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    assert "templates/report.html" in files
    assert all(any(fnmatch.fnmatch(f, pat) for pat in patterns) for f in files), files
