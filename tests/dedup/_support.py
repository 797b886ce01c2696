"""Small corpora for the dedup step's tests: writing them, running the step, reading what
it wrote."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from curator.steps.dedup import DedupConfig, run_dedup
from executors import make_executor

WORDS = [f"w{i:05d}" for i in range(20000)]


def text(rng: random.Random, words: int = 100) -> str:
    """``words`` distinct words: every 5-word shingle distinct, Jaccard by counting."""
    return " ".join(rng.sample(WORDS, words))


def change(t: str, positions: list[int], tag: str = "x") -> str:
    """``t`` with the words at ``positions`` replaced by new ones."""
    w = t.split()
    for p in positions:
        w[p] = f"{tag}{p}"
    return " ".join(w)


def write(folder: Path, files: dict[str, list[dict[str, Any]]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, docs in files.items():
        with open(folder / name, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d) + "\n")
    return folder


def dedup(inp: Path, out: Path, **keys: Any) -> dict[str, Any]:
    execution = {"executor": "inline", **keys.pop("execution", {})}
    cfg = DedupConfig(input_glob=str(inp), output_dir=str(out),
                      **{"id_field": "id", "source_field": "source", **keys},
                      execution=execution)
    if cfg.execution.executor == "inline":
        return run_dedup(cfg)
    ex = cfg.execution
    with make_executor(ex.executor, ex.workers, ex.ray_address) as pool:
        return run_dedup(cfg, pool)


def planted(seed: int, bases: int, files: int = 3) -> dict[str, list[dict[str, Any]]]:
    """``bases`` documents, each with 0-4 near copies (0-6 words changed, some changed
    from an earlier copy: chains), shuffled over ``files`` files."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = []
    for b in range(bases):
        family = [text(rng)]
        for _ in range(rng.randrange(5)):
            parent = rng.choice(family)
            family.append(change(parent, rng.sample(range(100), rng.randrange(7)),
                                 f"c{len(docs)}-{len(family)}-"))
        docs += [{"id": f"b{b}-{k}", "text": t, "source": f"s{rng.randrange(4)}"}
                 for k, t in enumerate(family)]
    rng.shuffle(docs)
    return {f"f{i}.jsonl": docs[i::files] for i in range(files)}


def kept(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in shards(out) for line in p.read_text().splitlines()]


def removed(out: Path) -> dict[str, dict[str, Any]]:
    found = [json.loads(line) for p in shards(out / "removed")
             for line in p.read_text().splitlines()]
    return {r["id"]: r for r in found}


def shards(folder: Path) -> list[Path]:
    return sorted(folder.glob("part_*.jsonl"), key=lambda p: int(p.stem[5:]))


def data(out: Path) -> dict[str, bytes]:
    """Every file but the report and work files."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.jsonl"))
            if not any(part.startswith(".") for part in p.relative_to(out).parts)}


def concatenated(out: Path) -> tuple[bytes, bytes]:
    """The kept and the removed shards, each concatenated in shard order."""
    return (b"".join(p.read_bytes() for p in shards(out)),
            b"".join(p.read_bytes() for p in shards(out / "removed")))
