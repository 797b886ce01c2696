"""Reading and writing corpora: partitioning, atomic writes, object storage."""

from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.io.writers import write_atomic

__all__ = ["FilePartitioningStage", "resolve_input_files", "write_atomic"]
