"""Language packs: per-language data (stopwords, charset, boilerplate, fold map).

See ``docs/langpacks.md``. There is no default language; the default pack root is the
packs installed with the package (``curator/langpacks``, :data:`PACKAGED_LANGPACK_DIR`).
"""

from curator.langpack.loader import (
    PACKAGED_LANGPACK_DIR,
    compute_content_hash,
    content_hash_of,
    load_langpack,
    resolve_langpack_dir,
)
from curator.langpack.model import DATA_CAPABILITIES, KNOWN_CAPABILITIES, WRITING_SYSTEM, LangPack

__all__ = [
    "DATA_CAPABILITIES",
    "KNOWN_CAPABILITIES",
    "PACKAGED_LANGPACK_DIR",
    "WRITING_SYSTEM",
    "LangPack",
    "compute_content_hash",
    "content_hash_of",
    "load_langpack",
    "resolve_langpack_dir",
]
