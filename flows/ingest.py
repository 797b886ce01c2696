"""The ingest flow: Prefect wiring around :func:`curator.steps.ingest.run_ingest`."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from curator.steps.ingest import IngestConfig, report_markdown, run_ingest
from flows.prefect_logging import engine_logs_to_prefect
from flows.progress import PhaseProgress
from flows.step_config import step_config, step_executor


@flow(
    name="curate-ingest",
    task_runner=ThreadPoolTaskRunner(max_workers=64),
    validate_parameters=False,
    persist_result=False,
)
def ingest_flow(
    config: str | dict[str, Any], overrides: list[str] | None = None
) -> dict[str, Any]:
    """Ingest a raw corpus. ``config`` is a YAML path or a mapping of ingest keys;
    ``overrides`` are ``key=value`` strings as for ``--set``."""
    cfg = step_config(IngestConfig, config, overrides)
    logger = get_run_logger()
    executor = step_executor(cfg)
    logger.info("ingest of %s into %s on %s", cfg.input, cfg.output_dir, executor.describe())
    try:
        with executor, engine_logs_to_prefect():
            return run_ingest(cfg, executor, on_progress=PhaseProgress("ingest"))
    finally:
        _publish(cfg)


def _publish(cfg: IngestConfig) -> None:
    import json
    from pathlib import Path

    path = Path(cfg.output_dir) / "ingest_report.json"
    if path.is_file():
        report = json.loads(path.read_text(encoding="utf-8"))
        create_markdown_artifact(
            markdown=report_markdown(report), key="ingest-report",
            description="curate ingest: ingest_report.json",
        )
