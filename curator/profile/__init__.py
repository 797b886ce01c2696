"""curate profile: corpus fingerprint, per-source sampling, signal statistics, summary."""
