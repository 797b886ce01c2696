"""curate filter: gates (language, word count, approved policy thresholds), the run
manifest and the curation ledger."""
