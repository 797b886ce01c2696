"""The ``curate`` command line. Errors map to exit codes in one place (CuratorError)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from curator.checkpoint import METADATA_DIRNAME, read_checkpoint_file
from curator.errors import CuratorError

app = typer.Typer(
    help="Curate LLM training corpora: resumable, auditable steps on Prefect.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
checkpoint_app = typer.Typer(help="Inspect checkpoint directories.", no_args_is_help=True)
app.add_typer(checkpoint_app, name="checkpoint")


def fail(exc: CuratorError) -> None:
    """Print a user-facing error and exit with its code."""
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


@checkpoint_app.command("show")
def checkpoint_show(
    path: Path = typer.Argument(..., help="the checkpoint_path a run was given"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """How many source partitions each writer file records as complete; damaged files."""
    meta = path / METADATA_DIRNAME
    if not meta.is_dir():
        fail(CuratorError("checkpoint_not_found", f"no checkpoint metadata under {path}"))
    writers, damaged, union = [], [], set()
    for file in sorted(meta.glob("*.mdb")):
        try:
            completed, _stats = read_checkpoint_file(file)
        except Exception as exc:  # noqa: BLE001 - reported, as the engine does
            damaged.append({"file": file.name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        writers.append({"file": file.name, "completed": len(completed)})
        union |= completed
    report = {"checkpoint": str(path), "completed_sources": len(union), "writers": writers,
              "damaged": damaged}
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    typer.echo(f"{path}: {len(union)} source partitions complete")
    for w in writers:
        typer.echo(f"  {w['file']}: {w['completed']}")
    for d in damaged:
        typer.echo(f"  {d['file']}: DAMAGED, skipped by runs ({d['error']})")


def main() -> None:  # pragma: no cover - console entry point
    try:
        app()
    except CuratorError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
