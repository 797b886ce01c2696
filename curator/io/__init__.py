"""Reading and writing corpora: partitioning, JSONL and Parquet readers and writers."""

from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.io.readers import JsonlReader, JsonlReaderStage, ParquetReader, ParquetReaderStage
from curator.io.writers import JsonlWriter, ParquetWriter, write_atomic

__all__ = [
    "FilePartitioningStage",
    "JsonlReader",
    "JsonlReaderStage",
    "JsonlWriter",
    "ParquetReader",
    "ParquetReaderStage",
    "ParquetWriter",
    "resolve_input_files",
    "write_atomic",
]
