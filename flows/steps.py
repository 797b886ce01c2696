"""Every step's Prefect flow, built by one factory from the step registry.

``flows.steps:<key>_flow`` (``ingest_flow``, ``profile_flow``, ...) is each step's
flow, named ``curate-<key>``; ``STEP_FLOWS`` maps a step key to it. A step flow
loads the config (a YAML path or a mapping, plus ``key=value`` overrides), runs the
step on the configured executor (each source partition also a Prefect task run),
routes the engine's logs to the run logger, reports progress per phase, and
publishes the step's report (markdown and tables) as Prefect artifacts, on failure
too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import Flow, flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from curator.artifacts import readable_table
from curator.errors import CuratorError
from curator.io import storage
from curator.models import CompletionArtifact
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec
from flows.prefect_logging import engine_logs_to_prefect
from flows.progress import PhaseProgress
from flows.step_config import step_config, step_executor


def make_step_flow(
    spec: StepSpec,
    task_runner: TaskRunner[Any] | None = None,
    executor: Callable[[StepSpec, Any], Any] | None = None,
) -> Flow[..., dict[str, Any]]:
    """The Prefect flow of one step: on a thread pool, the configured executor's
    partitions followed by one task run each; or, from ``flows.ray_runner``, on
    prefect-ray's runner with ``executor(spec, cfg)`` building the executor."""

    def run_step(config: str | dict[str, Any],
                 overrides: list[str] | None = None) -> dict[str, Any]:
        cfg = step_config(spec.config, config, overrides)
        executor_ = executor(spec, cfg) if executor else step_executor(cfg)
        get_run_logger().info("%s of %s into %s on %s", spec.key,
                              getattr(cfg, spec.input_key), cfg.output_dir,
                              executor_.describe())
        since = time.time()
        try:
            with executor_, engine_logs_to_prefect():
                progress = PhaseProgress(spec.key, key_prefix=spec.key)
                return spec.run(cfg, executor_, on_progress=progress)
        finally:
            publish(spec, cfg.model_dump(mode="json"), since)

    run_step.__doc__ = (f"{spec.help} ``config`` is a YAML path or a mapping of "
                        f"{spec.key} keys; ``overrides`` are ``key=value`` strings as "
                        "for ``--set``.")
    run_step.__name__ = run_step.__qualname__ = f"{spec.key}_flow"
    return flow(name=spec.flow_name, description=spec.help,
                task_runner=task_runner or ThreadPoolTaskRunner(max_workers=64),
                validate_parameters=False, persist_result=False)(run_step)


def publish(spec: StepSpec, config: dict[str, Any], since: float) -> None:
    """The step's report as Prefect artifacts: ``<key>-report`` (markdown) and
    ``<key>-<table>``, floats to 3 significant digits (the files keep every digit), for
    a local ``output_dir`` and for one on a bucket alike (the completion artifact is
    read through :meth:`StepSpec.read_result`). A report an earlier run left (a refusal
    writes none) is skipped: see :func:`written_since`."""
    where = spec.completion_location(config)
    if where is None:
        return
    try:
        report = spec.read_result(config)
    except CuratorError as exc:  # the store failed: never mask the step's own outcome
        get_run_logger().warning("%s: the report at %s was not read for the Prefect "
                                 "artifacts: %s", spec.step_id, where, exc.message)
        return
    if report is None or not written_since(where, report, since):
        return
    shown = spec.rendered(report)
    name = where.rstrip("/").rsplit("/", 1)[-1]
    create_markdown_artifact(markdown=shown.markdown, key=f"{spec.key}-report",
                             description=f"{spec.step_id}: {name}")
    for key, rows in published_tables(spec, shown.tables).items():
        create_table_artifact(table=rows, key=key,
                              description=f"{spec.step_id}: {key.removeprefix(spec.key + '-')}")


def written_since(where: str, report: CompletionArtifact, since: float) -> bool:
    """Whether the completion artifact at ``where`` was written by the run that began at
    ``since`` (``time.time()`` in this process), not left by an earlier one.

    A local file: its mtime (this machine's clock, nanoseconds), as always. An object:
    the report's own ``producer.started_at``, which :class:`~curator.steps.base.StepRun`
    stamps when the run begins, in this process (the driver, also with Ray), after
    ``since``. That is used rather than the object's modification time because the
    latter is the store's clock (skewed against this machine's by any amount), its name
    and form differ by store (``LastModified``, ``updated``, ``mtime``; some give none),
    and reading it costs one more request. ``started_at`` has a resolution of one
    second, so it is compared with ``since`` truncated to the second: a report is
    wrongly taken only if an earlier run both started and ended within the second in
    which this one began and this one then wrote nothing (a refusal)."""
    if not storage.is_remote(where):
        try:
            return Path(where).stat().st_mtime >= since - 0.01
        except OSError:
            return False
    started = report.producer.started_at if report.producer is not None else None
    try:
        began = datetime.fromisoformat(str(started))
    except ValueError:
        return False  # no producer block: not written by a run of this version
    if began.tzinfo is None:
        return False
    return began >= datetime.fromtimestamp(int(since), UTC)


def published_tables(spec: StepSpec, tables: dict[str, list[dict[str, Any]]]
                     ) -> dict[str, list[dict[str, Any]]]:
    """The table artifacts of a rendering, by artifact key (``<key>-<table>``): the
    tables with rows, floats to 3 significant digits."""
    return {f"{spec.key}-{name}": readable_table(rows) for name, rows in tables.items() if rows}


STEP_FLOWS: dict[str, Callable[..., dict[str, Any]]] = {
    spec.key: make_step_flow(spec) for spec in STEPS}
globals().update({f"{key}_flow": fl for key, fl in STEP_FLOWS.items()})

