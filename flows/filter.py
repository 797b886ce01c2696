"""The filter flow: Prefect wiring around :func:`curator.steps.filter.run_filter`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from curator.steps.filter import FilterConfig, run_filter
from flows.prefect_logging import engine_logs_to_prefect
from flows.progress import PhaseProgress
from flows.step_config import step_config, step_executor


@flow(
    name="curate-filter",
    task_runner=ThreadPoolTaskRunner(max_workers=64),
    validate_parameters=False,
    persist_result=False,
)
def filter_flow(
    config: str | dict[str, Any], overrides: list[str] | None = None
) -> dict[str, Any]:
    """Apply an approved policy. ``config`` is a YAML path or a mapping of filter keys;
    ``overrides`` are ``key=value`` strings as for ``--set``. Returns the run manifest."""
    cfg = step_config(FilterConfig, config, overrides)
    logger = get_run_logger()
    started = time.time()
    executor = step_executor(cfg)
    logger.info("filter of %s into %s on %s", cfg.input_glob, cfg.output_dir,
                executor.describe())
    try:
        with executor, engine_logs_to_prefect():
            return run_filter(cfg, executor, on_progress=PhaseProgress("filter"))
    finally:
        _publish(cfg, started)


def _publish(cfg: FilterConfig, since: float) -> None:
    """The run's manifest and ledger as tables; files an earlier run left (a refusal
    before the output was touched writes none) are not this run's and are skipped."""
    out = Path(cfg.output_dir)
    for name, key, rows in (
        (cfg.emit_manifest, "filter-manifest", _manifest_rows),
        (cfg.emit_ledger, "filter-ledger", _ledger_rows),
    ):
        if name is None:
            continue
        path = Path(name) if Path(name).is_absolute() else out / name
        if path.is_file() and path.stat().st_mtime >= since - 0.01:  # coarse fs clock
            data = json.loads(path.read_text(encoding="utf-8"))
            create_table_artifact(table=rows(data), key=key,
                                  description=f"curate filter: {path.name}")


def _manifest_rows(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [{"what": "input rows", "value": manifest["input"]["row_count"]},
            {"what": "output rows", "value": manifest["output"]["row_count"]},
            {"what": "output shards", "value": manifest["output"]["file_count"]},
            {"what": "policy status", "value": manifest["policy"]["status"]},
            {"what": "thresholds applied", "value": manifest["policy"]["thresholds_applied"]},
            {"what": "completed_at", "value": manifest["producer"].get("completed_at")}]
    rows += [{"what": f"removed by {gate}", "value": n}
             for gate, n in manifest["declared"]["filtered"].items()]
    return rows


def _ledger_rows(ledger: dict[str, Any]) -> list[dict[str, Any]]:
    keys = ("n_input", "n_success", "n_filtered", "n_failed", "n_quarantined", "n_accounted",
            "balanced")
    return [{"field": k, "value": ledger[k]} for k in keys] + [
        {"field": f"filtered_by_reason.{k}", "value": v}
        for k, v in ledger["filtered_by_reason"].items()]
