"""curate dedup on hand-built corpora with known answers: exact copies, copies with k
words changed at known Jaccard, a chain (one component though its ends are not
similar), a document in many sources, empty and one-word documents, the keep rules."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from curator.dedup import jaccard, shingle_sets
from curator.errors import CuratorError
from curator.exchange import key_hash
from tests.dedup._support import change, dedup, kept, removed, text, write


def _hash(doc_id: str) -> int:
    return int(key_hash(pl.Series([doc_id]))[0])


def _j(a: str, b: str) -> float:
    sets = shingle_sets([a, b])
    return float(jaccard(sets, np.array([0]), np.array([1]))[0])


def test_known_answers(tmp_path: Path) -> None:
    rng = random.Random(3)
    base = text(rng)
    one = change(base, [50])  # 5 of 96 shingles: 91/101
    three = change(base, [10, 50, 90], "t")  # 15 of 96: 81/111, below 0.8
    a = text(rng)
    b = change(a, [20, 60])  # 86/106 = 0.811
    c = change(b, [40, 80], "y")  # b~c 0.811, a~c 76/116 = 0.655
    many = text(rng)
    others = [{"id": f"u{i}", "text": text(rng), "source": "s0"} for i in range(30)]
    files = {
        "a.jsonl": [{"id": "base", "text": base, "source": "s0"},
                    {"id": "copy1", "text": base, "source": "s1"},
                    {"id": "one", "text": one, "source": "s2"},
                    {"id": "three", "text": three, "source": "s2"},
                    *others[:15],
                    {"id": "chain-a", "text": a, "source": "s0"}],
        "b.jsonl": [{"id": "chain-b", "text": b, "source": "s0"},
                    {"id": "copy2", "text": base, "source": "s3"},
                    *others[15:],
                    {"id": "chain-c", "text": c, "source": "s0"},
                    *[{"id": f"m{i}", "text": many, "source": f"src{i}"} for i in range(6)],
                    {"id": "empty", "text": "", "source": "s0"},
                    {"id": "blank", "text": "   \n ", "source": "s0"},
                    {"id": "word1", "text": "hello", "source": "s0"},
                    {"id": "word2", "text": "Hello", "source": "s1"},
                    {"id": "word3", "text": "world", "source": "s1"}],
    }
    texts = {d["id"]: d["text"] for docs in files.values() for d in docs}
    inp = write(tmp_path / "in", files)
    report = dedup(inp, tmp_path / "out", partition_size="4KB")
    out = tmp_path / "out"
    gone = removed(out)
    left = {r["id"] for r in kept(out)}
    everything = {d["id"] for docs in files.values() for d in docs}
    assert left | set(gone) == everything and not left & set(gone)

    def survivor(ids: list[str]) -> str:
        return min(ids, key=_hash)

    exact = ["base", "copy1", "copy2", "one"]  # one word changed: 0.90 joins them
    win = survivor(exact)
    assert win in left and set(exact) - {win} <= set(gone)
    assert "three" in left  # 0.73 < 0.8: verified away
    for i in set(exact) - {win}:
        r = gone[i]
        assert r["dedup_survivor"] == win
        assert r["dedup_component"] == f"{_hash(win):016x}"
        assert r["dedup_similarity"] == _j(texts[i], texts[win])
    assert _j(base, one) == 91 / 101
    # the chain: one component, the similarity to the survivor may be below the threshold
    chain = ["chain-a", "chain-b", "chain-c"]
    win = survivor(chain)
    assert win in left and set(chain) - {win} <= set(gone)
    assert _j(a, c) < 0.8 <= min(_j(a, b), _j(b, c))
    for i in set(chain) - {win}:
        r = gone[i]
        assert r["dedup_survivor"] == win
        assert r["dedup_similarity"] == _j(texts[i], texts[win])
        assert r["dedup_neighbor_similarity"] >= 0.8
        assert r["dedup_neighbor_similarity"] == _j(texts[i], texts[r["dedup_neighbor"]])
    if win != "chain-b":  # the far end is removed at its real similarity, 0.655
        far = ({"chain-a", "chain-c"} - {win}).pop()
        assert gone[far]["dedup_similarity"] < 0.8
        assert gone[far]["dedup_neighbor"] == "chain-b"
    # one text in six sources: five removed, counted per source
    ms = [f"m{i}" for i in range(6)]
    win = survivor(ms)
    assert [m for m in ms if m in left] == [win]
    for m in set(ms) - {win}:
        assert report["removed_by_source"][f"src{m[1:]}"] == 1
    # empty texts are passed through uncompared; one-word documents are compared
    assert {"empty", "blank", "word3"} <= left
    assert len({"word1", "word2"} & left) == 1  # "Hello" is "hello" after normalising
    assert report["skipped"] == {"empty_text": 2}
    assert report["documents_in"] == len(everything)
    assert report["documents_in"] == report["documents_out"] + report["removed"]
    assert report["components"] == 4
    assert report["component_sizes"] == {"2": 1, "3-4": 2, "5-8": 1}
    assert report["largest_component"] == 6
    assert report["removed"] == 3 + 2 + 5 + 1
    assert report["verified_pairs"] + report["rejected_pairs"] == report["candidate_pairs"]
    assert report["producer"]["completed_at"]


def test_kept_lines_are_the_input_bytes_in_order(tmp_path: Path) -> None:
    rng = random.Random(5)
    t = text(rng)
    lines = [json.dumps({"text": t, "id": "z", "extra": [1, {"k": "é"}]}, ensure_ascii=False),
             '{"id":"a",   "text": ' + json.dumps(t) + "}",
             "not json at all",
             json.dumps({"id": "q", "text": text(rng)})]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # a report a step wrote beside its corpus is never read as input
    (tmp_path / "in" / "ingest_report.json").write_text('{\n  "a": 1\n}\n')
    report = dedup(tmp_path / "in", tmp_path / "out")
    assert report["input"]["files"] == 1 and report["documents_in"] == 4
    out = (tmp_path / "out" / "part_0.jsonl").read_text(encoding="utf-8").splitlines()
    win = min(["z", "a"], key=_hash)
    expect = [ln for ln in lines if not (ln.startswith("{") and
                                          json.loads(ln)["id"] == ({"z", "a"} - {win}).pop())]
    assert out == expect
    assert report["skipped"] == {"unparsable_line": 1}
    gone = removed(tmp_path / "out")
    (loser,) = gone.values()
    assert loser["dedup_similarity"] == 1.0 and loser["dedup_neighbor"] == win


def test_keep_rules(tmp_path: Path) -> None:
    rng = random.Random(9)
    t = text(rng, 200)
    docs = [{"id": "short", "text": t, "score": 0.9},
            {"id": "long", "text": t + " tail", "score": 0.1},
            {"id": "none", "text": t, "score": None},
            {"id": "best", "text": t, "score": 0.95}]
    inp = write(tmp_path / "in", {"a.jsonl": docs})
    dedup(inp, tmp_path / "longest", keep="longest")
    assert [r["id"] for r in kept(tmp_path / "longest")] == ["long"]
    dedup(inp, tmp_path / "score", keep="score:score")
    assert [r["id"] for r in kept(tmp_path / "score")] == ["best"]
    dedup(inp, tmp_path / "hash")
    assert [r["id"] for r in kept(tmp_path / "hash")] == [
        min(["short", "long", "none", "best"], key=_hash)]


def test_without_verify_the_signature_estimate_is_written(tmp_path: Path) -> None:
    rng = random.Random(11)
    base = text(rng)
    inp = write(tmp_path / "in", {"a.jsonl": [{"id": "p", "text": base},
                                              {"id": "q", "text": change(base, [50])}]})
    report = dedup(inp, tmp_path / "out", verify=False)
    (r,) = removed(tmp_path / "out").values()
    assert r["dedup_similarity"] == r["dedup_neighbor_similarity"]
    assert r["dedup_similarity"] != 91 / 101 and abs(r["dedup_similarity"] - 0.9) < 0.1
    assert round(r["dedup_similarity"] * 160) == r["dedup_similarity"] * 160
    assert report["params"]["verify"] is False


def test_a_record_without_an_id_is_refused(tmp_path: Path) -> None:
    inp = write(tmp_path / "in", {"a.jsonl": [{"id": "a", "text": "x y"}, {"text": "x y"}]})
    with pytest.raises(CuratorError) as info:
        dedup(inp, tmp_path / "out")
    assert info.value.error_id == "id_field_missing_or_duplicated"


def test_the_report_is_its_model_and_schema(tmp_path: Path) -> None:
    import jsonschema

    from curator.models import DedupReport
    from curator.steps.dedup import SPEC

    rng = random.Random(13)
    t = text(rng)
    inp = write(tmp_path / "in", {"a.jsonl": [{"id": "p", "text": t, "source": "a"},
                                              {"id": "q", "text": t, "source": "b"}]})
    dedup(inp, tmp_path / "out")
    raw = json.loads((tmp_path / "out" / "dedup_report.json").read_text())
    assert DedupReport.model_validate(raw).dump() == raw
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schemas"
                         / "dedup_report.schema.json").read_text())
    jsonschema.validate(raw, schema)
    shown = SPEC.rendered(DedupReport.model_validate(raw))
    assert "1 of 2 documents removed" in shown.summary
    assert shown.tables["component-sizes"] == [{"size": "2", "components": 1}]
    assert "2 | ####" in shown.markdown  # the histogram's bar
    # and its picture, inlined for the Prefect artifact: a PNG that decodes
    import base64
    import re

    found = re.search(r"!\[component sizes\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)",
                      shown.markdown)
    assert found and base64.b64decode(found.group(1)).startswith(b"\x89PNG\r\n\x1a\n")
    (row,), _ = SPEC.funnel(DedupReport.model_validate(raw))  # type: ignore[misc]
    assert (row.documents_in, row.documents_out, row.balanced) == (2, 1, True)
