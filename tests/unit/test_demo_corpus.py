"""The demo corpus generator: same seed same bytes, the promised noise, what ingest makes of it."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from curator.errors import CuratorError
from curator.execution import InlineExecutor
from curator.steps.ingest import IngestConfig, run_ingest
from curator_demo.corpus import (
    BOM_FILE,
    CHROME_PAGES,
    CONTENT_NOISE,
    CP1252_FILE,
    FOOTERS,
    GZ_FILE,
    LABELLED_NAME,
    LINE_NOISE,
    MANIFEST_NAME,
    NEAR_EDITS,
    NEAR_EMPTY,
    NEAR_WORDS,
    SEGMENTS,
    build_corpus,
    generate_demo_corpus,
    iter_clean_lines,
    jaccard5,
    noise_counts,
)

DOCS = 1000
SEED = 7
CYRILLIC = re.compile("[\u0400-\u04ff]")
FOOTER_MARKS = tuple(f.split("{")[0] for f in FOOTERS if not f.startswith("\u00a9"))
FOOTER_MARKS += ("All rights reserved.",)


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, bytes], dict[str, Any]]:
    return build_corpus(DOCS, SEED)


def _lines(name: str, data: bytes) -> list[str]:
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    if name == CP1252_FILE:
        return data.decode("cp1252").split("\r\n")[:-1]
    text = data.decode("utf-8")
    return text.removeprefix("\ufeff").split("\n")[:-1]


def _wordlike(text: str) -> float:
    tokens = text.split()
    return sum(1 for t in tokens if re.fullmatch(r"[A-Za-z][a-z]{0,14}[.,?!]?", t)) / len(tokens)


def _classify(files: dict[str, bytes]) -> tuple[Counter[str], Counter[str]]:
    """Find every noise kind in the bytes, independently of the generator's bookkeeping."""
    content: Counter[str] = Counter()
    lines_found: Counter[str] = Counter()
    first_seen: dict[tuple[str, str], str] = {}  # (url, text) -> file
    clean_texts: set[str] = set()
    clean_words: dict[int, list[list[str]]] = {}  # words -> clean texts split at spaces
    for name in sorted(files):
        for line in _lines(name, files[name]):
            if not line.strip():
                lines_found["blank"] += 1
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                lines_found["unparsable"] += 1
                continue
            if not isinstance(rec, dict):
                lines_found["not_an_object"] += 1
                continue
            if "text" not in rec:
                lines_found["missing_text"] += 1
                continue
            text = rec["text"]
            if not text.strip():
                lines_found["empty_text"] += 1
                continue
            key = (rec["url"], text)
            if key in first_seen:
                same = first_seen[key] == name
                lines_found["duplicate_within_file" if same else "duplicate_across_files"] += 1
                continue
            first_seen[key] = name
            if name == CP1252_FILE:
                content["cp1252"] += 1
            elif text in clean_texts or _near_copy(text, clean_words):
                content["syndicated"] += 1  # exact, or with a few words changed
            elif any(page in text for page in CHROME_PAGES):
                content["boilerplate_only"] += 1
            elif any(mark in text for mark in FOOTER_MARKS):
                content["boilerplate"] += 1
            elif text.startswith("Lorem ipsum"):
                content["lorem_ipsum"] += 1
            elif text in NEAR_EMPTY:
                content["near_empty"] += 1
            elif CYRILLIC.search(text):
                assert rec["lang"] == "ru"
                content["non_english"] += 1
            elif len(text.split("\n")) >= 15 and len(set(text.split("\n"))) <= 3:
                content["repeated_lines"] += 1
            elif _wordlike(text) < 0.3:
                content["symbol_soup"] += 1
            else:
                content["clean"] += 1
                clean_texts.add(text)
                words = text.split(" ")
                clean_words.setdefault(len(words), []).append(words)
    return content, lines_found


def _near_copy(text: str, clean_words: dict[int, list[list[str]]]) -> bool:
    """Whether ``text`` is a clean text with some of its words replaced by the edit words
    (none of which the prose uses), or the original of such a copy."""
    words = text.split(" ")
    for other in clean_words.get(len(words), []):
        diff = [(a, b) for a, b in zip(words, other, strict=True) if a != b]
        if diff and len(diff) <= max(NEAR_EDITS) and (
                all(a in NEAR_WORDS for a, _ in diff) or all(b in NEAR_WORDS for _, b in diff)):
            return True
    return False


# ---- determinism --------------------------------------------------------------------


def test_same_seed_gives_the_same_bytes(tmp_path: Path,
                                        corpus: tuple[dict[str, bytes], dict[str, Any]]) -> None:
    files, manifest = corpus
    again, manifest_again = build_corpus(DOCS, SEED)
    assert again == files
    assert manifest_again == manifest
    a, b = tmp_path / "a", tmp_path / "b"
    generate_demo_corpus(a, DOCS, SEED)
    generate_demo_corpus(b, DOCS, SEED)
    names = sorted(p.name for p in a.iterdir())
    # the corpus, its manifest and the labelled sample for curate evaluate (not corpus:
    # its extension is not an input one, tests/evaluate/test_demo_sample.py)
    assert names == sorted([*files, MANIFEST_NAME, LABELLED_NAME])
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    for name, data in files.items():
        assert (a / name).read_bytes() == data


def test_another_seed_gives_other_bytes(corpus: tuple[dict[str, bytes], dict[str, Any]]) -> None:
    files, _ = corpus
    other, _ = build_corpus(DOCS, SEED + 1)
    assert other.keys() == files.keys()
    for name in files:
        assert other[name] != files[name], name


def test_clean_lines_for_benchmarks_are_deterministic_json() -> None:
    def take(n: int) -> list[str]:
        it = iter_clean_lines(3)
        return [next(it) for _ in range(n)]

    lines = take(300)
    assert lines == take(300)
    assert all(isinstance(json.loads(line)["text"], str) for line in lines)


def test_too_few_documents_is_refused() -> None:
    with pytest.raises(CuratorError) as err:
        build_corpus(10, SEED)
    assert err.value.error_id == "config_error"


# ---- the noise ----------------------------------------------------------------------


def test_noise_kinds_are_present_in_the_declared_proportions(
        corpus: tuple[dict[str, bytes], dict[str, Any]]) -> None:
    files, manifest = corpus
    content, lines_found = _classify(files)
    expected_content, expected_lines = noise_counts(DOCS)
    assert dict(content) == expected_content
    assert dict(lines_found) == expected_lines
    assert manifest["content_kinds"] == expected_content
    assert manifest["line_noise"] == expected_lines
    for kind, share in CONTENT_NOISE.items():
        assert content[kind] / DOCS == pytest.approx(share, abs=0.5 / DOCS), kind
    for kind, share in LINE_NOISE.items():
        assert lines_found[kind] / DOCS == pytest.approx(share, abs=0.5 / DOCS), kind
    assert content["clean"] / DOCS > 0.75


def test_near_duplicates_are_planted_with_known_edits(
        corpus: tuple[dict[str, bytes], dict[str, Any]]) -> None:
    """Half the syndicated copies (rounded down) have k words changed, k in rotation; each
    copy is under another source than its original; the manifest's words_changed and
    Jaccard are what the bytes hold."""
    files, manifest = corpus
    near = manifest["near_duplicates"]
    syndicated = manifest["content_kinds"]["syndicated"]
    assert near["edited_copies"] == syndicated // 2
    assert near["exact_copies"] == syndicated - syndicated // 2
    records = {}
    for name, data in files.items():
        for line in _lines(name, data):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "url" in rec and "text" in rec:
                records.setdefault(rec["url"], rec)
    ks = []
    for pair in near["pairs"]:
        copy, orig = records[pair["copy_url"]], records[pair["original_url"]]
        assert copy["source"] == pair["copy_source"] != orig["source"]
        changed = sum(a != b for a, b in zip(copy["text"].split(" "), orig["text"].split(" "),
                                             strict=True))
        assert changed == pair["words_changed"]
        assert pair["jaccard_words5"] == round(jaccard5(copy["text"], orig["text"]), 6)
        assert (pair["jaccard_words5"] == 1.0) == (changed == 0)
        ks.append(changed)
    assert sorted(k for k in ks if k) == sorted(
        NEAR_EDITS[i % len(NEAR_EDITS)] for i in range(near["edited_copies"]))
    assert near["at_or_above_0.8"] == sum(p["jaccard_words5"] >= 0.8 for p in near["pairs"])


def test_every_kind_appears_even_in_a_small_corpus() -> None:
    files, _ = build_corpus(50, 1)
    content, lines_found = _classify(files)
    assert all(content[k] >= 1 for k in CONTENT_NOISE)
    assert all(lines_found[k] >= 1 for k in LINE_NOISE)


def test_the_styles_and_sources_look_like_web_text(
        corpus: tuple[dict[str, bytes], dict[str, Any]]) -> None:
    files, _ = corpus
    recs = [json.loads(line) for line in _lines("segment-00.jsonl", files["segment-00.jsonl"])
            if line.strip().startswith("{\"url\"")]
    recs = [r for r in recs if isinstance(r, dict) and r.get("text")]
    sources = Counter(r["source"] for r in recs)
    assert len(sources) >= 8
    assert all(set(r) >= {"url", "source", "title", "text", "lang", "crawled_at"} for r in recs)
    assert all(r["url"].startswith(f"https://{r['source']}/") for r in recs)
    words = Counter(w for r in recs if r["lang"] == "en" for w in r["text"].lower().split())
    assert words.most_common(1)[0][0] == "the"  # Zipf-like: function words dominate
    lengths = sorted(len(r["text"]) for r in recs)
    assert lengths[0] < 40 and lengths[-1] > 5000  # near-empty pages to long articles
    assert any("\n\n" in r["text"] for r in recs)


def test_the_cp1252_file_is_not_utf8(corpus: tuple[dict[str, bytes], dict[str, Any]]) -> None:
    files, manifest = corpus
    data = files[CP1252_FILE]
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    lines = data.decode("cp1252").split("\r\n")[:-1]
    assert len(lines) == manifest["content_kinds"]["cp1252"]
    assert all(any(ord(c) > 127 for c in line) for line in lines)
    for line in lines:  # no line is valid UTF-8 on its own: ingest must detect the encoding
        with pytest.raises(UnicodeDecodeError):
            line.encode("cp1252").decode("utf-8")
    text = "".join(lines)
    assert "\u201c" in text and "\u2019" in text and "\u00e9" in text


def test_gzip_bom_and_manifest(corpus: tuple[dict[str, bytes], dict[str, Any]]) -> None:
    files, manifest = corpus
    assert files[GZ_FILE][:2] == b"\x1f\x8b"
    assert files[GZ_FILE][4:8] == b"\0\0\0\0"  # mtime 0: reproducible
    assert b"\\u04" in gzip.decompress(files[GZ_FILE])  # ensure_ascii escapes of Cyrillic
    assert files[BOM_FILE].startswith(b"\xef\xbb\xbf")
    assert not any(files[n].startswith(b"\xef\xbb\xbf") for n in SEGMENTS if n != BOM_FILE)
    assert manifest["total_bytes"] == sum(len(d) for d in files.values())
    assert yaml.safe_load(yaml.safe_dump(manifest)) == manifest


def test_default_size_is_a_few_megabytes() -> None:
    from curator_demo import DEFAULT_DOCS

    files, _ = build_corpus(DEFAULT_DOCS, 1234)
    assert 3e6 <= sum(len(d) for d in files.values()) <= 5e6


# ---- through ingest -----------------------------------------------------------------


def test_ingest_finds_exactly_the_planted_noise(tmp_path: Path) -> None:
    raw, out = tmp_path / "raw", tmp_path / "ingested"
    manifest = generate_demo_corpus(raw, docs=300, seed=11)
    expected = manifest["expected_ingest"]
    config = IngestConfig(input=str(raw), output_dir=str(out), on_duplicate="drop",
                          source_from="source", keep_fields=["url"], shard_size=100,
                          partition_size="100KB", execution={"executor": "inline"})
    report = run_ingest(config, InlineExecutor())

    assert report["completed_normally"]
    assert report["balance"]["ok"]
    assert report["input"]["files"] == len(manifest["files"])
    for key in ("documents_seen", "documents_accepted", "documents_rejected",
                "rejections_by_reason", "encodings_used", "files_with_bom"):
        assert report[key] == expected[key], key
    assert set(report["rejections_by_reason"]) == {
        "duplicate_id", "empty_text", "missing_text", "not_an_object", "unparsable_line"}
    assert report["counts"]["duplicate_groups"] == expected["duplicate_groups"]
    assert report["lossy_documents"] == 0

    docs = [json.loads(line) for p in sorted(out.glob("part_*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()]
    assert len(docs) == 300
    assert set(docs[0]) == {"text", "id", "source", "url"}
    assert len({d["id"] for d in docs}) == 300
    assert any(d["source"] == "novosti-dnya.example" for d in docs)
    legacy_urls = {json.loads(line)["url"] for line in
                   (raw / CP1252_FILE).read_bytes().decode("cp1252").splitlines()}
    legacy = [d for d in docs if d["url"] in legacy_urls]
    assert len(legacy) == manifest["content_kinds"]["cp1252"]
    assert all("\ufffd" not in d["text"] for d in legacy)
    assert any("\u201c" in d["text"] or "\u00e9" in d["text"] for d in legacy)

    rejected = [json.loads(line) for p in (out / "rejected").glob("*.jsonl")
                for line in p.read_text(encoding="utf-8").splitlines()]
    assert Counter(r["reason"] for r in rejected) == expected["rejections_by_reason"]
    assert all(r["path"].startswith(str(raw)) for r in rejected)
