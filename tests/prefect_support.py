"""Reading what a flow published from the test's Prefect API server."""

from __future__ import annotations

import asyncio
import json
from typing import Any


async def _latest(key: str) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])), limit=1,
            sort="CREATED_DESC")
        return found[0] if found else None


def latest_artifact(key: str) -> Any:
    """The newest artifact with ``key``, or None."""
    return asyncio.run(_latest(key))


def table_rows(artifact: Any) -> list[dict[str, Any]]:
    """The rows of a table artifact."""
    assert artifact is not None and artifact.type == "table", artifact
    data = artifact.data
    return json.loads(data) if isinstance(data, str) else data


async def _count(key: str) -> int:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async with get_client() as client:
        return len(await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]))))


def artifact_count(key: str) -> int:
    """How many artifacts with ``key`` the server holds."""
    return asyncio.run(_count(key))
