"""Refusals, through ``run_ingest`` and through the ``curate ingest`` command line; the
report on failure; input files inside ``output_dir``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.ingest._support import (
    Cli,
    artifacts,
    ingest,
    ingest_error,
    jline,
    read_report,
    shard_records,
    write_config,
    write_lines,
    write_records,
)


def _no_files(root: Path) -> dict[str, Any]:
    (root / "in").mkdir(parents=True)
    write_records(root / "in" / "notes.txt", [{"text": "wrong extension"}])
    write_records(root / "in" / "ingest_report.json", [{"text": "a sidecar is not input"}])
    return {"input": str(root / "in")}


def _mixed(root: Path) -> dict[str, Any]:
    write_records(root / "in" / "a.jsonl", [{"text": "a", "url": "u"}])
    pq.write_table(pa.Table.from_pylist([{"text": "b"}]), root / "in" / "b.parquet")
    return {"input": str(root / "in")}


def _identity(root: Path) -> dict[str, Any]:
    write_records(root / "in" / "a.jsonl", [{"text": "a", "url": "u"}])
    return {"input": str(root / "in"), "id_fields": ["url", "title"]}


def _duplicates(root: Path) -> dict[str, Any]:
    same = {"text": "same", "url": "u"}
    write_records(root / "in" / "a.jsonl", [same, {"text": "other", "url": "u"}, same])
    return {"input": str(root / "in")}


def _unusable(root: Path) -> dict[str, Any]:
    write_lines(root / "in" / "a.jsonl", ["{broken", "[1]", jline({"text": ""}),
                                          jline({"url": "no text"})])
    return {"input": str(root / "in")}


#: refused before the output is touched: nothing is written (docs/architecture.md)
REFUSED_BEFORE_OUTPUT = {"input_matched_no_files", "mixed_formats", "invalid_identity_fields"}

CASES: dict[str, Callable[[Path], dict[str, Any]]] = {
    "input_matched_no_files": _no_files,
    "mixed_formats": _mixed,
    "invalid_identity_fields": _identity,
    "duplicate_documents": _duplicates,
    "no_usable_documents": _unusable,
}


def _check_failed_report(out: Path, error_id: str) -> dict[str, Any]:
    report = read_report(out)
    assert report["completed_normally"] is False
    assert report["error"]["error_id"] == error_id
    assert report["error"]["message"]
    assert "completed_at" not in report
    assert report["step_id"] == "curate/ingest" and report["schema_version"] == 2
    assert report["started_at"].endswith("Z")
    return report


@pytest.mark.parametrize("error_id", list(CASES))
def test_run_ingest_refuses_with_the_error_id_and_writes_a_failed_report(
    tmp_path: Path, error_id: str
) -> None:
    keys = CASES[error_id](tmp_path)
    out = tmp_path / "out"
    exc = ingest_error(keys.pop("input"), out, **keys)
    assert exc.error_id == error_id
    assert exc.exit_code == 2
    assert f"[{error_id}]" in str(exc)
    if error_id in REFUSED_BEFORE_OUTPUT:
        assert not out.exists()
        return
    report = _check_failed_report(out, error_id)
    assert not list(out.glob("part_*.jsonl"))
    if error_id == "no_usable_documents":
        assert report["rejections_by_reason"] == {
            "empty_text": 1, "missing_text": 1, "not_an_object": 1, "unparsable_line": 1}
        assert report["balance"]["ok"] is True and report["documents_accepted"] == 0
        assert "none of 4 records is usable" in exc.message


def test_a_failed_run_replaces_the_report_of_an_earlier_success(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "a", "url": "u"}])
    ingest(str(tmp_path / "in"), tmp_path / "out")
    assert read_report(tmp_path / "out")["completed_normally"] is True
    write_records(tmp_path / "in" / "b.jsonl", [{"text": "a", "url": "u"}])
    assert ingest_error(str(tmp_path / "in"), tmp_path / "out").error_id == "duplicate_documents"
    _check_failed_report(tmp_path / "out", "duplicate_documents")
    assert not list((tmp_path / "out").glob("part_*.jsonl"))


# -- input files inside output_dir -------------------------------------------------------


def test_input_files_inside_output_dir_are_skipped_and_counted(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_records(corpus / "a.jsonl", [{"text": f"doc {i}", "url": f"u{i}"} for i in range(5)])
    write_lines(corpus / "b.jsonl", ["{bad line", jline({"text": "b", "url": "ub"})])
    out = corpus / "ingested"
    first = ingest(str(corpus), out, shard_size=2)
    assert first["input"]["skipped_own_output"] == 0
    before = artifacts(out)
    own = [p for p in out.rglob("*") if p.is_file()]
    assert len(own) == 3 + 1 + 1  # 3 shards, 1 rejection file, the report

    second = ingest(str(corpus / "**" / "*.json*"), out, shard_size=2)
    assert second["input"]["files"] == 2
    assert second["input"]["skipped_own_output"] == len(own)
    assert second["documents_seen"] == first["documents_seen"] == 7
    assert artifacts(out) == before


def test_input_reached_through_a_symlink_still_skips_output_dir(tmp_path: Path) -> None:
    """The corpus directory is named through a symlink; output_dir by its real path."""
    real = tmp_path / "real"
    write_records(real / "a.jsonl", [{"text": f"doc {i}", "url": f"u{i}"} for i in range(3)])
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    out = real / "ingested"
    ingest(str(tmp_path / "link"), out)
    second = ingest(str(tmp_path / "link"), out)
    assert second["input"]["files"] == 1
    assert second["input"]["skipped_own_output"] == 2  # part_0.jsonl, ingest_report.json
    assert second["documents_seen"] == 3
    assert len(shard_records(out)) == 3


# -- the command line --------------------------------------------------------------------


@pytest.mark.slow
def test_cli_refusals_exit_2_with_the_error_id(tmp_path: Path, prefect_api: str) -> None:
    """All five refusals as ``curate ingest`` subprocesses (run side by side)."""
    runs: dict[str, tuple[Cli, Path]] = {}
    try:
        for error_id, make in CASES.items():
            root = tmp_path / error_id
            keys = make(root)
            cfg = write_config(root / "ingest.yaml", {
                **keys, "output_dir": str(root / "out"),
                "execution": {"executor": "inline"},
            })
            runs[error_id] = (Cli(cfg, root / "logs", "cli").__enter__(), root / "out")
        for error_id, (cli, out) in runs.items():
            code = cli.wait(120)
            err = cli.stderr()
            assert code == 2, (error_id, code, err[-2000:])
            assert f"error: [{error_id}]" in err, err[-2000:]
            if error_id in REFUSED_BEFORE_OUTPUT:
                assert not out.exists(), error_id
            else:
                _check_failed_report(out, error_id)
    finally:
        for cli, _ in runs.values():
            cli.__exit__(None, None, None)
    # The runs went to the fixture's server: one failed flow run per config file.
    states = asyncio.run(_flow_run_states())
    for error_id in CASES:
        assert states.get(str(tmp_path / error_id / "ingest.yaml")) == ["FAILED"], error_id


async def _flow_run_states() -> dict[str, list[str]]:
    """Config path -> states of the ``curate-ingest`` flow runs recorded on the server."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    async with get_client() as client:
        runs = await client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["curate-ingest"])))
    states: dict[str, list[str]] = {}
    for run in runs:
        config = run.parameters.get("config")
        if isinstance(config, str):
            states.setdefault(config, []).append(run.state.type.value if run.state else "")
    return states


@pytest.mark.slow
def test_cli_ingests_with_set_overrides(tmp_path: Path, prefect_api: str) -> None:
    same = {"text": "same", "url": "u", "lang": "en"}
    write_records(tmp_path / "in" / "a.jsonl",
                  [same, {"text": "two", "url": "v", "lang": "fr"}, same])
    cfg = write_config(tmp_path / "ingest.yaml", {
        "input": str(tmp_path / "in"), "output_dir": str(tmp_path / "out"),
        "on_duplicate": "refuse", "execution": {"executor": "inline"},
    })
    with Cli(cfg, tmp_path / "logs", "ok", "on_duplicate=drop", "keep_fields=[lang]",
             "source=web", "id_prefix=x-") as cli:
        code = cli.wait(120)
        assert code == 0, cli.stderr()[-3000:]
        stdout = cli.stdout()
    report = read_report(tmp_path / "out")
    assert report["completed_normally"] is True and "completed_at" in report
    assert report["on_duplicate"] == "drop"
    assert [{k: d[k] for k in ("text", "source", "lang")} for d in shard_records(tmp_path / "out")
            ] == [{"text": "same", "source": "web", "lang": "en"},
                  {"text": "two", "source": "web", "lang": "fr"}]
    assert all(d["id"].startswith("x-") and "url" not in d
               for d in shard_records(tmp_path / "out"))
    assert "ingest: 3 documents seen, 2 accepted, 1 rejected (duplicate_id 1)" in stdout
    assert str(tmp_path / "out" / "ingest_report.json") in stdout


@pytest.mark.slow
def test_cli_config_error_exits_2(tmp_path: Path, prefect_api: str) -> None:
    cfg = write_config(tmp_path / "ingest.yaml", {"input": str(tmp_path), "no_such_key": 1})
    with Cli(cfg, tmp_path / "logs", "bad", "on_duplicate=sometimes") as cli:
        assert cli.wait(120) == 2
        err = cli.stderr()
    assert "error: [unknown_config_key]" in err and "no_such_key" in err
    assert "on_duplicate" in err  # the other problem of the same config, in the same line
    assert not os.path.exists(tmp_path / "output")  # the default output_dir, under cwd


def test_a_refusal_before_reading_leaves_the_previous_run_as_it_was(tmp_path: Path) -> None:
    """The earlier run's report still describes the shards beside it."""
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "a", "url": "u"}])
    ingest(str(tmp_path / "in"), tmp_path / "out")
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert list((tmp_path / "out").glob("part_*.jsonl"))
    error = ingest_error(str(tmp_path / "in"), tmp_path / "out", id_fields=["url"])
    assert error.error_id == "invalid_identity_fields"
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before


def test_a_listed_input_path_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    write_records(tmp_path / "in" / "a.jsonl", [{"text": "a", "url": "u"}])
    missing = str(tmp_path / "in" / "typo.jsonl")
    error = ingest_error([str(tmp_path / "in" / "a.jsonl"), missing], tmp_path / "out")
    assert error.error_id == "input_matched_no_files"
    assert "typo.jsonl" in error.message
