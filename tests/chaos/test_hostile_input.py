"""Hostile input: named nasties through the record classifier and every reader format
(the property-based fuzzing of the readers and loaders is tests/fuzz), and hostile YAML
for every registered step's config loader. Expected: never an unhandled exception; each
bad line a rejection with a reason; an unusable config an error id (exit 2), fast."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from curator.config import load_config
from curator.corpus.reading import iter_records
from curator.corpus.records import REASONS, RecordSpec, Rejection, classify_line
from curator.errors import CuratorError
from curator.steps.registry import STEPS

SPEC = RecordSpec(text_field="text", id_field="id", source_field="source", require_id=True)

NASTY_LINES: dict[str, bytes] = {
    "deeply nested": b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "nested object": b'{"text": "x", "m": ' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
    "NUL in text": b'{"text": "a\x00b", "id": "1"}',
    "escaped NUL": b'{"text": "a\\u0000b", "id": "1"}',
    "invalid UTF-8": b'{"text": "caf\xe9 \xff\xfe", "id": "1"}',
    "lone surrogate": b'{"text": "\\ud800 alone", "id": "1"}',
    "raw surrogate bytes": b'{"text": "\xed\xa0\x80", "id": "1"}',
    "BOM mid-file": b'\xef\xbb\xbf{"text": "bom", "id": "1"}',
    "id ../": b'{"text": "t", "id": "../../etc/passwd", "source": "../../x"}',
    "id /": b'{"text": "t", "id": "/abs/path", "source": "/abs"}',
    "id NUL": b'{"text": "t", "id": "a\\u0000b", "source": "s\\u0000"}',
    "id 10k": b'{"text": "t", "id": "' + b"i" * 10_000 + b'", "source": "' + b"s" * 10_000 + b'"}',
    "not an object": b"[1, 2, 3]",
    "bare string": b'"text"',
    "huge number": b'{"text": "t", "id": 1' + b"0" * 5000 + b"}",
    "truncated": b'{"text": "t", "id": "1',
    "duplicate keys": b'{"text": "a", "text": 5, "id": "1"}',
}


def check(result: object) -> None:
    assert isinstance(result, dict | Rejection)
    if isinstance(result, Rejection):
        assert result.reason in REASONS


@pytest.mark.parametrize("name", sorted(NASTY_LINES))
def test_a_nasty_line_is_a_record_or_a_rejection_with_a_reason(name: str) -> None:
    check(classify_line(NASTY_LINES[name], SPEC))


def write_all_formats(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    body = b"\n".join(NASTY_LINES.values()) + b"\n"
    files = {"jsonl": folder / "nasty.jsonl"}
    files["jsonl"].write_bytes(body)
    files["gz"] = folder / "nasty.jsonl.gz"
    files["gz"].write_bytes(gzip.compress(body))
    return files


@pytest.mark.parametrize("fmt", ["jsonl", "gz"])
def test_every_nasty_line_of_a_file_is_counted_once(fmt: str, tmp_path: Path) -> None:
    path = write_all_formats(tmp_path)[fmt]
    results = [r for _, _, r in iter_records(str(path), None, SPEC)]
    for r in results:
        check(r)
    # one result per non-blank line: counts balance (kept + rejected == lines)
    assert len(results) == len(NASTY_LINES)


# -- hostile YAML configs ----------------------------------------------------------------

LAUGHS = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(9))}]\n" for i in range(1, 10))
HOSTILE_YAML = {
    "billion laughs (unknown keys)": LAUGHS,
    "billion laughs (a known key)": LAUGHS.replace("a9:", "output_dir:"),
    "python object tag": "output_dir: !!python/object/apply:os.system ['touch /tmp/pwned']\n",
    "python name tag": "output_dir: !!python/name:os.system\n",
    "not a mapping": "- a\n- b\n",
    "tabs and garbage": "\t: : :\n{[}\n",
    "invalid UTF-8": b"output_dir: caf\xe9\xff\n",
    "NUL": "output_dir: a\x00b\n",
    "deep nesting": "x: " + "[" * 1200 + "]" * 1200 + "\n",  # past the recursion limit
}


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.key) for s in STEPS])
@pytest.mark.parametrize("name", sorted(HOSTILE_YAML))
def test_a_hostile_config_is_an_error_id_in_bounded_time(spec, name: str,  # type: ignore[no-untyped-def]
                                                         tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    text = HOSTILE_YAML[name]
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    t0 = time.monotonic()
    with pytest.raises(CuratorError) as info:
        load_config(spec.config, path)
    assert time.monotonic() - t0 < 10
    assert info.value.exit_code == 2
    assert len(info.value.message) < 20_000, "an error message is not the expanded YAML"
    assert not Path("/tmp/pwned").exists()
    json.dumps(info.value.details, default=str)


# -- hostile files through every step that reads a raw corpus ------------------------------

def hostile_corpus(raw: Path, folder: Path) -> Path:
    """The world's raw corpus plus hostile files: truncated .gz and .zst streams, a
    Parquet file of the wrong schema, and the nasty lines (ids and sources that look like
    paths, NUL, 10,000 characters)."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    out = folder / "hostile"
    shutil.copytree(raw, out)
    body = b"\n".join(NASTY_LINES.values()) + b"\n"
    (out / "nasty.jsonl").write_bytes(body)
    gz = gzip.compress(body * 50)
    (out / "truncated.jsonl.gz").write_bytes(gz[: len(gz) // 2])
    zst = zstandard.ZstdCompressor().compress(body * 50)
    (out / "truncated.jsonl.zst").write_bytes(zst[: len(zst) // 2])
    pq.write_table(pa.table({"text": [1, 2], "id": [[1], [2]]}), out / "wrong.parquet")
    return out


def outside(root: Path, inside: tuple[Path, ...]) -> set[str]:
    return {str(p) for p in root.rglob("*")
            if not any(p == d or p.is_relative_to(d) for d in inside)}


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.key) for s in STEPS])
def test_hostile_files_are_rejections_or_an_error_id_and_nothing_escapes_the_output(
        spec, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from curator.config import validate_config
    from tests.steps._worlds import make_world

    world = make_world(spec.key, spec.input_key, tmp_path / "world")
    if world.raw != tmp_path / "world" / "raw":
        pytest.skip(f"{spec.key} reads another step's output, not a raw corpus")
    world.raw = hostile_corpus(world.raw, tmp_path)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    mark = outside(tmp_path, (out, ckpt))
    try:
        result = spec.run(validate_config(spec.config, world.config(out, ckpt)))
    except CuratorError as exc:
        assert exc.error_id != "internal_error", exc
        result = spec.read_result(world.config(out, ckpt))
        assert result is None or result.get("error", {}).get("error_id") == exc.error_id
    else:
        assert result["producer"].get("completed_at")
    assert outside(tmp_path, (out, ckpt)) == mark, "a file was written outside the output"
    for p in out.rglob("*"):
        assert ".." not in p.relative_to(out).parts and "\x00" not in str(p)
        assert len(p.name) <= 255
