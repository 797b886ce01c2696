"""The profile flow: Prefect wiring around :func:`curator.steps.profile.run_profile`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from curator.steps.profile import SUMMARY_NAME, ProfileConfig, run_profile
from flows.prefect_logging import engine_logs_to_prefect
from flows.progress import PhaseProgress
from flows.step_config import step_config, step_executor


@flow(
    name="curate-profile",
    task_runner=ThreadPoolTaskRunner(max_workers=64),
    validate_parameters=False,
    persist_result=False,
)
def profile_flow(
    config: str | dict[str, Any], overrides: list[str] | None = None
) -> dict[str, Any]:
    """Profile a corpus. ``config`` is a YAML path or a mapping of profile keys;
    ``overrides`` are ``key=value`` strings as for ``--set``."""
    cfg = step_config(ProfileConfig, config, overrides)
    logger = get_run_logger()
    executor = step_executor(cfg)
    logger.info("profile of %s into %s on %s", cfg.input_glob, cfg.output_dir,
                executor.describe())
    with executor, engine_logs_to_prefect():
        report = run_profile(cfg, executor, on_progress=PhaseProgress("profile"))
    _publish(report, Path(cfg.output_dir))
    return report


def key_numbers(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per signal: median, p10/p90 and the gate points a reviewer looks at first."""
    rows = []
    for block in report["signals"]:
        micro = (block.get("views") or {}).get("micro") or {}
        rows.append({
            "signal": block["signal"], "direction": block["direction"],
            "n_scored": block.get("n_scored"), "p10": micro.get("p10"),
            "p50": micro.get("p50"), "p90": micro.get("p90"),
        })
    return rows


def _publish(report: dict[str, Any], out: Path) -> None:
    summary = out / SUMMARY_NAME
    if summary.is_file():
        create_markdown_artifact(markdown=summary.read_text(encoding="utf-8"),
                                 key="profile-summary",
                                 description="curate profile: profile_summary.md")
    corpus = report["corpus"]
    create_table_artifact(
        table=key_numbers(report), key="profile-signals",
        description=(f"curate profile: {corpus['document_count']} documents, "
                     f"{report['sampling']['sampled']} sampled, fingerprint "
                     f"{corpus['fingerprint']}"),
    )
