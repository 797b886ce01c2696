"""curate flow: the steps as one run; its plan, preflight and skip decisions (no Prefect)."""
