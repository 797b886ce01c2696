"""Helpers for the ``curate evaluate`` tests: an approved policy made the way ``curate
approve`` makes one (``promote`` on a candidate, here written by hand with the shipped
pack's real identity), and labelled sets whose answers are known."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

from curator.langpack.loader import load_langpack
from curator.policy import promote, write_approved, write_candidate
from curator.signals.registry import IMPL_VERSION, REGISTRY
from tests.profile._support import LANGPACKS

__all__ = ["LANGPACKS"]

FINGERPRINT = "sha256:" + "1" * 64
PROFILE_DIGEST = "sha256:" + "2" * 64
#: the test's policy: in file order (approve sorts by signal) stopword_ratio, word_count
THRESHOLDS: dict[str, Any] = {"stopword_ratio": 0.2, "word_count": (3, 1000)}

PROSE = [
    "The city council met on Tuesday evening to discuss the new budget for the public "
    "library, and the mayor promised that the proposal would be reviewed by the end of "
    "the month.",
    "To bake the bread, mix the flour with warm water and a little salt, then let the "
    "dough rest for an hour before you shape it into a loaf.",
    "Our team spent the weekend hiking along the river. The weather was cold but clear, "
    "and we saw many birds near the water before we returned home.",
    "He said that the results of the study were published in a journal and that the "
    "authors would present them at a meeting in the spring.",
]
ACCENTED = unicodedata.normalize(
    "NFD", "The café on the corner was where José and Zoë met every morning, and the "
           "résumé she wrote there was the one that got her the job in the city.")
RUSSIAN = ("Вчера вечером городской совет обсуждал новый бюджет публичной библиотеки. "
           "Многие жители выступили за продление часов работы.")
SPAM = ("Buy the best watches for the lowest price in the city and get a free gift with "
        "every order that you place with us this week.")


def known_set() -> list[dict[str, Any]]:
    """Ten labelled documents and what the test policy does to each (no language gate):

    keep: four prose texts and one NFD text are kept; ``k-short`` ("Home": one word, no
    stopword) fails both gates and is removed by stopword_ratio, the first in the policy's
    order (a false rejection). drop: ``d-soup`` (no stopword) is removed
    by stopword_ratio; ``d-loading`` fails both gates, stopword_ratio first; ``d-spam``
    is prose and is kept (missed); ``d-ru`` has no English stopword: stopword_ratio.
    """
    docs = [{"id": f"k-{i}", "text": t, "label": "keep", "phenomenon": "clean"}
            for i, t in enumerate(PROSE)]
    docs += [
        {"id": "k-nfd", "text": ACCENTED, "label": "keep", "phenomenon": "nfd"},
        {"id": "k-short", "text": "Home", "label": "keep", "phenomenon": "clean"},
        {"id": "d-soup", "text": "%3C%2F ### @@@ 12345 ~~~ ||| QmFzZTY0 %20%20 >>>",
         "label": "drop", "phenomenon": "ocr_noise"},
        {"id": "d-loading", "text": "Loading...", "label": "drop", "phenomenon": "clean"},
        {"id": "d-spam", "text": SPAM, "label": "drop", "phenomenon": "clean"},
        {"id": "d-ru", "text": RUSSIAN, "label": "drop", "phenomenon": "langid_error"},
    ]
    return docs


def write_labelled(path: Path, docs: list[dict[str, Any]] | list[Any]) -> Path:
    path.write_text("".join((d if isinstance(d, str) else json.dumps(d, ensure_ascii=False))
                            + "\n" for d in docs), encoding="utf-8")
    return path


def candidate_doc(signals: list[str]) -> dict[str, Any]:
    """A candidate as ``curate profile`` writes one, with the shipped en pack's identity."""
    pack = load_langpack(LANGPACKS, "en")
    candidates = []
    for name in signals:
        spec = REGISTRY[name]
        if spec.is_interval:
            candidates.append({"signal": name, "kind": "interval",
                               "surface_axes": {"min": [], "max": []}, "note": "test"})
        else:
            candidates.append({"signal": name, "kind": "threshold", "direction": spec.direction,
                               "units": spec.units, "bands": [], "note": "test"})
    return {
        "schema_version": 1, "approved": False, "note": "test candidate",
        "corpus": {"glob": "x/*.jsonl", "document_count": 10, "fingerprint": FINGERPRINT},
        "langpack": {"id": pack.pack_id, "language_tag": pack.language_tag,
                     "version": pack.version, "content_hash": pack.content_hash},
        "signals_impl_version": IMPL_VERSION,
        "profile_digest": PROFILE_DIGEST,
        "candidates": candidates,
    }


def approved_policy(root: Path, thresholds: dict[str, Any] | None = None) -> Path:
    """``candidate_policies.yaml`` and ``approved_policy.yaml`` under ``root``."""
    thresholds = THRESHOLDS if thresholds is None else thresholds
    root.mkdir(parents=True, exist_ok=True)
    candidate = root / "candidate_policies.yaml"
    write_candidate(candidate_doc(list(thresholds)), candidate)
    doc, _ = promote(candidate_doc(list(thresholds)), thresholds, approver="Test Reviewer",
                     evidence="hand-made labelled set", log_warnings=False)
    out = root / "approved_policy.yaml"
    write_approved(doc, out)
    return out
