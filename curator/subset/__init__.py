"""curate subset: nested training tiers by token budget (see docs/subset.md)."""
