"""Near-duplicate detection's domain kernel: normalisation, shingle hashes, MinHash
signatures, LSH band keys and the exact Jaccard of candidate pairs (issue 28's ``curate
dedup`` builds on these; the kernel choice: docs/decisions/minhash-kernel.md)."""

from curator.dedup.minhash import (
    EMPTY,
    MinHashParams,
    band_keys,
    coefficients,
    collision_probability,
    estimate,
    signatures,
)
from curator.dedup.shingles import ShingleSets, Shingling, jaccard, normalize, shingle_sets

__all__ = ["EMPTY", "MinHashParams", "ShingleSets", "Shingling", "band_keys", "coefficients",
           "collision_probability", "estimate", "jaccard", "normalize", "shingle_sets",
           "signatures"]
