"""Quality signals: the closed registry (:mod:`.registry`) and batch scoring (:mod:`.scoring`)."""

from curator.signals.registry import IMPL_VERSION, REGISTRY, Grid, SignalSpec, get

__all__ = ["IMPL_VERSION", "REGISTRY", "Grid", "SignalSpec", "get"]
