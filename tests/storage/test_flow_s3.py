"""``curate flow`` with its output_root on a bucket: the whole flow, measure then approve
and apply (ingest, profile; approve, filter, audit, decontamination, subset), on an
``s3://`` corpus and holdout, into ``s3://bucket/run``, against the same flow into a
local root.

- every step publishes the data a local root holds, byte for byte (shards, tiers,
  removals, rejections, Parquet), and the reports, once the local root is read as the
  URL, say the same;
- the flow's own files (flow_plan.json, flow_report.json, report.html, the approved
  policy) and every done-marker are objects under the root;
- a rerun skips every step (done-markers on the bucket), and so does a rerun by a new
  driver: another scratch directory and output copy directory, both empty;
- ``curate status`` and ``curate report`` of the URL read the root from the bucket;
- the bucket's keys, given to ``curate-flow`` as a Prefect Secret block, reach the run
  (and its pool workers) and no file or log.

The whole flow runs without Prefect (``flows.direct``) on the inline executor; the
Secret-block test runs ``curate-flow`` on the session's Prefect server and the process
pool. All on the moto S3 server of the conftest; nothing patched."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from curator.checkpoint_mirror import SCRATCH_DIR_ENV
from curator.errors import CuratorError
from curator.flow.plan import MARKER
from curator.flow.status import root_status
from curator.io.storage import COPY_DIR_ENV
from flows.cli import app
from flows.direct import run_flow_direct
from tests.flow._support import APPROVE, base_config, demo_corpus, statuses
from tests.storage.conftest import s3_objects, upload_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DOCS = 160
#: large partitions: a local file and an object make the same partitions (an object is
#: never split into byte ranges), so the two roots hold the same shards
BIG = "16MB"
STEPS = ("ingest", "profile", "filter", "audit", "decontamination", "subset")
SUBDIRS = ("ingested", "profile", "filtered_jsonl", "audit", "decontaminated", "subset")
#: fields that differ between any two runs (times, durations, the config digest, which
#: covers the output dir's name)
VOLATILE = {"started_at", "completed_at", "seconds", "config_hash", "generated_at",
            "elapsed_seconds", "wall_seconds", "date", "tool_revision", "duration_seconds",
            "run_id"}


def _configs(raw: str, holdout: str, root: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run 1 (measure: ingest, profile) and run 2 (approve; filter, audit,
    decontamination, subset) of the flow on ``raw`` into ``root``."""
    measure = base_config(raw, root)  # type: ignore[arg-type]
    apply = base_config(raw, root, profile=False, filt=True,  # type: ignore[arg-type]
                        approve={**APPROVE, "date": "2026-01-05"})
    apply["steps"].update({
        "audit": {"enabled": True, "mode": "all", "comparison_fields": ["id", "text"]},
        "decontamination": {"enabled": True, "holdout": holdout, "partition_size": BIG},
        "subset": {"enabled": True, "token_budgets": [4000, 10000, 20000],
                   "length_bands": [128, 512, 2048], "partition_size": BIG,
                   "output_format": "jsonl+parquet"},
    })
    for config in (measure, apply):
        for block in config["steps"].values():
            if "partition_size" in block:
                block["partition_size"] = BIG
    return measure, apply


def _run(config: dict[str, Any]) -> dict[str, str]:
    report = run_flow_direct(copy.deepcopy(config))
    assert report["status"] == "ok", report.get("error")
    return statuses(report)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _local_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _visible(files: dict[str, bytes], subdir: str) -> dict[str, bytes]:
    """The files of one step's output dir, hidden ones (work files, markers, the
    publication lists) left out."""
    out = {}
    for name, data in files.items():
        parts = name.split("/")
        if parts[0] == subdir and not any(p.startswith(".") for p in parts):
            out["/".join(parts[1:])] = data
    return out


def _text(data: bytes, names: dict[str, str]) -> str:
    """A file's text with each local name (and digest) read as the bucket's."""
    text = data.decode("utf-8")
    for local, url in names.items():
        text = text.replace(local, url)
    return text


def _fields(value: Any) -> Any:
    """A report without the fields that differ between any two runs."""
    if isinstance(value, dict):
        return {k: _fields(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_fields(v) for v in value]
    return value


def _differences(mine: dict[str, bytes], theirs: dict[str, bytes], names: dict[str, str]
                 ) -> list[str]:
    """What differs between a step's local files and its objects: data byte for byte;
    reports field by field and the records that name their input file (rejections,
    removals) as text, once the local names are read as the bucket's."""
    differ = []
    for name, data in mine.items():
        if name.endswith(".json"):
            same = _fields(json.loads(_text(theirs[name], names))) == \
                _fields(json.loads(_text(data, names)))
        elif name.endswith((".md", ".yaml")) or name.startswith(("rejected/", "removed/")):
            same = _text(theirs[name], names) == _text(data, names)
        elif name.endswith((".png", ".html")):  # a picture's metadata: the same name
            same = True
        else:
            same = theirs[name] == data
        if not same:
            differ.append(name)
    return differ


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This driver's disk: the scratch dir of URL checkpoints and the output copies."""
    disk = tmp_path / "driver-1"
    monkeypatch.setenv(SCRATCH_DIR_ENV, str(disk / "scratch"))
    monkeypatch.setenv(COPY_DIR_ENV, str(disk / "copies"))
    return disk


def test_the_whole_flow_into_a_bucket_root_matches_a_local_root_and_resumes_anywhere(
        s3_server: str, bucket: str, tmp_path: Path, scratch: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from curator_demo.holdout import write_holdout

    raw = demo_corpus(tmp_path / "raw", docs=DOCS)
    write_holdout(raw, tmp_path / "holdout")
    upload_dir(s3_server, raw, bucket, "raw")
    upload_dir(s3_server, tmp_path / "holdout", bucket, "holdout")
    raw_url, holdout_url = f"s3://{bucket}/raw", f"s3://{bucket}/holdout/holdout.jsonl"
    url = f"s3://{bucket}/run"
    local = tmp_path / "local-run"

    # the same two runs into a local root and into the bucket
    for root in (str(local), url):
        measure, apply = _configs(raw_url, holdout_url, root)
        assert _run(measure) == {"curate/ingest": "ok", "curate/profile": "ok",
                                 "curate/filter": "disabled", "curate/audit": "disabled",
                                 "curate/dedup": "disabled",
                                 "curate/decontamination": "disabled",
                                 "curate/subset": "disabled"}
        assert _run(apply) == {"curate/ingest": "skipped", "curate/profile": "disabled",
                               "curate/dedup": "disabled",
                               **{f"curate/{k}": "ok" for k in STEPS[2:]}}

    on_bucket = s3_objects(s3_server, bucket, "run")
    here = _local_files(local)
    copy_root = next((scratch / "copies").glob(".flow-output-*"))
    # the profile's digest covers its report, which names its input (a folder, a URL);
    # the approved policy names that digest
    names = {str(local): url, str(copy_root): url}
    for name in ("profile/profile_report.json", "policy/approved_policy.yaml"):
        names[_digest(here[name])] = _digest(on_bucket[name])
    names[json.loads(here["profile/profile_report.json"])["profile_digest"]] = \
        json.loads(on_bucket["profile/profile_report.json"])["profile_digest"]
    for subdir in SUBDIRS:
        mine, theirs = _visible(here, subdir), _visible(on_bucket, subdir)
        assert sorted(theirs) == sorted(mine), subdir
        assert not _differences(mine, theirs, names), subdir
        assert f"{subdir}/{MARKER}" in on_bucket, subdir
    assert any(n.startswith("parquet/budget_") and n.endswith(".parquet")
               for n in _visible(on_bucket, "subset"))
    for name in ("flow_plan.json", "flow_report.json", "report.html",
                 "policy/approved_policy.yaml"):
        assert name in on_bucket, name
    assert _text(on_bucket["policy/approved_policy.yaml"], names) == \
        _text(here["policy/approved_policy.yaml"], names)
    flow = json.loads(on_bucket["flow_report.json"])
    assert flow["output_root"] == url and flow["status"] == "ok"
    assert flow["approved_policy"]["path"] == f"{url}/policy/approved_policy.yaml"
    assert str(copy_root) not in on_bucket["flow_plan.json"].decode()
    # the one object naming the driver's disk: the audit's report, the policy it read
    assert [n for n, d in on_bucket.items() if str(copy_root).encode() in d] == \
        ["audit/audit_report.json"]

    # a rerun skips every step: its marker and completion artifact are on the bucket
    # (`curate flow`, which names the bucket's files)
    measure, apply = _configs(raw_url, holdout_url, url)
    skipped = {"curate/ingest": "skipped", "curate/profile": "disabled",
               "curate/dedup": "disabled", **{f"curate/{k}": "skipped" for k in STEPS[2:]}}
    config_file = tmp_path / "apply.yaml"
    config_file.write_text(json.dumps(apply))
    monkeypatch.setenv("CURATE_PREFECT", "never")
    result = CliRunner().invoke(app, ["flow", "--config", str(config_file)])
    assert result.exit_code == 0, result.output
    for key in STEPS[2:]:
        assert f"curate/{key}" in result.output
    assert f"report {url}/flow_report.json" in result.output
    assert f"the run on one page: {url}/report.html" in result.output
    flow = json.loads(s3_objects(s3_server, bucket, "run")["flow_report.json"])
    assert statuses(flow) == skipped and flow["status"] == "ok"
    # ... and so does a new driver: other, empty scratch and copy directories
    other = tmp_path / "driver-2"
    monkeypatch.setenv(SCRATCH_DIR_ENV, str(other / "scratch"))
    monkeypatch.setenv(COPY_DIR_ENV, str(other / "copies"))
    assert _run(apply) == skipped
    after = s3_objects(s3_server, bucket, "run")
    assert after["policy/approved_policy.yaml"] == on_bucket["policy/approved_policy.yaml"]
    for subdir in SUBDIRS:  # nothing rewritten: the same objects
        assert _visible(after, subdir) == _visible(on_bucket, subdir), subdir

    # report.html on the bucket: every step read from its objects, links relative to
    # the root's URL; `curate report URL` writes the same page again
    _check_page(after["report.html"].decode(), url)
    result = CliRunner().invoke(app, ["report", url])
    assert result.exit_code == 0, result.output
    assert f"report {url}/report.html" in result.output
    _check_page(s3_objects(s3_server, bucket, "run")["report.html"].decode(), url)

    # curate status URL: read from the bucket, by a driver that holds none of it
    result = CliRunner().invoke(app, ["status", url, "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    assert status["path"] == url and status["kind"] == "flow" and status["flow_status"] == "ok"
    assert {s["key"]: s["state"] for s in status["steps"]} == {
        **dict.fromkeys(STEPS, "finished"), "dedup": "not_run"}  # dedup: off in this flow
    assert {s["output_dir"] for s in status["steps"] if s["key"] in STEPS} == {
        f"{url}/{d}" for d in SUBDIRS}
    assert f"the run on one page: {url}/report.html" in status["notes"]
    assert not any("no done-marker" in n for s in status["steps"] for n in s["notes"])


def _check_page(html: str, url: str) -> None:
    """The run's page for a bucket root: its URL, every step complete, relative links."""
    from tests.report._support import page_text

    text, _ = page_text(html)
    assert f"output root {url}" in text
    for key in STEPS:
        assert f"curate/{key}" in text
    assert "absent" not in text and "incomplete" not in text, text
    for name in ("ingested/ingest_report.json", "filtered_jsonl/run_manifest.json",
                 "subset/subset_report.json", "policy/approved_policy.yaml"):
        assert f'href="{name}"' in html, name
    assert "data:image/png;base64," in html  # the subset's picture, read from the bucket


def test_status_of_a_bucket_root_whose_step_failed_names_its_mirrored_checkpoint(
        s3_server: str, bucket: str, tmp_path: Path, scratch: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingest refuses the demo corpus's duplicates after parsing it: its report records
    the error, the checkpoint's mirror holds the parsed partitions. ``curate status``
    from another driver (empty disk) reads both from the bucket: resumable."""
    raw = demo_corpus(tmp_path / "raw", docs=60)
    upload_dir(s3_server, raw, bucket, "raw")
    url = f"s3://{bucket}/run"
    config = base_config(f"s3://{bucket}/raw", url, profile=False)  # type: ignore[arg-type]
    config["steps"]["ingest"]["on_duplicate"] = "refuse"
    with pytest.raises(CuratorError) as info:
        run_flow_direct(config)
    assert info.value.error_id == "duplicate_documents"
    monkeypatch.setenv(SCRATCH_DIR_ENV, str(tmp_path / "driver-2" / "scratch"))
    monkeypatch.setenv(COPY_DIR_ENV, str(tmp_path / "driver-2" / "copies"))
    status = root_status(url, flow_config="flow.yaml")
    ingest = status.steps[0]
    assert ingest.state == "resumable" and ingest.checkpoint == f"{url}/checkpoints/ingest"
    assert ingest.checkpoint_files > 0
    assert ingest.error and ingest.error["error_id"] == "duplicate_documents"
    assert status.flow_status == "failed"
    assert status.next_commands == [
        "curate flow --config flow.yaml  (finished steps are skipped; ingest resumes from "
        "the checkpoint)"]
    one = root_status(f"{url}/ingested")  # one step's output dir on the bucket
    assert one.kind == "step" and one.steps[0].state == "failed"


def _forget_filesystems() -> None:
    """Drop fsspec's cached filesystems: their clients keep the credentials they were
    made with (a flow run's process is new; this test's is not)."""
    import fsspec

    for cls in list(fsspec.registry.values()):
        cls.clear_instance_cache()


def _everything_prefect_recorded() -> list[str]:
    """Every log line, flow run (name, parameters, state message) and artifact the
    Prefect API holds, as text."""
    from prefect.client.orchestration import get_client
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=10)
    texts: list[str] = []
    with get_client(sync_client=True) as client:
        # the server answers at most 200 rows a call: page through all of them
        def dump(row: Any) -> str:
            return json.dumps(row.model_dump(mode="json"))

        for read, show in ((client.read_logs, lambda r: r.message),
                           (client.read_flow_runs, dump), (client.read_artifacts, dump)):
            offset = 0
            while rows := read(limit=200, offset=offset):
                texts += [show(row) for row in rows]
                offset += len(rows)
    return texts


def test_storage_credentials_from_a_secret_block_never_reach_a_file_or_a_log(
        s3_server: str, bucket: str, tmp_path: Path, scratch: Path,
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, prefect_api: str) -> None:
    """``curate-flow`` with ``storage_credentials``: a Prefect Secret block holds the
    bucket's keys, the process has none. The measure run (ingest, profile on the process
    pool: spawned workers write to the bucket too) into a bucket root works with them,
    fails without them, and neither value is in any file it wrote (the bucket's objects,
    the local copies and scratch directory), in its logs (this process's output, Prefect's
    log records) or in what Prefect recorded (the flow runs, their parameters, the
    artifacts)."""
    import logging
    import uuid

    from prefect.blocks.system import Secret

    from flows.pipeline_flow import curate_flow

    raw = demo_corpus(tmp_path / "raw", docs=60)
    upload_dir(s3_server, raw, bucket, "raw")  # with the fixture's keys, before they go
    key = f"AKIAFAKE{uuid.uuid4().hex[:12].upper()}"
    secret = f"fakeSecret/{uuid.uuid4().hex}+{uuid.uuid4().hex[:8]}"
    block = f"curate-s3-{uuid.uuid4().hex[:8]}"
    Secret(value={"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret}).save(block)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role either
    for name in ("curator", "flows", "executors"):  # the project's own, everything
        caplog.set_level(logging.DEBUG, logger=name)
    config = base_config(f"s3://{bucket}/raw", f"s3://{bucket}/run",  # type: ignore[arg-type]
                         executor={"executor": "local", "workers": 2})
    config_file = tmp_path / "flow.yaml"
    config_file.write_text(json.dumps(config))
    _forget_filesystems()
    try:
        with pytest.raises(CuratorError) as refused:  # no credentials: nothing runs
            curate_flow(str(config_file))
        assert refused.value.error_id == "object_storage_error"
        assert "Unable to locate credentials" in refused.value.message
        _forget_filesystems()
        report = curate_flow(str(config_file), storage_credentials=block)
        assert report["status"] == "ok", report.get("error")
        assert statuses(report)["curate/ingest"] == "ok"
        assert statuses(report)["curate/profile"] == "ok"
        assert "AWS_ACCESS_KEY_ID" not in os.environ  # the block's values are gone again
    finally:
        _forget_filesystems()  # the next test's clients: the fixture's keys again
    monkeypatch.undo()
    objects = s3_objects(s3_server, bucket, "run")
    assert "profile/profile_report.json" in objects and "flow_report.json" in objects
    written = {f"s3://{bucket}/run/{k}": v for k, v in objects.items()}
    written.update({str(p): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()})
    assert any(str(scratch) in name for name in written)  # the copies and the scratch dir
    out, err = capfd.readouterr()
    texts = [out, err, caplog.text, *_everything_prefect_recorded()]
    assert any(block in t for t in texts)  # the block's name is recorded; its values not
    for value in (key, secret):
        assert not [name for name, data in written.items() if value.encode() in data]
        assert not [t[:200] for t in texts if value in t]


def test_a_secret_block_sets_object_storage_variables_only(prefect_api: str) -> None:
    """A block that would set anything else (``PATH``), or holds a single value, is
    ``config_error`` naming the variable, never a value; an unknown block too."""
    import uuid

    from prefect.blocks.system import Secret

    from flows.credentials import storage_environment

    hidden = f"v-{uuid.uuid4().hex}"
    cases = {"PATH": {"AWS_ACCESS_KEY_ID": hidden, "PATH": hidden}, "single": hidden}
    for what, value in cases.items():
        name = f"curate-bad-{uuid.uuid4().hex[:8]}"
        Secret(value=value).save(name)
        with pytest.raises(CuratorError) as info, storage_environment(name):
            pass
        assert info.value.error_id == "config_error" and name in info.value.message
        assert hidden not in info.value.message and (what == "single" or what in
                                                     info.value.message)
        assert os.environ.get("AWS_ACCESS_KEY_ID") != hidden
    with pytest.raises(CuratorError) as info, storage_environment("curate-no-such-block"):
        pass
    assert info.value.error_id == "config_error"
