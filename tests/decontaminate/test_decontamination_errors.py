"""Every refusal and error id, and the holdout-modified check (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from curator.config import validate_config
from curator.decontamination.index import load_index
from curator.errors import CuratorError
from curator.flow.plan import load_flow_config, plan_flow
from curator.steps.base import StepRun
from tests.decontaminate.conftest import write_jsonl

TEXT = "the quick brown fox jumps over the lazy dog while the cat sleeps on the mat " * 3


def rows(prefix: str, n: int, **more: Any) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "text": f"{i} {TEXT}", **more} for i in range(n)]


def refused(decon, tmp_path: Path, train, holdout, **keys: Any) -> CuratorError:
    with pytest.raises(CuratorError) as info:
        decon(train, holdout, **keys)
    assert info.value.exit_code == 2
    assert not (tmp_path / "out").exists(), "a refusal writes nothing"
    return info.value


def test_no_holdout(tmp_path: Path) -> None:
    from curator.steps.decontamination import DecontaminationConfig, run_decontamination

    write_jsonl(tmp_path / "t.jsonl", rows("t", 2))
    with pytest.raises(CuratorError) as info:
        run_decontamination(DecontaminationConfig(train_glob=str(tmp_path / "t.jsonl"),
                                                  output_dir=str(tmp_path / "out"),
                                                  id_field="id"))
    assert info.value.error_id == "decontamination_needs_a_holdout"
    assert not (tmp_path / "out").exists()


def test_a_flow_without_a_holdout_is_refused_at_preflight(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "raw" / "t.jsonl", rows("t", 2))
    config = load_flow_config({"corpus": {"input": str(tmp_path / "raw"), "id_field": "id"},
                               "output_root": str(tmp_path / "root"),
                               "steps": {"decontamination": {"enabled": True}}})
    problems = plan_flow(config).problems
    assert "decontamination_needs_a_holdout" in {p[0] for p in problems}
    config = load_flow_config({"corpus": {"input": str(tmp_path / "raw"), "id_field": "id"},
                               "output_root": str(tmp_path / "root"),
                               "steps": {"decontamination": {
                                   "enabled": True, "holdout": str(tmp_path / "raw")}}})
    step = next(s for s in plan_flow(config).steps if s.key == "decontamination")
    assert step.config["train_glob"] == str(tmp_path / "raw")
    assert step.config["id_field"] == "id"


def test_inputs_that_match_nothing(decon, tmp_path: Path) -> None:
    err = refused(decon, tmp_path, rows("t", 2), rows("h", 2),
                  train_glob=str(tmp_path / "none" / "*.jsonl"))
    assert err.error_id == "train_glob_no_matches"
    err = refused(decon, tmp_path, rows("t", 2), rows("h", 2),
                  holdout_glob=str(tmp_path / "none" / "*.jsonl"))
    assert err.error_id == "holdout_glob_no_matches"


def test_an_empty_holdout(decon, tmp_path: Path) -> None:
    err = refused(decon, tmp_path, rows("t", 2), [{"id": "h", "text": "  "}])
    assert err.error_id == "holdout_empty"


def test_ids_missing_or_duplicated(decon, tmp_path: Path) -> None:
    assert refused(decon, tmp_path, rows("t", 2), rows("h", 2),
                   id_field=None).error_id == "id_field_missing_or_duplicated"
    assert refused(decon, tmp_path, rows("t", 2), [{"text": TEXT}]
                   ).error_id == "id_field_missing_or_duplicated"
    assert refused(decon, tmp_path, rows("t", 2), rows("h", 2) + rows("h", 1)
                   ).error_id == "id_field_missing_or_duplicated"


def test_training_ids_missing_or_duplicated_fail_the_run(decon, tmp_path: Path) -> None:
    for train in (rows("t", 3) + rows("t", 1), [*rows("t", 2), {"text": TEXT}]):
        with pytest.raises(CuratorError) as info:
            decon(train, rows("h", 2))
        assert info.value.error_id == "id_field_missing_or_duplicated"
        report = json.loads((tmp_path / "out" / "decontamination_report.json").read_text())
        assert report["error"]["error_id"] == "id_field_missing_or_duplicated"
        assert "completed_at" not in report["producer"]


def test_disjoint_key_spaces(decon, tmp_path: Path) -> None:
    err = refused(decon, tmp_path, rows("t", 2, url="https://a.example/x"), rows("h", 2))
    assert err.error_id == "identity_key_spaces_disjoint"
    err = refused(decon, tmp_path, rows("t", 2), rows("h", 2), shared_id_space=False)
    assert err.error_id == "identity_key_spaces_disjoint"


def test_config_values_are_checked() -> None:
    from curator.steps.decontamination import DecontaminationConfig

    for bad in ({"threshold": 0}, {"threshold": 1.5}, {"shingle_kind": "byte"},
                {"candidates": "gpu"}, {"minhash": {"bands": 3}}):
        with pytest.raises(CuratorError) as info:
            validate_config(DecontaminationConfig, {"train_glob": "x", **bad})
        assert info.value.exit_code == 2


def test_an_index_built_with_other_shingles_is_refused(decon, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path] = []
    original = StepRun.phase

    def phase(self: StepRun, *args: Any, **kwargs: Any) -> Any:
        seen.append(self.work / "index")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(StepRun, "phase", phase)
    with monkeypatch.context() as m:
        m.setattr("curator.steps.base.StepRun.cleanup", lambda self: None)
        decon(rows("t", 3), rows("h", 2))
    with pytest.raises(CuratorError) as info:
        load_index(seen[0], {"shingling": {"kind": "char", "size": 13}})
    assert info.value.error_id == "shingling_mismatch"
    assert "was built with shingling=" in info.value.message  # what differs, both sides
    assert "this scan uses {'kind': 'char', 'size': 13}" in info.value.message


def test_a_holdout_modified_during_the_run(decon, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    original = StepRun.phase

    def phase(self: StepRun, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        with open(tmp_path / "holdout" / "h.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": "late", "text": TEXT}) + "\n")
        return result

    monkeypatch.setattr(StepRun, "phase", phase)
    with pytest.raises(CuratorError) as info:
        decon(rows("t", 3), rows("h", 2))
    assert info.value.error_id == "holdout_modified"
    assert info.value.exit_code == 3
    report = json.loads((tmp_path / "out" / "decontamination_report.json").read_text())
    assert report["splits"]["holdout"]["modified"] is True
    assert report["error"]["error_id"] == "holdout_modified"


def test_a_changed_holdout_is_never_resumed(decon, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    original = StepRun.phase

    def phase(self: StepRun, *args: Any, **kwargs: Any) -> Any:
        original(self, *args, **kwargs)
        raise CuratorError("injected_failure", "after the scan")

    ckpt = {"execution": {"executor": "inline", "checkpoint_path": str(tmp_path / "ckpt")}}
    with monkeypatch.context() as m:
        m.setattr(StepRun, "phase", phase)
        with pytest.raises(CuratorError):
            decon(rows("t", 3), rows("h", 2), **ckpt)
    report = decon(rows("t", 3), [*rows("h", 2), {"id": "t0", "text": "0 " + TEXT}], **ckpt)
    assert report["producer"]["resumed_partitions"] == 0
    assert report["result"]["train_documents_removed"] >= 1


def test_the_key_space_check_reads_heads_until_the_spaces_meet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver reads the head of one training file when its keys meet the holdout's,
    of the next only when they do not (a cluster's driver moves no corpus bytes for it);
    a later file that meets still lets the run through."""
    from curator.steps import decontamination as step

    read: list[str] = []
    real = step._head_records

    def spy(path: str, spec: Any):  # type: ignore[no-untyped-def]
        read.append(Path(path).name)
        return real(path, spec)

    monkeypatch.setattr(step, "_head_records", spy)
    write_jsonl(tmp_path / "holdout" / "h.jsonl", rows("h", 2))
    write_jsonl(tmp_path / "train" / "a.jsonl", rows("a", 2))  # keyed by id: meets
    write_jsonl(tmp_path / "train" / "b.jsonl", rows("b", 2, url="https://b.example/x"))
    cfg = {"train_glob": str(tmp_path / "train"), "holdout_glob": str(tmp_path / "holdout"),
           "id_field": "id", "execution": {"executor": "inline"}}
    step.run_decontamination(step.DecontaminationConfig(
        **cfg, output_dir=str(tmp_path / "out1")))
    assert read == ["a.jsonl"]
    (tmp_path / "train" / "a.jsonl").rename(tmp_path / "train" / "c.jsonl")  # now second
    read.clear()
    step.run_decontamination(step.DecontaminationConfig(
        **cfg, output_dir=str(tmp_path / "out2")))
    assert read == ["b.jsonl", "c.jsonl"]


def test_the_holdout_digest_taken_while_parsing_is_files_digest(tmp_path: Path) -> None:
    """One read of an uncompressed holdout file gives its records and its share of the
    content digest (``holdout_modified`` compares it with files_digest's, after)."""
    import gzip
    import hashlib

    from curator.corpus.records import RecordSpec
    from curator.steps.decontamination import digested_records, files_digest

    write_jsonl(tmp_path / "b.jsonl", rows("b", 3))
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(b'{"id": "a0", "text": "x y"}\nnot json\n'))
    files = [str(tmp_path / "b.jsonl"), str(tmp_path / "a.jsonl.gz")]
    digest = hashlib.sha256()
    got = [(Path(f).name, type(r).__name__)
           for f, _, r in digested_records(files, RecordSpec(id_field="id"), digest)]
    assert got == [("a.jsonl.gz", "dict"), ("a.jsonl.gz", "Rejection")] + \
        [("b.jsonl", "dict")] * 3
    assert "sha256:" + digest.hexdigest() == files_digest(files)
