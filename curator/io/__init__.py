"""Reading and writing corpora: partitioning, the JSONL reader and writer."""

from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.io.readers import JsonlReader, JsonlReaderStage
from curator.io.writers import JsonlWriter, write_atomic

__all__ = [
    "FilePartitioningStage",
    "JsonlReader",
    "JsonlReaderStage",
    "JsonlWriter",
    "resolve_input_files",
    "write_atomic",
]
