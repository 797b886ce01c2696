"""The engine's exchange: records shuffled by a key's hash through the work area."""

from curator.exchange.buckets import (
    BucketPartitioning,
    BucketTask,
    Exchange,
    choose_buckets,
    read_summaries,
    write_summary,
)
from curator.exchange.keyhash import bucket_of, key_hash, range_of

__all__ = ["BucketPartitioning", "BucketTask", "Exchange", "bucket_of", "choose_buckets",
           "key_hash", "range_of", "read_summaries", "write_summary"]
