"""OpenAI's BPE encodings over ranks a package ships: nothing is downloaded.

``tiktoken.get_encoding`` fetches the ranks from the network; ``tiktoken.Encoding`` takes
them directly, with the encoding's pattern and special tokens. Those are spelled here as
``tiktoken_ext/openai_public.py`` defines them: it keeps them inside the constructors that
download the ranks, so they cannot be read without a download
(tests/subset/test_tiktoken_encoding.py proves the two encodings give the same ids).
Used by the subset's counting and by the audit's recount.
"""

from __future__ import annotations

import base64
import hashlib
from typing import TYPE_CHECKING

from curator.errors import CuratorError

if TYPE_CHECKING:
    import tiktoken

_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"
_O200K_LETTERS = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
)


#: name -> (the sha256 tiktoken publishes for the ranks file, pattern, special tokens)
ENCODINGS: dict[str, tuple[str, str, dict[str, int]]] = {
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
        r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {_ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
         "<|fim_suffix|>": 100260, _ENDOFPROMPT: 100276},
    ),
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join([*_O200K_LETTERS, r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                  r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+"""]),
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}


def tiktoken_encoding(name: str, ranks: bytes) -> tiktoken.Encoding:
    """tiktoken's ``name`` encoding (``cl100k_base``, ``o200k_base``) over ``ranks``, the
    uncompressed ``.tiktoken`` file; refused (``tokenizer_revision_mismatch``) unless its
    sha256 is the one tiktoken publishes."""
    import tiktoken

    published, pat_str, special_tokens = ENCODINGS[name]
    if hashlib.sha256(ranks).hexdigest() != published:
        raise CuratorError("tokenizer_revision_mismatch",
                           f"the shipped {name} ranks are not the published ones")
    # parsed as tiktoken.load.load_tiktoken_bpe does, which reads only a path or a URL
    mergeable = {base64.b64decode(tok): int(rank)
                 for tok, rank in (line.split() for line in ranks.splitlines() if line)}
    return tiktoken.Encoding(name=name, pat_str=pat_str, mergeable_ranks=mergeable,
                             special_tokens=special_tokens)


__all__ = ["ENCODINGS", "tiktoken_encoding"]
