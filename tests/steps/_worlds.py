"""A small, real world for every registered step: its input, a config, and a variant
config that changes the result. The contract tests run every step through these."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator_demo import generate_demo_corpus

REPO = Path(__file__).resolve().parents[2]
LANGPACKS = str(REPO / "curator" / "langpacks")
SIGNALS = ["word_count", "stopword_ratio", "unicode_alpha_numeric", "boilerplate_hits"]


@dataclass
class World:
    raw: Path  # the demo corpus (noise included: duplicates, bad lines, gzip, cp1252)
    keys: dict[str, Any]  # the step's keys, without input, output_dir and execution
    variant: dict[str, Any]  # keys that change the result
    input_key: str

    def config(self, out: Path, ckpt: Path | None = None, **more: Any) -> dict[str, Any]:
        cfg = copy.deepcopy(self.keys)
        cfg.update({self.input_key: str(self.raw), "output_dir": str(out),
                    "execution": {"executor": "inline",
                                  "checkpoint_path": str(ckpt) if ckpt else None}})
        cfg.update(copy.deepcopy(more))
        return cfg


#: the keys of each step's world; a registered step without one fails the contract tests
KEYS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ingest": ({"on_duplicate": "drop", "partition_size": "64KB", "shard_size": 100,
                "source_from": "source"},
               {"keep_fields": [], "on_duplicate": "suffix"}),
    "profile": ({"language": "en", "langpack_dir": LANGPACKS, "source_field": "source",
                 "max_total_docs": 200, "signals": SIGNALS, "partition_size": "64KB"},
                {"seed": 1}),
    "filter": ({"source_field": "source", "partition_size": "32KB",
                "quality_filters": {"min_words": 20, "max_words": 100000}},
               {"quality_filters": {"min_words": 40, "max_words": 100000}}),
    # the target is a filter's output (made by make_world); the paths are added there
    "audit": ({"mode": "integrity"}, {"mode": "digest"}),
    # the input is ingest's output (unique canonical ids; made by make_world)
    "dedup": ({"id_field": "id", "source_field": "source", "partition_size": "32KB"},
              {"shingle": "chars", "n": 4, "threshold": 0.3}),
    # training shards with unique ids and a planted holdout (made by make_world)
    "decontamination": ({"id_field": "id", "partition_size": "64KB"},
                        {"containment": {"enabled": False}}),
    # the input is ingest's output (unique canonical ids; made by make_world)
    "subset": ({"id_field": "id", "source_field": "source", "token_budgets": [3000, 12000],
                "length_bands": [64, 256, 1024], "partition_size": "32KB"},
               {"seed": 1}),
}


def _extra_worlds() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Worlds of steps this file does not know, from the JSON file ``CURATE_TEST_WORLDS``
    names (``{key: [keys, variant]}``): how a test that adds a step in a copy of the
    repository runs the contract tests over it without editing this file."""
    path = os.environ.get("CURATE_TEST_WORLDS")
    if not path:
        return {}
    return {k: (v[0], v[1]) for k, v in json.loads(Path(path).read_text()).items()}


KEYS.update(_extra_worlds())


def make_world(key: str, input_key: str, folder: Path) -> World:
    keys, variant = KEYS[key]
    raw = folder / "raw"
    if not raw.is_dir():
        generate_demo_corpus(raw, docs=240, seed=7)
    if key == "audit":  # audit what a real filter run wrote from the demo corpus
        filtered = filtered_world(raw, folder / "filtered")
        keys = {**keys, "declared_manifest": str(filtered / "run_manifest.json"),
                "ledger_glob": str(filtered / "curation_ledger.json"),
                "reference_glob": str(raw), "digest_root": str(filtered)}
        return World(filtered, keys, variant, input_key)
    if key == "decontamination":
        train, holdout = decontamination_world(folder / "decontamination")
        return World(train, {**keys, "holdout_glob": str(holdout)}, variant, input_key)
    if key in ("subset", "dedup"):  # what a real ingest run wrote (ids unique)
        return World(ingested_world(raw, folder / "ingested"), keys, variant, input_key)
    return World(raw, keys, variant, input_key)


def ingested_world(raw: Path, out: Path) -> Path:
    """The ingest world run on ``raw`` into ``out``: canonical, unique ``id``s."""
    from curator.steps.ingest import IngestConfig, run_ingest

    if not (out / "ingest_report.json").is_file():
        keys = copy.deepcopy(KEYS["ingest"][0])
        run_ingest(IngestConfig(**keys, input=str(raw), output_dir=str(out),
                                execution={"executor": "inline"}))
    return out


def decontamination_world(folder: Path, files: int = 3, docs: int = 150
                          ) -> tuple[Path, Path]:
    """``(train dir, holdout dir)``: demo documents with unique ids in ``files`` shards,
    and a holdout planted from them (curator_demo.holdout: copies, edited and rewritten
    copies, passages, same-URL and unseen documents; ``planted.json`` says which)."""
    import json

    from curator_demo import iter_clean_lines
    from curator_demo.holdout import HOLDOUT_NAME, PLANTED_NAME, plant

    train, holdout = folder / "train", folder / "holdout"
    if not (holdout / HOLDOUT_NAME).is_file():
        lines = iter_clean_lines(3)
        records = []
        train.mkdir(parents=True, exist_ok=True)
        for f in range(files):
            rows = [{**json.loads(next(lines)), "id": f"d{f}-{i}"} for i in range(docs)]
            records += rows
            (train / f"shard_{f}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        docs_out, planted = plant(records, 24, 11, id_field="id")
        holdout.mkdir(parents=True, exist_ok=True)
        (holdout / HOLDOUT_NAME).write_text(
            "".join(json.dumps(r) + "\n" for r in docs_out), encoding="utf-8")
        (folder / PLANTED_NAME).write_text(json.dumps(planted, indent=2, sort_keys=True),
                                           encoding="utf-8")
    return train, holdout


def filtered_world(raw: Path, out: Path) -> Path:
    """The filter's world run on ``raw`` into ``out`` (ids from ``url``, so the audit
    matches records by id)."""
    from curator.steps.filter import FilterConfig, run_filter

    if not (out / "run_manifest.json").is_file():
        keys = copy.deepcopy(KEYS["filter"][0])
        run_filter(FilterConfig(**keys, input_glob=str(raw), output_dir=str(out),
                                id_field="url", execution={"executor": "inline"}))
    return out


def data_files(out: Path) -> dict[str, bytes]:
    """The step's data (shards, rejections, summaries), without its JSON reports, which
    hold paths and timestamps, and without hidden work files."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix != ".json" and p.suffix != ".png"
            and not any(part.startswith(".") for part in p.relative_to(out).parts)}
