"""The demo corpus generator: not the domain, a source of realistic test and benchmark input.

``curate demo-corpus``, ``make demo``, the tests and the benchmarks use it. It depends on
``curator`` (errors, atomic writes); ``curator`` never imports it (an import-linter
contract in ``pyproject.toml``). ``docs/demo-corpus.md`` describes what it writes.
"""

from curator_demo.corpus import (
    BOM_FILE,
    CONTENT_NOISE,
    CP1252_FILE,
    DEFAULT_DOCS,
    DEFAULT_SEED,
    GZ_FILE,
    LABELLED_KINDS,
    LABELLED_NAME,
    LINE_NOISE,
    MANIFEST_NAME,
    MIN_DOCS,
    SEGMENTS,
    DemoCorpusGenerator,
    build_corpus,
    build_labelled_sample,
    generate_demo_corpus,
    iter_clean_lines,
    noise_counts,
)

__all__ = [
    "BOM_FILE",
    "CONTENT_NOISE",
    "CP1252_FILE",
    "DEFAULT_DOCS",
    "DEFAULT_SEED",
    "GZ_FILE",
    "LABELLED_KINDS",
    "LABELLED_NAME",
    "LINE_NOISE",
    "MANIFEST_NAME",
    "MIN_DOCS",
    "SEGMENTS",
    "DemoCorpusGenerator",
    "build_corpus",
    "build_labelled_sample",
    "generate_demo_corpus",
    "iter_clean_lines",
    "noise_counts",
]
