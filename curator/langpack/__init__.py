"""Language packs: per-language data (stopwords, charset, boilerplate, fold map).

See ``docs/langpacks.md``. There is no default language and no default pack root.
"""

from curator.langpack.loader import compute_content_hash, content_hash_of, load_langpack
from curator.langpack.model import DATA_CAPABILITIES, KNOWN_CAPABILITIES, WRITING_SYSTEM, LangPack

__all__ = [
    "DATA_CAPABILITIES",
    "KNOWN_CAPABILITIES",
    "WRITING_SYSTEM",
    "LangPack",
    "compute_content_hash",
    "content_hash_of",
    "load_langpack",
]
