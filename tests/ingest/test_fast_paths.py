"""The fast paths of the parse and shard phases give exactly what the general code gives.

- ``parse_jsonl`` accepts the common record inline (``FastEncoder``: the text's JSON
  encoded once, for the id payload and the output line); everything else goes through
  ``PartitionRecords.add``. Both must stage the same lines, ids, positions, counts.
- Input is read through a memory map (``map_lines``): the same bytes as ``read_bytes``
  for any byte range.
- ``write_shard`` returns the shard's digest, which the report uses.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from curator.artifacts import file_digest
from curator.corpus.reading import map_lines, read_bytes
from curator.ingest import records as rec
from curator.ingest.shards import Piece, write_shard

CHARS = ["a", " ", '"', "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "\u2028", "\u00e9",
         "\u6771", "\U0001f600", "%", "%b", "{", ","]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(0, 12)))


def _value(rng: random.Random) -> Any:
    return rng.choice([_text(rng), _text(rng), None, True, False, 0, -7, 2**63 - 1, 2**64 - 1,
                       "", 1.5, 10**30, [1, "a"], {"k": None}])


def _corpus(rng: random.Random, n: int) -> bytes:
    lines = []
    for _ in range(n):
        kind = rng.randrange(20)
        if kind == 0:
            lines.append(b"")
        elif kind == 1:
            lines.append(b" null ")
        elif kind == 2:
            lines.append(b'{"text": "cut')
        elif kind == 3:
            lines.append(b'{"text": "caf\xe9", "url": "x"}')  # cp1252
        else:
            record = {k: _value(rng) for k in rng.sample(["url", "source", "n", "%k", 'q"'], 3)}
            if rng.random() < 0.9:
                record["text"] = rng.choice([_text(rng) + "x", _text(rng) + "x", " ", 3, None])
            lines.append(json.dumps(record, ensure_ascii=rng.random() < 0.5).encode())
    return b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\n"


SPECS = [
    rec.IdentitySpec(source_from="source", keep_fields=("url",)),
    rec.IdentitySpec(id_fields=("n", "text", "url"), id_prefix='p%b"\u00e9', source="s%",
                     keep_fields=("%k", 'q"', "missing")),
    rec.IdentitySpec(id_fields=("text",), source_from="n", keep_fields=()),
]


def _parse(data: bytes, spec: rec.IdentitySpec, fast: bool,
           monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(rec.FastEncoder, "for_spec", classmethod(lambda cls, spec: None))
        records = rec.PartitionRecords(spec)
        rec.parse_jsonl(data, records, path="in.jsonl", file_index=3)
    table = records.table()
    return (records.lines.getvalue(), table.to_pylist(), records.counts,  # type: ignore[attr-defined]
            records.rejections, sorted(records.column_names))


@pytest.mark.parametrize("spec", SPECS)
def test_the_inline_accept_path_stages_what_add_stages(spec: rec.IdentitySpec,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    data = _corpus(random.Random(SPECS.index(spec)), 3000)
    fast = _parse(data, spec, True, monkeypatch)
    assert fast == _parse(data, spec, False, monkeypatch)
    assert fast[2]["accepted"] > 500


def test_parsing_a_memory_map_range_is_parsing_its_bytes(tmp_path: Path) -> None:
    data = _corpus(random.Random(5), 2000)
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    spec = SPECS[0]
    for lo, hi in [(0, len(data)), (0, 700), (1, 5000), (4000, len(data) + 99), (len(data), 9**9)]:
        buf, start, end = map_lines(str(path), (lo, hi))
        assert bytes(buf[start:end]) == read_bytes(str(path), (lo, hi)), (lo, hi)
        got = rec.PartitionRecords(spec)
        rec.parse_jsonl(buf, got, path="p", file_index=0, base_offset=lo, start=start, end=end)
        want = rec.PartitionRecords(spec)
        rec.parse_jsonl(read_bytes(str(path), (lo, hi)), want, path="p", file_index=0,
                        base_offset=lo)
        assert got.lines.getvalue() == want.lines.getvalue()  # type: ignore[attr-defined]
        assert got.table().equals(want.table()) and got.rejections == want.rejections
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert map_lines(str(empty)) == (b"", 0, 0)


def test_write_shard_returns_the_digest_of_what_it_wrote(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    lines = [b'{"text":"t%d","id":"i%d"}\n' % (i, i) for i in range(5000)]
    records.write_bytes(b"".join(lines))
    ends = [sum(map(len, lines[: i + 1])) for i in range(len(lines))]
    pieces = [Piece(0, ends[9]), Piece(ends[9], ends[10], ("i10", "i10-1")),
              Piece(ends[20], ends[-1])]
    target = tmp_path / "part_0.jsonl"
    digest = write_shard(target, [(records, pieces), (records, [Piece(0, ends[0])])])
    assert digest == file_digest(target)
    expected = io.BytesIO()
    expected.write(b"".join(lines[:10]) + lines[10].replace(b'"i10"', b'"i10-1"'))
    expected.write(b"".join(lines[21:]) + lines[0])
    assert target.read_bytes() == expected.getvalue()
