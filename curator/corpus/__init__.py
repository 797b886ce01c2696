"""The corpus kernel: what every step knows about a corpus, and no step owns.

- :mod:`curator.corpus.formats`: file extensions and compressed suffixes;
- :mod:`curator.corpus.records`: which fields are the text, id and source
  (:class:`~curator.corpus.records.RecordSpec`), and the one classification of a line
  into a record or a rejection with its reason;
- :mod:`curator.corpus.reading`: the one JSONL line reader and the record reader;
- :mod:`curator.corpus.fingerprint`: the corpus fingerprint and its engine pass;
- :mod:`curator.corpus.sampling`: stable hashing and per-source allocation;
- :mod:`curator.corpus.langid`: the offline language-ID model.

The step packages (``curator.ingest``, ``curator.profile``, ``curator.filter``, ...)
share code only through this package and the engine; this package imports none of
them (import-linter contracts in ``pyproject.toml``). Nothing is re-exported here:
import from the module that defines a name.
"""
