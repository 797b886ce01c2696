"""The offline tiktoken encoding (curator.corpus.tokenizers) is tiktoken's own.

``tiktoken.get_encoding`` would download the ranks here, so the reference is tiktoken's
own constructor (``tiktoken_ext.openai_public``) fed the shipped ranks in place of its
download: the pattern and special tokens are then the installed tiktoken's.
"""

from __future__ import annotations

import base64
import gzip
import importlib.resources as resources
from unittest import mock

import pytest
import tiktoken

from curator.corpus.tokenizers import ENCODINGS, tiktoken_encoding
from curator.errors import CuratorError

TEXTS = ["Smoke tests keep releases honest.", "naïve café — 東京 2024!!",
         "It's 12345678 o'clock; THEY'LL see\r\n\r\n  indented\tcode()",
         "<|endoftext|> and <|endofprompt|> as text", "  spaces\n\nand\tlines  " * 30,
         "Don'T SHOUT'S 'RE ÀÉÎ ǅungla Ⅻ ١٢٣٤ 😀😀 a/b/c\n\n\n"]


def shipped(name: str) -> bytes:
    return gzip.decompress(resources.files("bpe_openai").joinpath(
        f"data/{name}.tiktoken.gz").read_bytes())


def tiktokens_own(name: str, data: bytes) -> tiktoken.Encoding:
    from tiktoken_ext import openai_public

    ranks = {base64.b64decode(a): int(b)
             for a, b in (line.split() for line in data.splitlines() if line)}
    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *_a, **_k: ranks):
        return tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_the_encoding_gives_tiktokens_ids(name: str) -> None:
    data = shipped(name)
    ours, reference = tiktoken_encoding(name, data), tiktokens_own(name, data)
    # what pickling keeps of an encoding: its name, pattern, ranks and special tokens
    assert ours.__getstate__() == reference.__getstate__()
    for text in TEXTS:
        assert ours.encode_ordinary(text) == reference.encode_ordinary(text)
        assert (ours.encode(text, allowed_special="all")
                == reference.encode(text, allowed_special="all"))
    assert ours.encode_ordinary_batch(TEXTS) == reference.encode_ordinary_batch(TEXTS)


def test_ranks_that_are_not_the_published_ones_are_refused() -> None:
    data = shipped("cl100k_base")
    with pytest.raises(CuratorError) as info:
        tiktoken_encoding("cl100k_base", data[:-200])
    assert info.value.error_id == "tokenizer_revision_mismatch"
