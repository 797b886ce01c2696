"""The audit's dedup checker (curator/audit/dedup.py): a real ``curate dedup`` run passes;
each planted fault is caught (a survivor missing from the output, a removed record also in
the output, a similarity below the threshold or not what the texts give, a lost input
document, a count the files do not bear out); its own shingle hashes, Jaccard and
signature equal the step's kernel on varied texts (the audit may not import it)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import curator.audit.dedup as checker
from curator.audit.dedup import check_dedup
from curator.audit.dedup_kernel import estimate, jaccard, shingle_hashes, signature
from curator.dedup import jaccard as kernel_jaccard
from curator.dedup import shingle_sets
from curator.dedup.minhash import MinHashParams, signatures
from curator.dedup.minhash import estimate as kernel_estimate
from curator.dedup.shingles import Shingling
from tests.dedup._support import change, dedup, removed, shards, text, write

TEXTS = ["", "   ", "one", "Hello", "hello world", "a b c d", "a b c d e", "a b c d e f g",
         "İstanbul ΣΊΣΥΦΟΣ Straße\u00a0naïve  cafe\u0301 \u2003 end", "日本語のテキスト です 。",
         "Tabs\tand\nnew\u2028lines \x1c sep", "emoji 🙂 and \U0001d518\U0001d52b math"]


def _random_texts(rng: random.Random, k: int) -> list[str]:
    pool = ["the", "cat", "Σ", "ΣΑΣ", "naïve", "İ", "x", "日本", "🙂", "a,", "b."]
    return [" ".join(rng.choice(pool) for _ in range(rng.randint(0, 30))) for _ in range(k)]


@pytest.mark.parametrize(("kind", "n"), [("words", 5), ("words", 1), ("chars", 5),
                                         ("chars", 3)])
def test_the_audits_own_kernel_equals_the_steps(kind: str, n: int) -> None:
    texts = TEXTS + _random_texts(random.Random(n), 60)
    sets = shingle_sets(texts, Shingling(kind, n))  # type: ignore[arg-type]
    for i, t in enumerate(texts):
        assert shingle_hashes(t, kind, n).tolist() == sets.of(i).tolist(), t
    left = np.arange(len(texts) - 1)
    right = np.arange(1, len(texts))
    expected = kernel_jaccard(sets, left, right).tolist()
    ours = [jaccard(shingle_hashes(texts[i], kind, n), shingle_hashes(texts[i + 1], kind, n))
            for i in range(len(texts) - 1)]
    assert ours == expected  # the same float64, not merely close
    params = MinHashParams(4, 5, 7)
    sig, present = signatures(texts, Shingling(kind, n), params)  # type: ignore[arg-type]
    mine = [signature(t, 20, 7, kind, n) for t in texts]
    for i in range(len(texts)):
        assert (mine[i] is not None) == bool(present[i])
        if mine[i] is not None:
            assert mine[i].tolist() == sig[i].tolist()
    assert [estimate(mine[i], mine[i + 1]) for i in range(len(texts) - 1)] == \
        kernel_estimate(sig, present, left, right).tolist()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real dedup run: exact copies, near copies, a chain, across two files."""
    folder = tmp_path_factory.mktemp("dedup-audit")
    rng = random.Random(5)
    base, a = text(rng), text(rng)
    b = change(a, [20, 60])
    c = change(b, [40, 80], "y")
    others = [{"id": f"u{i}", "text": text(rng), "source": "s0"} for i in range(20)]
    files = {"a.jsonl": [{"id": "base", "text": base, "source": "s0"},
                         {"id": "copy1", "text": base, "source": "s1"},
                         {"id": "one", "text": change(base, [50]), "source": "s2"},
                         *others[:10], {"id": "chain-a", "text": a, "source": "s0"},
                         {"id": "empty", "text": "", "source": "s0"}],
             "b.jsonl": [{"id": "chain-b", "text": b, "source": "s0"},
                         {"id": "copy2", "text": base, "source": "s3"}, *others[10:],
                         {"id": "chain-c", "text": c, "source": "s0"}]}
    inp = write(folder / "in", files)
    dedup(inp, folder / "out", partition_size="4KB")
    assert len(removed(folder / "out")) == 5  # 3 copies of base, 2 of the chain
    return folder


def _copy(run: Path, tmp_path: Path) -> Path:
    """A copy of the run whose report names the copy's folders."""
    to = tmp_path / "run"
    shutil.copytree(run, to)
    path = to / "out" / "dedup_report.json"
    text_ = path.read_text().replace(str(run), str(to))
    path.write_text(text_)
    return to


def _names(block: tuple) -> list[str]:
    return sorted(f["name"] for f in block[1])


def _edit_removed(out: Path, edit) -> None:
    """Apply ``edit(records)`` to the removed records (shard by shard, in place)."""
    for p in shards(out / "removed"):
        recs = [json.loads(line) for line in p.read_text().splitlines()]
        recs = edit(recs)
        p.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _reseal(out: Path) -> None:
    """Rewrite the report's shard lists and counts to the files (a fault the shard check
    would otherwise catch first is then caught by its own check alone)."""
    import hashlib

    path = out / "dedup_report.json"
    rep = json.loads(path.read_text())

    def facts(files: list[Path]) -> list[dict]:
        return [{"name": p.name, "rows": p.read_bytes().count(b"\n"),
                 "sha256": "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest()}
                for p in files]
    rep["shards"], rep["removed_shards"] = facts(shards(out)), facts(shards(out / "removed"))
    rep["documents_out"] = sum(s["rows"] for s in rep["shards"])
    rep["removed"] = sum(s["rows"] for s in rep["removed_shards"])
    rep["documents_in"] = rep["documents_out"] + rep["removed"]
    path.write_text(json.dumps(rep))


def test_a_real_run_passes(run: Path, tmp_path: Path) -> None:
    to = _copy(run, tmp_path)
    block, findings = check_dedup(to / "out" / "dedup_report.json")
    assert findings == []
    assert block is not None and block["passed"]
    assert block["similarities_checked"] == 5 and block["similarity_scope"] == "all 5"
    assert block["removed_documents"] == 5 and block["output_is_input_minus_removed"]


def test_a_survivor_missing_from_the_output_is_caught(run: Path, tmp_path: Path) -> None:
    to = _copy(run, tmp_path)
    survivor = removed(to / "out")["copy1"]["dedup_survivor"]
    for p in shards(to / "out"):
        lines = [x for x in p.read_text().splitlines() if json.loads(x)["id"] != survivor]
        p.write_text("".join(x + "\n" for x in lines))
    _reseal(to / "out")
    names = _names(check_dedup(to / "out" / "dedup_report.json"))
    assert "dedup_survivor_missing" in names
    assert "dedup_accounting_mismatch" in names  # the survivor's input line is lost too


def test_a_removed_record_also_in_the_output_is_caught(run: Path, tmp_path: Path) -> None:
    to = _copy(run, tmp_path)
    gone = sorted(removed(to / "out"))[0]
    line = next(x for p in shards_in(to / "in") for x in p.read_text().splitlines()
                if json.loads(x)["id"] == gone)
    first = shards(to / "out")[0]
    first.write_text(first.read_text() + line + "\n")
    _reseal(to / "out")
    names = _names(check_dedup(to / "out" / "dedup_report.json"))
    assert "dedup_removed_in_output" in names


def shards_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl"))


def test_a_similarity_below_the_threshold_is_caught(run: Path, tmp_path: Path) -> None:
    """A removed record whose text is not that similar to its neighbour (a document
    removed that should not have been), its written similarities left as they were."""
    to = _copy(run, tmp_path)

    def edit(recs: list[dict]) -> list[dict]:
        for r in recs:
            if r["id"] == "one":
                r["text"] = change(r["text"], list(range(0, 100, 4)))  # 25 of 100 words
        return recs
    _edit_removed(to / "out", edit)
    for p in shards_in(to / "in"):  # the input says the same (input = output + removed)
        lines = [json.loads(x) for x in p.read_text().splitlines()]
        for r in lines:
            if r["id"] == "one":
                r["text"] = change(r["text"], list(range(0, 100, 4)))
        p.write_text("".join(json.dumps(r) + "\n" for r in lines))
    _reseal(to / "out")
    block, findings = check_dedup(to / "out" / "dedup_report.json")
    names = _names((block, findings))
    assert names == ["dedup_below_threshold", "dedup_similarity_mismatch"]
    assert next(f for f in findings if f["name"] == "dedup_below_threshold")["examples"] == \
        ["one"]


def test_a_written_similarity_the_texts_do_not_give_is_caught(run: Path, tmp_path: Path
                                                               ) -> None:
    to = _copy(run, tmp_path)
    gone = sorted(removed(to / "out"))[0]

    def edit(recs: list[dict]) -> list[dict]:
        for r in recs:
            if r["id"] == gone:
                r["dedup_similarity"] = 0.99
        return recs
    _edit_removed(to / "out", edit)
    _reseal(to / "out")
    assert _names(check_dedup(to / "out" / "dedup_report.json")) == \
        ["dedup_similarity_mismatch"]


def test_a_lost_document_and_wrong_counts_are_caught(run: Path, tmp_path: Path) -> None:
    to = _copy(run, tmp_path)
    gone = sorted(removed(to / "out"))[0]
    _edit_removed(to / "out", lambda recs: [r for r in recs if r["id"] != gone])
    names = _names(check_dedup(to / "out" / "dedup_report.json"))
    assert names == ["dedup_accounting_mismatch", "dedup_counts_mismatch",
                     "dedup_shard_mismatch"]


def test_a_neighbour_outside_the_component_is_caught(run: Path, tmp_path: Path) -> None:
    to = _copy(run, tmp_path)
    gone = removed(to / "out")
    first = gone[sorted(gone)[0]]
    other = next(i for i, r in sorted(gone.items())
                 if r["dedup_component"] != first["dedup_component"])

    def edit(recs: list[dict]) -> list[dict]:
        for r in recs:
            if r["id"] == first["id"]:
                r["dedup_neighbor"] = other  # removed, but in another component
        return recs
    _edit_removed(to / "out", edit)
    _reseal(to / "out")
    names = _names(check_dedup(to / "out" / "dedup_report.json"))
    assert "dedup_neighbor_not_in_component" in names


def test_above_the_sample_size_a_seeded_sample_is_checked(run: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    to = _copy(run, tmp_path)
    monkeypatch.setattr(checker, "SAMPLE_ABOVE", 3)
    block, findings = check_dedup(to / "out" / "dedup_report.json")
    assert findings == []
    assert block is not None and block["similarities_checked"] == 3
    assert block["similarity_scope"] == "a seeded sample of 3 of 5 (seed 0)"


def test_as_a_whole_root_audit_kind(run: Path, tmp_path: Path) -> None:
    """Through the audit's kinds (what ``StepSpec.audit`` registers): the checker takes the
    root it is given, and reads the recorded paths under a root that was moved."""
    from curator.audit.kinds import ArtifactKind

    moved = tmp_path / "moved"
    shutil.copytree(run, moved)  # the report still names the original folders
    kind = ArtifactKind("dedup", "dedup_report.json", check_dedup)
    block, findings = kind.prove(moved / "out" / "dedup_report.json", moved)
    assert findings == [] and block is not None and block["passed"]
