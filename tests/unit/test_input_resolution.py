"""A directory given as input is the corpus in it, not a step's rejections or work files."""

from __future__ import annotations

from pathlib import Path

from curator.io.partitioning import resolve_input_files


def test_a_directory_walk_skips_rejected_and_hidden_folders(tmp_path: Path) -> None:
    for rel in ("part_0.jsonl", "sub/part_1.jsonl", "rejected/part_0.jsonl",
                ".staging/p.jsonl", "sub/rejected/x.jsonl", "sub/.profile-work/y.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('{"text": "t"}\n')
    found = [Path(p).relative_to(tmp_path).as_posix()
             for p in resolve_input_files(str(tmp_path), (".jsonl",))]
    assert found == ["part_0.jsonl", "sub/part_1.jsonl"]
    # named by a glob, they are read
    assert resolve_input_files(str(tmp_path / "rejected" / "*.jsonl"), (".jsonl",)) == [
        str(tmp_path / "rejected" / "part_0.jsonl")]
