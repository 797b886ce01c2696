"""``work_dir``: the run's work files go there, a failed run resumes from there, and the
folder is removed when the run completes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from curator.errors import CuratorError
from curator.steps.base import StepRun
from tests.decontaminate.test_decontamination_errors import rows


def test_work_files_live_in_work_dir_and_a_run_resumes_from_there(
        decon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = StepRun.phase
    seen: list[Path] = []

    def phase(self: StepRun, name: str, *args: Any, **kwargs: Any) -> Any:
        original(self, name, *args, **kwargs)
        if name == "scan":
            seen.append(self.work)
            raise CuratorError("injected_failure", "after the scan")

    keys = {"work_dir": str(tmp_path / "cache"),
            "execution": {"executor": "inline", "checkpoint_path": str(tmp_path / "ckpt")}}
    holdout = rows("h", 2)
    with monkeypatch.context() as m:
        m.setattr(StepRun, "phase", phase)
        with pytest.raises(CuratorError):
            decon(rows("t", 3), holdout, **keys)
    work = seen[0]
    assert work.parent == (tmp_path / "cache").resolve() and work.name.startswith("out-")
    assert sorted(p.name for p in (work / "scan").iterdir())  # the scan's results
    assert (work / "index").is_dir()
    assert not (tmp_path / "out" / ".decontamination-work").exists()

    report = decon(rows("t", 3), holdout, **keys)
    # the holdout's partition, the index's merge and the scan's partition
    assert report["producer"]["resumed_partitions"] == 3
    assert report["completed_at"] and not work.exists()


def test_runs_with_other_outputs_share_a_work_dir_without_meeting(decon, tmp_path: Path
                                                                  ) -> None:
    from curator.steps.decontamination import work_folder

    a, b = work_folder(tmp_path / "w", tmp_path / "x" / "out"), \
        work_folder(tmp_path / "w", tmp_path / "y" / "out")
    assert a != b and a.parent == b.parent == (tmp_path / "w").resolve()
    assert work_folder(tmp_path / "w", tmp_path / "../../etc").parent == a.parent
