"""``curate`` without a Prefect server: the same steps run directly (flows/direct.py),
with the same bytes as through Prefect, and Prefect is used wherever a server is
configured (``PREFECT_API_URL``, the active profile, ``CURATE_PREFECT``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator_testing import hermetic_env
from flows.direct import run_flow_direct, use_prefect
from tests.flow._support import APPROVE, base_config, demo_corpus, read_json, statuses

REPO = Path(__file__).resolve().parents[2]
CURATE = str(Path(sys.executable).parent / "curate")


def test_prefect_is_used_where_a_server_is_configured(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles.toml"
    env = {"PREFECT_PROFILES_PATH": str(profiles)}
    assert not use_prefect(env)  # no server, no profile file
    assert use_prefect({**env, "PREFECT_API_URL": "http://127.0.0.1:4200/api"})
    profiles.write_text('active = "work"\n[profiles.work]\n'
                        'PREFECT_API_URL = "http://10.0.0.5:4200/api"\n[profiles.local]\n')
    assert use_prefect(env)  # the active profile names a server
    assert not use_prefect({**env, "PREFECT_PROFILE": "local"})
    assert use_prefect({**env, "PREFECT_PROFILE": "local", "CURATE_PREFECT": "always"})
    assert not use_prefect({**env, "CURATE_PREFECT": "never"})
    profiles.write_text("not [ toml")
    assert not use_prefect(env)  # an unreadable profile file names no server
    with pytest.raises(CuratorError) as err:
        use_prefect({"CURATE_PREFECT": "sometimes"})
    assert err.value.error_id == "config_error"


def curate(args: list[str], home: Path, **more: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **hermetic_env(home), **more}
    env.pop("PREFECT_API_URL", None)
    return subprocess.run([CURATE, *args], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)


def shards(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.jsonl"))}


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_step_without_a_server_runs_directly_and_writes_the_same_bytes(
        tmp_path: Path) -> None:
    raw = demo_corpus(tmp_path / "raw", docs=120)
    args = ["ingest", "--set", f"input={raw}", "--set", "on_duplicate=drop",
            "--set", "shard_size=50", "--set", "execution.executor=local"]
    direct = curate([*args, "--set", f"output_dir={tmp_path / 'direct'}"], tmp_path,
                    PREFECT_LOGGING_LEVEL="INFO")
    assert direct.returncode == 0, direct.stderr
    assert "temporary server" not in direct.stderr  # no Prefect server was started
    assert "Beginning flow run" not in direct.stderr
    assert "ingest:" in direct.stdout and "accepted" in direct.stdout
    prefect = curate([*args, "--set", f"output_dir={tmp_path / 'prefect'}"], tmp_path,
                     CURATE_PREFECT="always", PREFECT_LOGGING_LEVEL="INFO")
    assert prefect.returncode == 0, prefect.stderr
    assert "Beginning flow run" in prefect.stderr  # a Prefect flow run, as before
    assert shards(tmp_path / "direct") == shards(tmp_path / "prefect") != {}
    reports = [json.loads((tmp_path / d / "ingest_report.json").read_text())
               for d in ("direct", "prefect")]
    assert reports[0]["producer"]["execution"] == reports[1]["producer"]["execution"]
    assert reports[0]["producer"]["execution"]["executor"] == "local"
    assert reports[0]["producer"]["completed_at"] and reports[1]["producer"]["completed_at"]

    # an error keeps its id and exit code on the direct path
    bad = curate(["ingest", "--set", f"input={tmp_path / 'absent'}",
                  "--set", f"output_dir={tmp_path / 'x'}"], tmp_path)
    assert bad.returncode == 2 and "error:" in bad.stderr and "Traceback" not in bad.stderr


def test_the_flow_without_prefect(tmp_path: Path) -> None:
    raw = demo_corpus(tmp_path / "raw")
    root = tmp_path / "root"
    report = run_flow_direct(base_config(raw, root))
    assert report["status"] == "ok"
    assert statuses(report)["curate/ingest"] == "ok"
    assert statuses(report)["curate/profile"] == "ok"
    assert read_json(root / "flow_report.json")["status"] == "ok"
    assert (root / "profile" / "candidate_policies.yaml").is_file()
    # a rerun skips what is done, as the Prefect flow does
    config = base_config(raw, root, profile=False, filt=True, approve=APPROVE)
    again = run_flow_direct(config)
    assert statuses(again)["curate/ingest"] == "skipped"
    assert statuses(again)["curate/filter"] == "ok" and again["policy_applied"]


def test_interactive_approval_needs_a_server(tmp_path: Path) -> None:
    raw = demo_corpus(tmp_path / "raw")
    config: dict[str, Any] = base_config(raw, tmp_path / "root", filt=True,
                                         approve={"interactive": True})
    with pytest.raises(CuratorError) as err:
        run_flow_direct(config)
    assert err.value.error_id == "approval_needs_prefect"
    assert "PREFECT_API_URL" in err.value.message
