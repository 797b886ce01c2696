"""Counting the units of a token budget, offline: whitespace words, a vocabulary that
ships inside a registry package, or a local ``tokenizer.json``.

=========================== ===================================================================
``tokenizer: null``         whitespace words (``len(text.split())``), ``unit: words``
``{name: cl100k_base}``     OpenAI's BPE ranks as shipped inside the ``bpe-openai`` wheel
``{name: o200k_base}``      (``bpe_openai/data/<name>.tiktoken.gz``), whose sha256 must equal the
                            one tiktoken publishes for the file; counted by bpe-openai's Rust
                            encoder (GitHub's ``bpe-openai`` crate), and by ``tiktoken`` over the
                            same ranks (``curator.corpus.tokenizers``) for a text beyond the
                            wrapper's limits; the two give the same ids (tests/subset)
``{name: /path/tokenizer.json}`` a Hugging Face ``tokenizer.json``, run by ``tokenizers``
=========================== ===================================================================

A tokenizer's identity is ``{name, revision}``; ``revision`` is ``sha256:<hex>`` of its
vocabulary file (the uncompressed ``.tiktoken`` ranks, or the ``tokenizer.json``
bytes). The config must name the revision it expects (``tokenizer_revision_missing``
otherwise); a file whose digest differs is refused (``tokenizer_revision_mismatch``), and a
``tokenizer.json`` the library cannot load is ``tokenizer_invalid``, before anything runs.
Nothing is downloaded. Special tokens are counted as text (``encode_ordinary``, no
added BOS/EOS), so a document's count does not depend on where it is placed.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.corpus.tokenizers import ENCODINGS, tiktoken_encoding
from curator.errors import CuratorError

WORDS = "words"
TOKENS = "tokens"
#: the vocabularies a registry package ships: name -> (package, file in it)
BUNDLED = {
    "cl100k_base": ("bpe_openai", "data/cl100k_base.tiktoken.gz"),
    "o200k_base": ("bpe_openai", "data/o200k_base.tiktoken.gz"),
}
#: the sha256 tiktoken publishes for each file (tiktoken_ext/openai_public.py)
PUBLISHED_SHA256 = {name: published for name, (published, _, _) in ENCODINGS.items()}
BATCH = 512


@dataclass(frozen=True)
class TokenizerId:
    """Who counts: ``name`` (``None``: words), the vocabulary's ``revision``, the library."""

    name: str | None
    revision: str | None
    library: str | None = None
    vocabulary: str | None = None  # where the vocabulary file is (a package file or a path)

    @property
    def unit(self) -> str:
        return WORDS if self.name is None else TOKENS

    def to_json(self) -> dict[str, Any] | None:
        if self.name is None:
            return None
        return {"name": self.name, "revision": self.revision, "library": self.library,
                "vocabulary": self.vocabulary}


def _bundled_bytes(name: str) -> tuple[bytes, str]:
    import importlib.resources as resources

    package, rel = BUNDLED[name]
    try:
        ref = resources.files(package).joinpath(rel)
        raw = ref.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise CuratorError("tokenizer_unavailable",
                           f"tokenizer {name}: package {package} (which ships {rel}) is not "
                           "installed") from exc
    return gzip.decompress(raw), f"{package}/{rel}"


def _file_sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def identify(name: str | None, revision: str | None) -> TokenizerId:
    """The tokenizer's identity, checked against the revision the config expects."""
    if name is None:
        return TokenizerId(None, None)
    if name in BUNDLED:
        data, where = _bundled_bytes(name)
        actual, library = _file_sha(data), "bpe-openai (tiktoken beyond its limits)"
        if actual != "sha256:" + PUBLISHED_SHA256[name]:
            raise CuratorError("tokenizer_revision_mismatch",
                               f"{where} is not the published {name} ranks ({actual})")
    else:
        path = Path(name)
        if not path.is_file():
            raise CuratorError("tokenizer_not_found",
                               f"tokenizer {name!r} is neither a bundled vocabulary "
                               f"({sorted(BUNDLED)}) nor a tokenizer.json file")
        data = path.read_bytes()
        actual, where, library = _file_sha(data), str(path.resolve()), "tokenizers"
    if not revision:
        raise CuratorError("tokenizer_revision_missing",
                           f"tokenizer {name!r} needs a revision: its vocabulary is {actual}")
    if revision.removeprefix("sha256:") != actual.removeprefix("sha256:"):
        raise CuratorError("tokenizer_revision_mismatch",
                           f"tokenizer {name!r}: the config expects revision {revision} but "
                           f"the vocabulary is {actual}")
    tok = TokenizerId(name, actual, library, where)
    if name not in BUNDLED:
        _parse_file(tok, data)
    return tok


def _parse_file(tok: TokenizerId, data: bytes) -> None:
    """Load a ``tokenizer.json`` now, in the refusal, so a file that is not one is
    ``tokenizer_invalid`` naming it, not a failed partition later (#29 item 9)."""
    from tokenizers import Tokenizer

    try:
        enc = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as exc:  # tokenizers raises a bare Exception for a bad file
        raise CuratorError("tokenizer_invalid",
                           f"tokenizer {tok.name!r} ({tok.vocabulary}) is not a tokenizer.json "
                           f"the tokenizers library can load: {str(exc)[:300]}; fix or replace "
                           "the file (a resume cannot help)", path=tok.vocabulary) from exc
    with _LOCK:  # this process counts with it next (the inline executor)
        _LOADED.setdefault(f"{tok.name}\0False", enc)


_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()


def load(tok: TokenizerId, reference: bool = False) -> Any:
    """The encoder of ``tok``, loaded once per process: for a bundled vocabulary,
    ``bpe-openai``'s Rust encoder (``reference``: tiktoken's, over the same ranks)."""
    assert tok.name is not None
    key = f"{tok.name}\0{reference}"
    with _LOCK:
        enc = _LOADED.get(key)
        if enc is None:
            if tok.name in BUNDLED and reference:
                enc = tiktoken_encoding(tok.name, _bundled_bytes(tok.name)[0])
            elif tok.name in BUNDLED:
                import bpe_openai

                enc = bpe_openai.get_encoding(tok.name)
            else:
                from tokenizers import Tokenizer

                enc = Tokenizer.from_file(tok.name)
            _LOADED[key] = enc
    return enc


def _bundled_count(tok: TokenizerId, text: str) -> int:
    """Tokens of ``text``: bpe-openai's encoder, or tiktoken's for a text beyond the
    wrapper's limits (1M characters, 200k tokens); both give the same ids."""
    try:
        return len(load(tok).encode_ordinary(text))
    except (ValueError, RuntimeError):  # TokenLimitError is a RuntimeError/ValueError
        return len(load(tok, reference=True).encode_ordinary(text))


def count(tok: TokenizerId, texts: Sequence[str]) -> list[int]:
    """Units of each text: words, or tokens of the tokenizer (no special tokens added)."""
    if tok.name is None:
        return [len(t.split()) for t in texts]
    if tok.name in BUNDLED:
        return [_bundled_count(tok, t) for t in texts]
    enc = load(tok)
    out: list[int] = []
    for i in range(0, len(texts), BATCH):
        batch = list(texts[i:i + BATCH])
        out.extend(len(e.ids) for e in enc.encode_batch(batch, add_special_tokens=False))
    return out


__all__ = ["BUNDLED", "TOKENS", "WORDS", "TokenizerId", "count", "identify", "load"]
