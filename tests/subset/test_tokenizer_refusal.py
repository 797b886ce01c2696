"""A ``tokenizer.json`` whose revision matches but that is no tokenizer is refused up front,
naming the file, before the output is touched (#29 item 9)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from curator.subset.counting import identify
from flows.cli import app


def _corpus(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "part_0.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": f"word {i} and more words"}) + "\n"
        for i in range(20)))
    return folder


def _revision(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("garbage", [b"\xff\xfe not utf-8 \x80\x81", b"{}",
                                     b'{"model": {"type": "Nope"}}', b"[1, 2, 3]"])
def test_a_garbage_tokenizer_json_is_refused_in_the_refusal(tmp_path: Path,
                                                            garbage: bytes) -> None:
    inp = _corpus(tmp_path / "in")
    tok = tmp_path / "tokenizer.json"
    tok.write_bytes(garbage)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [
        "subset", "--set", f"input_glob={inp}/*.jsonl", "--set", f"output_dir={out}",
        "--set", "id_field=id", "--set", "token_budgets=[10]",
        "--set", f"tokenizer.name={tok}", "--set", f"tokenizer.revision={_revision(tok)}",
        "--set", "execution.executor=inline"])
    assert isinstance(result.exception, SystemExit) or result.exception is None, \
        repr(result.exception)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: [tokenizer_invalid]"), result.stderr
    assert str(tok) in result.stderr  # names the file
    assert "partition_failed" not in result.stderr and "resume" not in result.stderr.replace(
        "a resume cannot help", "")
    assert not out.exists(), "a refusal writes nothing"


def test_a_real_tokenizer_json_is_identified_and_loads(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tk = Tokenizer(models.WordLevel({"[UNK]": 0, "word": 1}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    tok = identify(str(path), _revision(path))
    assert tok.revision == _revision(path) and tok.library == "tokenizers"
