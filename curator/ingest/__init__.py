"""The ingest step: decoding, parsing, identity, duplicates, shards, report."""
