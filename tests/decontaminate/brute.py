"""An independent brute force: every (train, holdout) pair, exact shingle sets."""

from __future__ import annotations

import re
import unicodedata


def norm(text: str) -> str:
    text = unicodedata.normalize("NFC", text).casefold()
    text = "".join(c if (c.isalnum() or unicodedata.category(c).startswith("M")
                         or c in "\u200c\u200d") and c != "_" else " " for c in text)
    return re.sub(r"\s+", " ", text).strip()


def shingles(text: str, k: int = 24) -> set[str]:
    t = norm(text)
    return {t[i:i + k] for i in range(len(t) - k + 1)}


def pairs(train: dict[str, str], holdout: dict[str, str], k: int = 24
          ) -> dict[tuple[str, str], tuple[float, float]]:
    """``{(train id, holdout id): (jaccard, containment)}`` of every pair sharing a shingle."""
    hs = {h: shingles(t, k) for h, t in holdout.items()}
    out = {}
    for tid, text in train.items():
        a = shingles(text, k)
        for hid, b in hs.items():
            if not a or not b:
                continue
            inter = len(a & b)
            if inter:
                out[(tid, hid)] = (inter / len(a | b), inter / len(b))
    return out
