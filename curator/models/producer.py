"""What every artifact shares: the model base, the producer block, the error block,
and the one completion rule (:attr:`CompletionArtifact.is_complete`).

Every model accepts keys it does not name (``extra="allow"``: a step adds its own) and
types every key a reader in the project uses. Numbers a reader counts with are strict
integers (no floats, no booleans, no strings); no number may be NaN or infinite.
:meth:`ArtifactModel.dump` gives back exactly the keys that were given (``None`` stays
``None``, an absent key stays absent), so a writer that builds its artifact through
its model writes the same bytes as before (the writers sort keys).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

#: a count: a JSON integer, never a float, a boolean or a string
Count = Annotated[int, Field(strict=True)]
#: a measured number (seconds, a ratio): an integer or a float, finite
Number = Annotated[int, Field(strict=True)] | float


class ArtifactModel(BaseModel):
    """The base of every artifact model."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, populate_by_name=True)

    def dump(self) -> dict[str, Any]:
        """The artifact as written: the keys it was given, JSON types."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


class ErrorBlock(ArtifactModel):
    """``{"error_id", "message"}`` of a failure, as every artifact writes it."""

    error_id: str
    message: str = ""


class Execution(ArtifactModel):
    """Where the producer ran: the executor, its workers, the partitions it planned, and
    ``retries``: how often it ran a partition again because the partition's worker or
    node was lost (0 in an artifact written before retries were counted)."""

    executor: str | None = None
    workers: Count | None = None
    partitions: Count | None = None
    retries: Count = 0


class Producer(ArtifactModel):
    """Who made an artifact, from what, when, where (:meth:`StepRun.producer`).

    ``completed_at`` is present only when the run completed."""

    step_id: str | None = None
    tool_revision: str | None = None
    config_hash: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    seconds: Number | None = None
    output_dir: str | None = None
    resumed_partitions: Count | None = None
    execution: Execution | None = None


class StepWarning(ArtifactModel):
    """A warning a person must see: its id and message."""

    id: str | None = None
    message: str | None = None


class Warned(ArtifactModel):
    """What a report that lists warnings shares (a step's completion artifact):
    ``warnings``, ``{id, message}`` records or plain strings."""

    warnings: list[StepWarning | str] | None = None


class Shard(ArtifactModel):
    """One written shard as a report lists it: its name, rows and sha256."""

    name: str | None = None
    rows: Count | None = None
    sha256: str | None = None


class ParquetShard(ArtifactModel):
    """One Parquet file of the copy: its name and the JSONL shard it copies (``from``),
    both relative to the artifact's folder, its rows and sha256."""

    name: str | None = None
    from_: str | None = Field(None, alias="from")
    rows: Count | None = None
    sha256: str | None = None


class ParquetCopy(ArtifactModel):
    """The Parquet copy of the corpus a step wrote (``output_format: jsonl+parquet``)."""

    dir: str | None = None
    rows: Count | None = None
    json_columns: list[str] | None = None
    columns: dict[str, str] | None = None
    shards: list[ParquetShard] | None = None


class CompletionArtifact(ArtifactModel):
    """A step's completion artifact: written last, on failure too (with ``error``)."""

    schema_version: Count | None = None
    producer: Producer | None = None
    error: ErrorBlock | None = None
    #: the Parquet copy of the corpus it wrote, when it made one
    parquet: ParquetCopy | None = None

    @property
    def is_complete(self) -> bool:
        """THE completion rule: ``producer.completed_at`` is set."""
        return self.producer is not None and bool(self.producer.completed_at)

    def failure(self) -> ErrorBlock:
        """Why it is not complete: its error, else ``incomplete``."""
        return self.error or ErrorBlock(error_id="incomplete", message="not completed")


__all__ = ["ArtifactModel", "CompletionArtifact", "Count", "ErrorBlock", "Execution",
           "Number", "ParquetCopy", "ParquetShard", "Producer", "Shard", "StepWarning",
           "Warned"]
