"""Environment for quiet, hermetic local Prefect and Ray runs (tests and benchmarks).

Only variable names and values: importing this module imports neither prefect nor
ray, so the values can be set before either is imported (shared notes, "A
hermetic, quiet pytest setup").
"""

from __future__ import annotations

from pathlib import Path

_OFF_SERVICES = ("SCHEDULER", "LATE_RUNS", "FOREMAN", "TRIGGERS", "DB_VACUUM",
                 "CANCELLATION_CLEANUP", "PAUSE_EXPIRATIONS", "REPOSSESSOR")


def hermetic_env(home: Path) -> dict[str, str]:
    """A private Prefect home under ``home``, an in-memory server database, no
    telemetry, quiet logs, the server services a local run does not need switched
    off, and a single-machine Ray on loopback."""
    env = {
        "PREFECT_HOME": str(home / "prefect-home"),
        "PREFECT_PROFILES_PATH": str(home / "profiles.toml"),
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:///:memory:",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
        "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "100",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        # a Ray started here is single-machine: keep it on 127.0.0.1
        # (see executors/ray.py, _keep_local_ray_on_loopback)
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    }
    for service in _OFF_SERVICES:
        env[f"PREFECT_SERVER_SERVICES_{service}_ENABLED"] = "false"
    return env


def small_ray_kwargs(temp_dir: Path, num_cpus: int = 2) -> dict[str, object]:
    """``ray.init`` arguments for the small local Ray the notes recommend: no
    dashboard, a 200 MiB object store, bound to loopback, a short temp dir (AF_UNIX
    socket paths are limited to 107 bytes)."""
    return {
        "num_cpus": num_cpus,
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": "ERROR",
        "object_store_memory": 200 * 1024 * 1024,
        "_temp_dir": str(temp_dir),
        "_node_ip_address": "127.0.0.1",
    }
