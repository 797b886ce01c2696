"""The fast encoders of the parse loop give exactly the bytes of the slow ones they replace.

- The id payload goes through orjson when every value is a string, None, a bool or a
  64-bit integer; the recipe defines it as ``json.dumps(..., ensure_ascii=False,
  sort_keys=True, separators=(',',':'), default=str)``.
- Output lines are written by orjson in the parse phase; the shards used to be written
  by polars' ``struct.json_encode`` plus the kept fields' JSON.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
from typing import Any

import orjson
import polars as pl

from curator.ingest.records import _id_payload, record_line, renamed_line

ALPHABET = [
    "a", "Z", " ", '"', "\\", "/", "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f",
    "\x7f", "\x80", "\x85", "\xa0", "\u2028", "\u2029", "\ufeff", "\ufffd", "\u200b",
    "\u202e", "\u00e9", "\u6771", "\U0001f600", "\U0010ffff", ",", ":", "{", "}", "[",
    "-", "1", "\u0430",
]
INTS = [0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64,
        -(2**63) - 1, 10**30, -(10**30)]
FLOATS = [0.0, -0.0, 1.0, 0.1, 1e16, 1e-7, 123456789.125, 1e308, float("nan"), float("inf"),
          -float("inf")]
OTHERS = [dt.datetime(2024, 1, 2, 3, 4, 5), dt.date(2020, 2, 29), decimal.Decimal("1.50"),
          b"\x00\xff", (1, "a")]


def _text(rng: random.Random, n: int | None = None) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 16) if n is None else n))


def _value(rng: random.Random, plain: bool, depth: int = 0) -> Any:
    kind = rng.randrange(6 if plain else 11)
    if kind < 3:
        return _text(rng)
    if kind == 3:
        return rng.choice([None, True, False])
    if kind in (4, 5):
        return rng.choice(INTS[:9] if plain else INTS)
    if kind == 6:
        return rng.choice(FLOATS)
    if kind == 7:
        return rng.choice(OTHERS)
    if kind == 8 or depth > 2:
        return [_value(rng, plain, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_text(rng, 3): _value(rng, plain, depth + 1) for _ in range(rng.randint(0, 3))}


def _recipe(values: list[Any]) -> bytes:
    return json.dumps(values, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      default=str).encode("utf-8")


def test_id_payload_is_the_recipe_bytes_for_any_values() -> None:
    rng = random.Random(20261202)
    for plain in (True, False):
        for _ in range(20_000):
            values = [_value(rng, plain) for _ in range(rng.randint(1, 3))]
            assert _id_payload(values) == _recipe(values), values


def test_the_fast_path_covers_strings_none_bools_and_64_bit_integers() -> None:
    values = [_text(random.Random(1), 40), None, True, False, -(2**63), 2**64 - 1]
    assert orjson.dumps(values) == _recipe(values)  # the bytes orjson gives are the recipe's
    for code in range(0x110000):  # every code point that can reach an id
        if not 0xD800 <= code <= 0xDFFF:
            text = chr(code)
            assert _id_payload([text]) == _recipe([text]), hex(code)


def _previous_lines(rows: list[tuple[str, str, str, dict[str, Any]]]) -> list[bytes]:
    """The shard lines as the shard phase wrote them before: polars' struct.json_encode
    of text, id and source, then the kept fields' JSON spliced in."""
    def kept_json(values: dict[str, Any]) -> str:
        if not values:
            return ""
        try:
            return orjson.dumps(values, default=str).decode()
        except TypeError:
            return json.dumps(values, ensure_ascii=False, default=str)

    df = pl.DataFrame({"text": [r[0] for r in rows], "id": [r[1] for r in rows],
                       "source": [r[2] for r in rows], "kept": [kept_json(r[3]) for r in rows]})
    core = pl.struct("text", "id", "source").struct.json_encode()
    line = (pl.when(pl.col("kept").str.len_bytes() > 2)
            .then(pl.concat_str(core.str.head(-1), pl.lit(","), pl.col("kept").str.tail(-1)))
            .otherwise(core))
    return [(s + "\n").encode() for s in df.select(line.alias("line"))["line"].to_list()]


def test_record_lines_are_the_bytes_the_shards_had_before() -> None:
    rng = random.Random(7)
    rows = []
    for i in range(5_000):
        keep = [f"k{j}" for j in range(rng.randint(0, 3))]
        kept = {k: _value(rng, plain=rng.random() < 0.5) for k in keep}
        rows.append((_text(rng, rng.randint(1, 60)), _text(rng) + str(i), _text(rng), kept))
    rows.append(("t", "i", "s", {"big": 10**30, "nested": {"n": [2**64]}}))  # json.dumps path
    rows.append(("\u2028\u2029\x00\x7f\U0001f600\ufeff", "id", "unknown", {}))
    got = [record_line(t, i, s, k) for t, i, s, k in rows]
    assert got == _previous_lines(rows)
    assert all(line.count(b"\n") == 1 for line in got)  # one record, one line


def test_a_renamed_line_is_the_line_of_the_new_id() -> None:
    rng = random.Random(3)
    for n in range(3_000):
        doc_id = rng.choice(["abc", "id-1", "\u2028x", '"q"', _text(rng, 5)])
        # texts that contain what the id key looks like, escaped and not
        text = rng.choice([_text(rng, 20), f',"id":"{doc_id}"', json.dumps({"id": doc_id})])
        kept = {"url": rng.choice([None, doc_id, ',"id":' + doc_id])}
        line = record_line(text + "x", doc_id, "src", kept)
        new = f"{doc_id}-{n % 7 + 1}"
        assert renamed_line(line, doc_id, new) == record_line(text + "x", new, "src", kept)
