"""The domain layer: tasks, stages, resumability, I/O. Imports neither prefect nor ray."""

from curator.errors import CuratorError

__all__ = ["CuratorError"]
__version__ = "0.1.0"
