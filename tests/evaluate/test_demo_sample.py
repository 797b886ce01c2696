"""The demo generator's labelled sample: deterministic, held out, valid, not corpus, and
what `curate evaluate` makes of it. (That ingest of the raw folder ignores it is
tests/unit/test_demo_corpus.py::test_ingest_finds_exactly_the_planted_noise: the sample is
written there.)"""

from __future__ import annotations

import gzip
import hashlib
import json
import unicodedata
from collections import Counter
from pathlib import Path

from curator.artifacts import file_digest
from curator.corpus.formats import JSONL_NAMES, PARQUET_NAMES
from curator.evaluate import evaluate_policy, read_labelled
from curator_demo import (
    LABELLED_KINDS,
    LABELLED_NAME,
    build_corpus,
    build_labelled_sample,
    generate_demo_corpus,
)
from tests.evaluate._support import LANGPACKS, approved_policy


def _lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def test_the_sample_is_deterministic_and_follows_its_table() -> None:
    data, block = build_labelled_sample(11)
    assert build_labelled_sample(11) == (data, block)
    assert build_labelled_sample(12)[0] != data
    docs = _lines(data)
    assert len(docs) == block["records"] == sum(n for _, _, n in LABELLED_KINDS.values())
    assert Counter(d["kind"] for d in docs) == {k: n for k, (_, _, n) in LABELLED_KINDS.items()}
    for d in docs:
        label, phenomenon, _ = LABELLED_KINDS[d["kind"]]
        assert (d["label"], d["phenomenon"]) == (label, phenomenon)
    assert block["keep"] == sum(d["label"] == "keep" for d in docs) == 200
    assert block["drop"] == 100
    assert block["sha256"] == "sha256:" + hashlib.sha256(data).hexdigest()
    nfd = [d["text"] for d in docs if d["kind"] == "nfd"]
    assert all(unicodedata.is_normalized("NFD", t) for t in nfd)
    assert all(not unicodedata.is_normalized("NFC", t) for t in nfd)  # accents decomposed


def test_written_beside_the_corpus_but_not_corpus(tmp_path: Path) -> None:
    manifest = generate_demo_corpus(tmp_path, docs=300, seed=11)
    path = tmp_path / LABELLED_NAME
    assert not path.name.lower().endswith((*JSONL_NAMES, *PARQUET_NAMES))
    assert manifest["labelled_sample"]["sha256"] == file_digest(path)
    assert manifest["labelled_sample"]["file"] == LABELLED_NAME
    docs, files = read_labelled([path])  # a valid labelled set
    assert len(docs) == 300 and files[0].keep == 200 and files[0].drop == 100


def test_the_corpus_bytes_are_those_of_before_the_sample() -> None:
    """Pinned when the sample was added: writing it changed no byte of the corpus. The
    near-duplicate edits (docs/demo-corpus.md) came later, with their own seed: without
    them the bytes are those pinned then; with them, pinned when they were added."""
    files, _ = build_corpus(300, 11, near_duplicates=False)
    digest = hashlib.sha256(b"".join(k.encode() + v for k, v in sorted(files.items())))
    assert digest.hexdigest() == \
        "568de36324bb9ea9d39494c6a9e2591547ca1759fbe4b0ddaad2467b6812d4bf"
    files, _ = build_corpus(300, 11)
    digest = hashlib.sha256(b"".join(k.encode() + v for k, v in sorted(files.items())))
    assert digest.hexdigest() == \
        "13c96cc9849c51e4946118204b5fd1c779279d9edb4debd5b5855fdc864869dd"


def test_held_out_prose_is_not_in_the_corpus() -> None:
    files, _ = build_corpus(300, 11)
    corpus_texts = set()
    for name, data in files.items():
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        text = data.decode("cp1252" if "cp1252" in name else "utf-8-sig")
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("text"), str):
                corpus_texts.add(unicodedata.normalize("NFC", rec["text"]))
    sample = _lines(build_labelled_sample(11)[0])
    prose = [d for d in sample if d["kind"] in ("clean", "nfd")]
    assert not [d["id"] for d in prose
                if unicodedata.normalize("NFC", d["text"]) in corpus_texts]


def test_evaluate_on_the_sample(tmp_path: Path) -> None:
    path = tmp_path / LABELLED_NAME
    path.write_bytes(build_labelled_sample(11)[0])
    policy = approved_policy(tmp_path / "p", {"stopword_ratio": 0.0952381,
                                              "unicode_alpha_numeric": 0.269841})
    report = evaluate_policy(policy, [path], langpack_dir=LANGPACKS)
    rows = {r["phenomenon"]: r for r in report["phenomena"]}
    expected = Counter((ph, lb) for lb, ph, n in LABELLED_KINDS.values() for _ in range(n))
    for (ph, lb), n in expected.items():
        assert rows[ph][lb] == n, (ph, lb)
    assert rows["langid_error"]["exercised"] is False
    assert rows["ocr_noise"]["noise_removal_rate"] == 1.0  # symbol soup has no stopwords
    with_language = evaluate_policy(policy, [path], langpack_dir=LANGPACKS,
                                    language_codes=["en"])
    rows = {r["phenomenon"]: r for r in with_language["phenomena"]}
    assert rows["langid_error"]["exercised"] is True
    assert rows["langid_error"]["drop_dropped"] == rows["langid_error"]["drop"] == 20
    by_gate = {a["gate"]: a for a in with_language["attribution"]}
    assert by_gate["language"]["removed_drop"] >= 20
