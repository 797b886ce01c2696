"""Helpers for the profile tests: a realistic small corpus and an independent recipe."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from pathlib import Path
from typing import Any

from curator_demo import iter_clean_lines

REPO = Path(__file__).resolve().parents[2]
LANGPACKS = REPO / "curator" / "langpacks"


def corpus_records(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` demo documents in the ingested form ``{text, id, source, url}``."""
    records = []
    for line in itertools.islice(iter_clean_lines(seed), n):
        rec = json.loads(line)
        rec_id = hashlib.sha256(line.encode()).hexdigest()[:16]
        records.append({"text": rec["text"], "id": rec_id, "source": rec["source"],
                        "url": rec.get("url")})
    return records


def write_shards(folder: Path, records: list[dict[str, Any]], shards: int,
                 shuffle_seed: int | None = None) -> Path:
    """The records as ``part_<n>.jsonl`` shards (optionally shuffled first)."""
    records = list(records)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(records)
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(records) // shards)
    for i in range(shards):
        chunk = records[i * size:(i + 1) * size]
        (folder / f"part_{i}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in chunk), encoding="utf-8")
    return folder


def recipe_fingerprint(records: list[dict[str, Any]], with_id: bool = True) -> str:
    """The documented corpus fingerprint, written out independently of the code."""
    total = 0
    for rec in records:
        text_hex = hashlib.sha256(rec["text"].encode("utf-8")).hexdigest()
        key = f"{rec['id']}\0{text_hex}" if with_id else text_hex
        total += int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16)
    total %= 1 << 256
    return "sha256:" + hashlib.sha256(f"{len(records)}:{total:064x}".encode()).hexdigest()


def recipe_rank(seed: int, key: str) -> int:
    return int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:16], 16)


def profile_keys(inp: Path, out: Path, **keys: Any) -> dict[str, Any]:
    return {"input_glob": str(inp), "output_dir": str(out), "language": "en",
            "langpack_dir": str(LANGPACKS), "id_field": "id", **keys}
