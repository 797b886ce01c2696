"""curate audit: the per-file scan, the checks, the report (docs/audit.md)."""
