"""Adding a step is its package, its step module and one registry line.

A toy step (keep documents of at least ``min_words`` words) is added to a copy of the
repository: ``curator/toy/`` (its stage, its audit checker, its funnel), the step
module ``curator/steps/toy.py`` and one line in ``curator/steps/registry.py``; no
other file is edited. It then has a CLI command, a Prefect flow, a flow block, a
served deployment, the contract tests, a line in ``curate status``, a row in the run
report's funnel and an audit hook that finds tampering (docs/architecture.md, "How to
add a step").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COPIED = ("curator", "flows", "executors", "deployments", "curator_demo", "curator_testing",
          "tests", "examples", "pyproject.toml")

TOY_PACKAGE = '''"""The toy step's own code: its stage, its audit checker and its funnel row."""
'''

TOY_STAGE = '''"""Keep the documents of at least ``min_words`` words of one partition."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.corpus.formats import shard_name
from curator.corpus.reading import iter_records
from curator.corpus.records import RecordSpec, Rejection
from curator.io.writers import atomic_file
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask


@dataclass
class KeepStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    records: RecordSpec
    min_words: int
    output_dir: str
    index: dict[str, int]
    name: str = "keep"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        out = Path(self.output_dir) / shard_name(self.index[task.source_id or "part"])
        read = kept = 0
        with atomic_file(out) as f:
            for path in task.data:
                for _, line, record in iter_records(path, task.byte_range, self.records):
                    if type(record) is Rejection:
                        continue
                    read += 1
                    if len(record[self.records.text_field].split()) >= self.min_words:
                        f.write((line if line is not None else json.dumps(record).encode())
                                + b"\\n")
                        kept += 1
        self.stat_update("read", read)
        self.stat_update("kept", kept)
        return FileGroupTask(data=[str(out)])


def check_toy(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The audit hook: the shards beside the report hold the documents it claims."""
    claimed = json.loads(path.read_text())["documents_out"]
    actual = sum(len(p.read_bytes().splitlines()) for p in path.parent.glob("part_*.jsonl"))
    findings = [] if claimed == actual else [{
        "name": "toy_count_mismatch",
        "message": f"{path} claims {claimed} documents, the shards hold {actual}"}]
    return {"claimed": claimed, "actual": actual}, findings
'''

TOY_STEP = '''"""curate toy: keep documents of at least ``min_words`` words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from curator.config import StepConfig
from curator.corpus.formats import JSONL_EXTENSIONS
from curator.corpus.records import RecordSpec
from curator.errors import CuratorError
from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.steps.base import StepRun, partition_ids
from curator.steps.funnel import Funnel, FunnelRow, Loss
from curator.steps.spec import CorpusView, FlowContext, Phase, Port, Rendering, StepSpec
from curator.toy.stage import KeepStage, check_toy

REPORT_NAME = "toy_report.json"


class ToyConfig(StepConfig):
    input_glob: str | list[str] | None = None
    output_dir: str = "./output/toy"
    text_field: str = "text"
    min_words: int = Field(5, description="Keep documents of at least this many words.")


class ToyRun(StepRun):
    config: ToyConfig

    def refuse(self) -> None:
        found = resolve_input_files(self.config.input_glob or [], JSONL_EXTENSIONS)
        self.files = [f for f in found if not self.inside_output(f)]
        if not self.files:
            raise CuratorError("input_matched_no_files",
                               f"input_glob {self.config.input_glob!r} matches no files")
        self.partitions = FilePartitioningStage(file_paths=self.files)
        self.stats: dict[str, float] = {}

    def clear_outputs(self) -> None:
        for path in self.out.glob("part_*.jsonl"):
            path.unlink()

    def execute(self) -> None:
        cfg = self.config
        sids = partition_ids(self.partitions)
        self.stats = self.phase("keep", self.partitions, KeepStage(
            records=RecordSpec(text_field=cfg.text_field), min_words=cfg.min_words,
            output_dir=str(self.out), index={s: i for i, s in enumerate(sids)})).stats

    def artifacts(self) -> list[tuple[Path | None, Any]]:
        report: dict[str, Any] = {
            "schema_version": 1, "min_words": self.config.min_words,
            "documents_in": int(self.stats.get("keep.read", 0)),
            "documents_out": int(self.stats.get("keep.kept", 0)),
            "producer": self.producer()}
        if self.error is not None:
            report["error"] = self.error_block()
        return [(self.out / REPORT_NAME, report)]


def run_toy(config: ToyConfig, executor: Any = None, on_progress: Any = None
            ) -> dict[str, Any]:
    return ToyRun(config, executor, on_progress).run()


def render(report: Any) -> Rendering:
    line = f"toy: kept {report.documents_out} of {report.documents_in} documents"  # its model
    return Rendering(f"# curate/toy\\n\\n{line}\\n", {}, line)


def funnel(report: Any) -> Funnel:
    n_in, n_out = report.documents_in, report.documents_out  # the model keeps every key
    return [FunnelRow("toy", "toy (at least min_words words)", n_in, n_out,
                      [Loss("under min_words", n_in - n_out)])], []


def _derive(flow: FlowContext) -> dict[str, Any]:
    return {"input_glob": flow.reads.glob, "text_field": flow.reads.text_field}


def _produces(config: dict[str, Any]) -> CorpusView:
    return CorpusView(glob=f"{config['output_dir']}/part_*.jsonl",
                      text_field=config.get("text_field", "text"))


SPEC = StepSpec(
    key="toy",
    help="Keep documents of at least min_words words.",
    config=ToyConfig,
    run=run_toy,
    phases=(Phase("keep", "keep", "keep.read"),),
    output_subdir="toy",
    completion_name=lambda cfg: REPORT_NAME,
    input_key="input_glob",
    derive=_derive,
    render=render,
    consumes=(Port("corpus", "corpus"),),
    provides=(Port("corpus", "corpus", _produces),),
    audit=check_toy,
    funnel=funnel,
)
'''


def curate(repo: Path, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=repo,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(repo), "COLUMNS": "200",
                               **(env or {})})


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository with the toy step added: two new files, one package
    marker and one registry line."""
    copy = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=ignore)
        else:
            shutil.copy2(src, copy / name)
    (copy / "curator" / "toy").mkdir()
    (copy / "curator" / "toy" / "__init__.py").write_text(TOY_PACKAGE)
    (copy / "curator" / "toy" / "stage.py").write_text(TOY_STAGE)
    (copy / "curator" / "steps" / "toy.py").write_text(TOY_STEP)
    registry = copy / "curator" / "steps" / "registry.py"
    text = registry.read_text()
    last = '    "curator.steps.subset",\n'
    assert last in text
    registry.write_text(text.replace(last, last + '    "curator.steps.toy",\n'))
    return copy


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from curator_demo import generate_demo_corpus

    out = tmp_path_factory.mktemp("raw")
    generate_demo_corpus(out, docs=120, seed=3)
    return out


def test_the_copy_differs_from_the_repository_by_the_toy_files_and_one_line(repo: Path) -> None:
    new = sorted(str(p.relative_to(repo)) for p in repo.rglob("*toy*") if p.is_file()
                 and "tests" not in p.parts)
    assert new == ["curator/steps/toy.py"]
    before = (REPO / "curator/steps/registry.py").read_text().splitlines()
    after = (repo / "curator/steps/registry.py").read_text().splitlines()
    assert [line for line in after if line not in before] == ['    "curator.steps.toy",']


def test_it_has_a_cli_command_a_prefect_flow_and_a_served_deployment(repo: Path) -> None:
    helped = curate(repo, "toy", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "min_words" in helped.stdout, helped.stdout
    assert "Keep documents of at least this many words." in helped.stdout, helped.stdout
    probe = subprocess.run(
        [sys.executable, "-c",
         "import flows.steps as s; print(s.toy_flow.name); "
         "from deployments.serve import build_deployments; "
         "print(sorted(d.flow_name for d in build_deployments()))"],
        cwd=repo, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(repo)})
    assert probe.returncode == 0, probe.stderr
    lines = probe.stdout.splitlines()
    assert lines[0] == "curate-toy"
    assert "curate-toy" in lines[1]


def test_it_runs_in_a_flow_with_status_report_and_audit(repo: Path, raw: Path,
                                                        tmp_path: Path) -> None:
    root = tmp_path / "root"
    flow = tmp_path / "flow.yaml"
    flow.write_text(json.dumps({
        "corpus": {"input": str(raw), "source_field": "source"},
        "output_root": str(root),
        "steps": {"ingest": {"enabled": True, "on_duplicate": "drop"},
                  "toy": {"enabled": True, "min_words": 30}},
        "execution": {"executor": "inline"}}))
    env = {"PREFECT_API_URL": ""}  # the direct runner: no server needed here
    ran = curate(repo, "flow", "--config", str(flow), env=env)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    report = json.loads((root / "toy" / "toy_report.json").read_text())
    assert report["producer"]["completed_at"] and report["producer"]["step_id"] == "curate/toy"
    assert 0 < report["documents_out"] < report["documents_in"]
    plan = json.loads((root / "flow_plan.json").read_text())
    toy = next(s for s in plan["steps"] if s["key"] == "toy")
    assert toy["config"]["input_glob"].startswith(str(root / "ingested"))  # wired by port

    status = curate(repo, "status", str(root), env=env)
    assert status.returncode == 0, status.stderr
    assert any("toy" in line and "finished" in line for line in status.stdout.splitlines())

    page = curate(repo, "report", str(root), env=env)
    assert page.returncode == 0, page.stderr
    html = (root / "report.html").read_text()
    assert "toy (at least min_words words)" in html and "under min_words" in html

    audited = curate(repo, "audit", "--set", f"output_root={root}",
                     "--set", f"output_dir={tmp_path / 'audit'}", env=env)
    assert audited.returncode == 0, audited.stdout[-2000:] + audited.stderr[-2000:]
    block = json.loads((tmp_path / "audit" / "audit_report.json").read_text())["steps"]["toy"]
    assert block["claimed"] == block["actual"] == report["documents_out"]
    assert block["findings"] == []

    shard = next((root / "toy").glob("part_*.jsonl"))
    shard.write_bytes(shard.read_bytes() + shard.read_bytes().splitlines(keepends=True)[0])
    tampered = curate(repo, "audit", "--set", f"output_root={root}",
                      "--set", f"output_dir={tmp_path / 'audit2'}", env=env)
    assert tampered.returncode == 1
    assert "toy_count_mismatch" in (tmp_path / "audit2" / "audit_report.json").read_text()


@pytest.mark.slow
def test_it_passes_the_contract_tests(repo: Path, tmp_path: Path) -> None:
    worlds = tmp_path / "worlds.json"
    worlds.write_text(json.dumps({"toy": [{"min_words": 20}, {"min_words": 40}]}))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "tests/steps/test_contract.py", "-k", "toy"],
        cwd=repo, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(repo), "CURATE_TEST_WORLDS": str(worlds)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary
    assert int(summary.split(" passed")[0].split()[-1]) >= 6
