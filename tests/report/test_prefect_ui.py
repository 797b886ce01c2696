"""The Prefect UI in a real browser: a local Prefect server with its UI, ``curate flow``
run against it, and the flow run's pages opened in headless Chromium (docs/report.md,
"The Prefect UI"). What a person would see: the flow run and its step subflows
completed, one task run per source partition, each step's artifacts (progress,
markdown report, tables), the subset's picture, numbers rounded. Screenshots are kept
in the test's tmp dir, and copied to ``CURATE_TEST_SHOTS`` (a folder) when it is set."""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from curator.steps.registry import STEPS
from tests.flow._support import APPROVE, base_config, demo_corpus
from tests.report._support import chromium, needs_chromium, page_text

pytestmark = needs_chromium
STARTUP_SECONDS = 240  # a first start migrates the database; the machine may be busy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``prefect server start`` with the UI on (the session's hermetic settings
    otherwise: private home, no telemetry, services off); its base URL."""
    home = tmp_path_factory.mktemp("prefect-ui")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update({"PREFECT_HOME": str(home / "home"),
                "PREFECT_PROFILES_PATH": str(home / "profiles.toml"),
                "PREFECT_SERVER_UI_ENABLED": "true", "PREFECT_UI_API_URL": f"{url}/api",
                "PREFECT_SERVER_DATABASE_CONNECTION_URL":
                    f"sqlite+aiosqlite:///{home / 'prefect.db'}"})
    log = (home / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
         "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (home / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the Prefect server did not start"
            time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def flow_run(ui_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Measure without Prefect, then approve and apply (filter, audit, decontamination,
    subset) as ``curate flow`` against the server; the runs as the API has them."""
    from curator_demo.holdout import write_holdout
    from flows.direct import run_flow_direct

    base = tmp_path_factory.mktemp("ui-run")
    raw = demo_corpus(base / "raw", docs=100)
    write_holdout(raw, base / "holdout", count=8)
    root = base / "run"
    run_flow_direct(base_config(raw, root), plan=False)
    config = base_config(raw, root, profile=False, filt=True, approve=APPROVE)
    config["steps"].update({
        "audit": {"enabled": True, "mode": "all", "comparison_fields": ["id", "text"]},
        "dedup": {"enabled": True},
        "decontamination": {"enabled": True, "holdout": str(base / "holdout/holdout.jsonl")},
        "subset": {"enabled": True, "token_budgets": [3000, 8000]},
    })
    path = base / "apply.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {**os.environ, "PREFECT_API_URL": f"{ui_server}/api", "CURATE_PREFECT": "always"}
    proc = subprocess.run([sys.executable, "-m", "flows.cli", "flow", "--config", str(path)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"the run on one page: {root.resolve() / 'report.html'}" in proc.stdout
    api = f"{ui_server}/api"
    runs = httpx.post(f"{api}/flow_runs/filter", json={"limit": 50}, timeout=30).json()
    flows = httpx.post(f"{api}/flows/filter", json={"limit": 50}, timeout=30).json()
    names = {f["id"]: f["name"] for f in flows}
    by_flow = {names[r["flow_id"]]: r for r in runs}
    tasks = {}
    for name, r in by_flow.items():
        tasks[name] = httpx.post(f"{api}/task_runs/filter", timeout=30, json={
            "flow_runs": {"id": {"any_": [r["id"]]}}, "limit": 200}).json()
    artifacts = httpx.post(f"{api}/artifacts/filter", json={"limit": 200}, timeout=30).json()
    return {"root": root, "runs": by_flow, "tasks": tasks, "url": ui_server,
            "artifacts": {a["key"]: a["id"] for a in artifacts if a.get("key")}}


def _page(run: dict[str, Any], flow: str, tab: str, tmp: Path, shot: Path | None = None
          ) -> str:
    url = f"{run['url']}/v2/runs/flow-run/{run['runs'][flow]['id']}?tab={tab}"
    args = ["--virtual-time-budget=20000", "--window-size=1400,1600", "--dump-dom"]
    if shot is not None:
        args.append(f"--screenshot={shot}")
    text, _ = page_text(re.sub(r"<script.*?</script>", "", chromium(url, tmp, *args),
                               flags=re.S))
    return text


def test_the_flow_run_its_task_runs_and_artifacts_in_the_ui(flow_run: dict[str, Any],
                                                             tmp_path: Path) -> None:
    runs, root = flow_run["runs"], flow_run["root"]
    ran = [s for s in STEPS if s.key not in ("ingest", "profile")]  # ingest is skipped
    assert {f"curate-{s.key}" for s in ran} | {"curate-flow"} <= set(runs)
    # the flow run: completed, with one completed subflow run per step that ran
    text = _page(flow_run, "curate-flow", "SubflowRuns", tmp_path)
    assert runs["curate-flow"]["name"] in text and "Completed" in text
    for spec in ran:
        name = runs[spec.flow_name]["name"]
        assert re.search(rf"{spec.flow_name} / {name} Completed", text), spec.key
    # the filter's subflow: one task run per source partition and phase, all completed
    manifest = json.loads((root / "filtered_jsonl/run_manifest.json").read_text())
    parts = manifest["producer"]["execution"]["partitions"]
    # named after their pass, so the two passes over a partition are told apart
    trs = [t for t in flow_run["tasks"]["curate-filter"]
           if t["name"].startswith(("filter-fingerprint-", "filter-filter-"))]
    assert len(trs) == parts * 2 and len({t["name"] for t in trs}) == parts * 2
    shot = tmp_path / "prefect-filter-task-runs.png"
    text = _page(flow_run, "curate-filter", "TaskRuns", tmp_path, shot)
    assert f"{len(trs)} Task runs ({len(trs)} Completed)" in text
    shown = set(re.findall(r"filter-(?:fingerprint|filter)-[0-9a-f]+", text))
    assert shown and shown <= {t["name"] for t in trs}
    assert shot.read_bytes()[:4] == b"\x89PNG"
    # each step's artifacts: its markdown report and every table with rows its rendering
    # makes (named as the step's own rendering names them), and its progress artifacts
    for spec in ran:
        report = spec.read_result({"output_dir": str(root / spec.output_subdir)})
        assert report is not None, spec.key
        tables = spec.rendered(report).tables
        text = _page(flow_run, spec.flow_name, "Artifacts", tmp_path,
                     tmp_path / f"prefect-{spec.key}-artifacts.png")
        assert f"MARKDOWN {spec.key}-report" in text, (spec.key, text[-1500:])
        for table, rows in tables.items():  # an empty table is not published
            assert (f"TABLE {spec.key}-{table}" in text) == bool(rows), (spec.key, table)
        assert "PROGRESS" in text and "source partitions done" in text


def _cells(dom: str) -> list[str]:
    """The text of every rendered table cell, in order."""
    return [" ".join(re.sub(r"<[^>]+>", " ", c).split())
            for c in re.findall(r"<td\b[^>]*>(.*?)</td>", dom, flags=re.S)]


def test_a_markdown_report_and_a_table_render_in_the_ui(flow_run: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """The filter's markdown report renders as HTML (its heading, its gate table as table
    cells), and its ledger as a table with the ledger's numbers."""
    root, ids = flow_run["root"], flow_run["artifacts"]
    ledger = json.loads((root / "filtered_jsonl/curation_ledger.json").read_text())
    for key, shot in (("filter-report", "prefect-filter-report.png"),
                      ("filter-ledger", "prefect-filter-ledger.png")):
        url = f"{flow_run['url']}/v2/artifacts/artifact/{ids[key]}"
        dom = chromium(url, tmp_path, "--virtual-time-budget=20000", "--window-size=1400,1600",
                       "--dump-dom", f"--screenshot={tmp_path / shot}")
        cells = _cells(re.sub(r"<script.*?</script>", "", dom, flags=re.S))
        pairs = set(itertools.pairwise(cells))
        if key == "filter-report":
            assert re.search(r"<h1\b[^>]*>\s*Filter run \(complete\)", dom)
            for gate, n in ledger["filtered_by_reason"].items():
                assert (gate, f"{n:,}") in pairs, (gate, cells)
        else:
            for field in ("n_input", "n_success", "n_filtered"):
                assert (field, str(ledger[field])) in pairs, (field, cells)


def _keep(shot: Path) -> None:
    """Copy a screenshot to ``CURATE_TEST_SHOTS`` (a folder) when set, to keep it."""
    keep = os.environ.get("CURATE_TEST_SHOTS")
    if keep and shot.is_file():
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy2(shot, Path(keep) / shot.name)


def test_the_subset_picture_and_its_tier_table_read_well_in_the_ui(
        flow_run: dict[str, Any], tmp_path: Path) -> None:
    """The subset's markdown report shows ``tier_shares.png`` (inlined as a ``data:``
    image: the UI cannot read the worker's disk), and its tier table names its units.
    (Rounding is proven without a browser: tests/flows/test_artifact_tables.py.)"""
    root, ids = flow_run["root"], flow_run["artifacts"]
    subset = json.loads((root / "subset/subset_report.json").read_text())
    picture = Path(subset["picture"]).read_bytes()
    for key in ("subset-report", "subset-tiers"):
        shot = tmp_path / f"prefect-{key}.png"
        url = f"{flow_run['url']}/v2/artifacts/artifact/{ids[key]}"
        height = 2600 if key == "subset-report" else 900  # the picture is below the tables
        dom = chromium(url, tmp_path, "--virtual-time-budget=20000",
                       f"--window-size=1400,{height}", "--dump-dom", f"--screenshot={shot}")
        assert shot.read_bytes()[:4] == b"\x89PNG"
        _keep(shot)
        dom = re.sub(r"<script.*?</script>", "", dom, flags=re.S)
        if key == "subset-report":
            srcs = re.findall(r'<img\b[^>]*\bsrc="data:image/png;base64,([^"]+)"', dom)
            assert [base64.b64decode(s) for s in srcs] == [picture], dom[-2000:]
        else:
            text, _ = page_text(dom)
            assert f"budget ({subset['unit']})" in text, text[-2000:]
            assert "achieved (% of budget)" in text, text[-2000:]
