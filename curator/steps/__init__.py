"""Each curation step as one straight line: config -> plan -> run -> merge -> artifacts."""

# the registry first: whatever step module is imported, every spec is known
# (curator.steps.spec.offers_at_root derives a step's config from an output root)
from curator.steps import registry as _registry  # noqa: F401
