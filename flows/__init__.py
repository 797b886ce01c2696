"""Prefect flows and the curate command line (wiring only)."""
