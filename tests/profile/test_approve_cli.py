"""`curate approve`: candidate + chosen thresholds → approved_policy.yaml, or a refusal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from curator.artifacts import file_digest
from curator.policy import load_policy, validate_policy, write_candidate
from flows.cli import app
from tests.profile.test_policy import IN_BAND, RATIO, make_candidate

runner = CliRunner()


@pytest.fixture
def candidate(tmp_path: Path) -> Path:
    path = tmp_path / "candidate_policies.yaml"
    write_candidate(make_candidate(), path)
    return path


def run(candidate: Path, *args: str, out: Path | None = None,
        approver: str | None = "Ada", evidence: str | None = "read 200 dropped docs"):
    argv = ["approve", "--candidate", str(candidate),
            "--out", str(out or candidate.with_name("approved_policy.yaml")), *args]
    if approver is not None:
        argv += ["--approver", approver]
    if evidence is not None:
        argv += ["--evidence", evidence]
    return runner.invoke(app, argv)


def test_success_writes_a_valid_policy(candidate: Path) -> None:
    out = candidate.with_name("approved_policy.yaml")
    result = run(candidate, "--set", f"bullet_ratio={IN_BAND!r}", "--set", "word_count=50:5000",
                 "--set", f"words_with_alphabets={RATIO[5]!r}", "--method", "ablation",
                 "--date", "2024-05-01")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # every value is a swept point inside its band
    doc = yaml.safe_load(out.read_text())
    assert validate_policy(doc) == []
    assert doc["approval"] == {"approver": "Ada", "date": "2024-05-01", "method": "ablation",
                               "evidence": "read 200 dropped docs"}
    assert doc["thresholds"] == [{"signal": "bullet_ratio", "max": IN_BAND},
                                 {"signal": "word_count", "min": 50, "max": 5000},
                                 {"signal": "words_with_alphabets", "min": RATIO[5]}]
    assert str(out) in result.stdout
    assert file_digest(out) in result.stdout
    assert load_policy(out).policy_digest == file_digest(out)


def test_interval_lo_hi_parsing(candidate: Path) -> None:
    out = candidate.with_name("approved_policy.yaml")
    result = run(candidate, "--set", "word_count=0:20000")
    assert result.exit_code == 0, result.output
    assert load_policy(out).thresholds == {"word_count": (0, 20000)}


def test_warnings_go_to_stderr_and_do_not_stop_the_approval(candidate: Path) -> None:
    result = run(candidate, "--set", "bullet_ratio=0.1", "--set", "word_count=60:5000")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert [line.split("]")[0] for line in lines] == [
        "warning: [threshold_outside_bands", "warning: [threshold_not_on_grid",
        "warning: [threshold_not_on_grid"]
    assert "bullet_ratio" in lines[0] and "word_count min=60" in lines[2]
    assert "warning:" not in result.stdout
    assert candidate.with_name("approved_policy.yaml").exists()


@pytest.mark.parametrize(("args", "who", "error_id"), [
    (["--set", "numbers_ratio=0.1"], {}, "signal_not_profiled"),
    (["--set", "bullet_ratio=nan"], {}, "invalid_threshold"),
    (["--set", "bullet_ratio=inf"], {}, "invalid_threshold"),
    (["--set", "bullet_ratio=lots"], {}, "invalid_threshold"),
    (["--set", "bullet_ratio"], {}, "invalid_threshold"),
    (["--set", "bullet_ratio=0.1:0.2"], {}, "invalid_threshold"),
    (["--set", "word_count=50"], {}, "invalid_threshold"),
    (["--set", "word_count=5000:50"], {}, "invalid_threshold"),
    (["--set", "bullet_ratio=0.1", "--set", "bullet_ratio=0.2"], {}, "duplicate_threshold"),
    ([], {}, "policy_thresholds_empty"),
    (["--set", "bullet_ratio=0.5"], {"approver": None}, "approval_missing_approver"),
    (["--set", "bullet_ratio=0.5"], {"approver": " "}, "approval_missing_approver"),
    (["--set", "bullet_ratio=0.5"], {"evidence": None}, "approval_missing_evidence"),
    (["--set", "bullet_ratio=0.5", "--method", "vibes"], {}, "invalid_approval_method"),
    (["--set", "bullet_ratio=0.5", "--date", "May 1"], {}, "invalid_approval_date"),
])
def test_refusals_exit_2_with_their_id(candidate: Path, args: list[str], who: dict,
                                       error_id: str) -> None:
    result = run(candidate, *args, **who)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: [{error_id}] ")
    assert not candidate.with_name("approved_policy.yaml").exists()


def test_an_approved_policy_is_not_approved_again(candidate: Path) -> None:
    first = candidate.with_name("approved_policy.yaml")
    assert run(candidate, "--set", "bullet_ratio=0.5").exit_code == 0
    result = run(first, "--set", "bullet_ratio=0.5", out=candidate.with_name("again.yaml"))
    assert result.exit_code == 2
    assert "error: [policy_already_approved]" in result.stderr


def test_missing_or_broken_candidate(tmp_path: Path) -> None:
    result = run(tmp_path / "nope.yaml", "--set", "bullet_ratio=0.5")
    assert result.exit_code == 2 and "error: [candidate_unreadable]" in result.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("candidates: [\n")
    result = run(broken, "--set", "bullet_ratio=0.5")
    assert result.exit_code == 2 and "error: [candidate_unreadable]" in result.stderr


def test_out_may_not_overwrite_the_candidate(candidate: Path) -> None:
    before = candidate.read_bytes()
    result = run(candidate, "--set", "bullet_ratio=0.5", out=candidate)
    assert result.exit_code == 2 and "error: [approve_out_is_candidate]" in result.stderr
    assert candidate.read_bytes() == before


def test_the_console_script(candidate: Path) -> None:
    """The installed `curate` entry point, end to end, in a real process."""
    curate = Path(sys.executable).with_name("curate")
    out = candidate.with_name("approved_policy.yaml")
    ok = subprocess.run(
        [str(curate), "approve", "--candidate", str(candidate), "--set", "word_count=50:5000",
         "--approver", "Ada", "--evidence", "E", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert file_digest(out) in ok.stdout
    refused = subprocess.run(
        [str(curate), "approve", "--candidate", str(candidate), "--set", "word_count=50",
         "--approver", "Ada", "--evidence", "E", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert "error: [invalid_threshold]" in refused.stderr
