"""A plain script that runs a pipeline sees the engine's INFO lines on stderr.

Each script runs in a subprocess: pytest configures logging (its capture handler sits
on the root logger), so only a fresh interpreter shows what a user's script shows.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from curator.logs import default_stderr_logging, logging_configured

REPO = Path(__file__).resolve().parents[2]

PIPELINE = """
import sys
from curator_testing.jsonl import JsonlWriter, jsonl_reader
from curator.pipeline import Pipeline

workdir = sys.argv[1]


def run_once():
    pipeline = Pipeline(name="plain", stages=[
        *jsonl_reader(workdir + "/in/*.jsonl", files_per_partition=1, fields=["text"]),
        JsonlWriter(path=workdir + "/out"),
    ])
    pipeline.run(checkpoint_path=workdir + "/ck")
"""

PLANNED = re.compile(r"plain: 3 source partitions: (\d+) pending, (\d+) skipped as complete")
SUMMARY = re.compile(r"plain: finished: (\d+) source partitions completed in this run, "
                     r"(\d+) skipped as complete, (\d+) failed, (\d+) left pending, [0-9.]+s")


def run_script(
    tmp_path: Path, body: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "in").mkdir(exist_ok=True)
    for i in range(3):
        (tmp_path / "in" / f"f{i}.jsonl").write_text(f'{{"text": "doc {i}"}}\n')
    path = tmp_path / "script.py"
    path.write_text(PIPELINE + textwrap.dedent(body))
    proc = subprocess.run([sys.executable, str(path), str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_script_without_logging_setup_sees_counts_and_summary(tmp_path: Path) -> None:
    proc = run_script(tmp_path, """
        if __name__ == "__main__":
            run_once()
            print("-- second run --", file=sys.stderr, flush=True)
            run_once()
        """)
    first, second = proc.stderr.split("-- second run --")
    assert [m.groups() for m in PLANNED.finditer(first)] == [("3", "0")], proc.stderr
    assert [m.groups() for m in SUMMARY.finditer(first)] == [("3", "0", "0", "0")], proc.stderr
    assert [m.groups() for m in PLANNED.finditer(second)] == [("0", "3")], proc.stderr
    assert [m.groups() for m in SUMMARY.finditer(second)] == [("0", "3", "0", "0")], proc.stderr
    assert "INFO curator.pipeline: plain: 3 source partitions" in first  # the format
    assert proc.stdout == ""  # stderr only


def test_logging_configured_at_warning_shows_none_of_them(tmp_path: Path) -> None:
    proc = run_script(tmp_path, """
        import logging

        if __name__ == "__main__":
            logging.basicConfig(level=logging.WARNING)
            run_once()
            run_once()
        """)
    assert "source partitions" not in proc.stderr, proc.stderr


def test_a_handler_on_curator_is_the_only_output(tmp_path: Path) -> None:
    """The user's own handler on ``curator`` gets each line once; nothing else prints."""
    proc = run_script(tmp_path, """
        import logging

        if __name__ == "__main__":
            handler = logging.StreamHandler(sys.stdout)
            handler.setFormatter(logging.Formatter("mine %(message)s"))
            logging.getLogger("curator").addHandler(handler)
            logging.getLogger("curator").setLevel(logging.INFO)
            run_once()
        """)
    assert "source partitions" not in proc.stderr, proc.stderr
    assert len(PLANNED.findall(proc.stdout)) == 1 and len(SUMMARY.findall(proc.stdout)) == 1
    assert all(line.startswith("mine ") for line in proc.stdout.splitlines())


def test_a_null_handler_silences_the_engine(tmp_path: Path) -> None:
    proc = run_script(tmp_path, """
        import logging

        if __name__ == "__main__":
            logging.getLogger("curator").addHandler(logging.NullHandler())
            run_once()
        """)
    assert "source partitions" not in proc.stderr, proc.stderr


def test_configuring_logging_after_a_run_prints_each_line_once(tmp_path: Path) -> None:
    """The default handler lives for the run only: basicConfig after it does not double."""
    proc = run_script(tmp_path, """
        import logging

        if __name__ == "__main__":
            run_once()
            logging.basicConfig(level=logging.INFO, format="user %(message)s")
            print("-- configured --", file=sys.stderr, flush=True)
            run_once()
        """)
    first, second = proc.stderr.split("-- configured --")
    assert len(PLANNED.findall(first)) == 1, proc.stderr
    assert len(PLANNED.findall(second)) == 1 and len(SUMMARY.findall(second)) == 1, proc.stderr
    assert all(line.startswith("user ") for line in second.strip().splitlines()), second
    assert not logging.getLogger("curator").handlers  # and in this process, nothing left


@pytest.mark.timeout(180)
def test_a_prefect_run_shows_each_line_once(tmp_path: Path, prefect_api: str) -> None:
    """Prefect configures logging; the engine's lines go through it, never doubled."""
    proc = run_script(tmp_path, """
        from flows.engine import run_pipeline_flow

        if __name__ == "__main__":
            pipeline = Pipeline(name="plain", stages=[
                *jsonl_reader(workdir + "/in/*.jsonl", files_per_partition=1, fields=["text"]),
                JsonlWriter(path=workdir + "/out"),
            ])
            run_pipeline_flow(pipeline, checkpoint_path=workdir + "/ck")
        """, env={"PREFECT_LOGGING_LEVEL": "INFO", "PREFECT_API_URL": prefect_api})
    both = proc.stdout + proc.stderr
    assert [m.groups() for m in PLANNED.finditer(both)] == [("3", "0")], both
    assert len(SUMMARY.findall(both)) == 1, both
    assert "INFO curator.pipeline:" not in both  # Prefect's format, not the default's


# -- in this process (pytest's handler is on the root logger) ---------------------------

def test_under_configured_logging_nothing_is_added() -> None:
    engine = logging.getLogger("curator")
    assert logging_configured()
    before = (list(engine.handlers), engine.level)
    with default_stderr_logging() as active:
        assert not active
        assert (list(engine.handlers), engine.level) == before


def test_unconfigured_the_handler_is_added_for_the_run_and_removed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, engine = logging.getLogger(), logging.getLogger("curator")
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(engine, "handlers", [])
    monkeypatch.setattr(engine, "level", logging.NOTSET)
    assert not logging_configured()
    with default_stderr_logging() as active, default_stderr_logging() as nested:
        assert active and nested and len(engine.handlers) == 1
        assert engine.level == logging.INFO
        logging.getLogger("curator.pipeline").info("hello %d", 1)
        logging.getLogger("curator.pipeline").debug("not shown")
    assert engine.handlers == [] and engine.level == logging.NOTSET
    err = capsys.readouterr().err
    assert "INFO curator.pipeline: hello 1" in err and "not shown" not in err


def test_a_handler_added_during_the_run_silences_the_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, engine = logging.getLogger(), logging.getLogger("curator")
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(engine, "handlers", [])
    monkeypatch.setattr(engine, "level", logging.NOTSET)
    with default_stderr_logging():
        logging.getLogger("curator.x").info("before")
        root.handlers.append(logging.NullHandler())
        logging.getLogger("curator.x").info("after")
    err = capsys.readouterr().err
    assert "before" in err and "after" not in err
