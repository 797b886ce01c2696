"""The ``curate`` command line. Errors map to exit codes in one place (CuratorError)."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from curator.checkpoint import METADATA_DIRNAME, read_checkpoint_files
from curator.errors import CuratorError
from curator.io import storage
from curator.steps.registry import STEPS
from curator.steps.spec import StepSpec

if TYPE_CHECKING:
    from curator.steps.help import KeyHelp

# Defaults for a Prefect that runs without a configured server (a temporary local
# one): no telemetry, and time for a first-run database migration.
for _key, _value in {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}.items():
    os.environ.setdefault(_key, _value)

app = typer.Typer(
    help="Curate LLM training corpora: resumable, auditable steps on Prefect.",
    epilog="Each step's --help (curate ingest --help, ..., curate flow --help) lists its "
           "config keys with their defaults. curate status OUTPUT_ROOT says which steps "
           "finished, which resume, and the next command. Shell completion: "
           "curate --install-completion.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)
checkpoint_app = typer.Typer(help="Inspect checkpoint directories.", no_args_is_help=True)
app.add_typer(checkpoint_app, name="checkpoint")

ConfigOpt = Annotated[Path, typer.Option("--config", "-c", help="the step's YAML config")]
StepConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="the step's YAML config (or give every key by --set)"),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="override a config key: key=value (repeatable; dotted keys)"),
]


class _NoTracebackForUserErrors(logging.Filter):
    """A refusal with an error id is the user's to fix: log its message, not a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], CuratorError):
            record.exc_info = None
            record.exc_text = None
        return True


def _quiet_user_errors() -> None:
    for name in ("prefect.flow_runs", "prefect.task_runs"):
        logging.getLogger(name).addFilter(_NoTracebackForUserErrors())


def fail(exc: CuratorError) -> None:
    """Print a user-facing error and exit with its code."""
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


KEYS_TITLE = "Config keys (in --config FILE, or --set KEY=VALUE; CURATE_KEY in the environment)"


def _keys_help(keys: Callable[[], list[KeyHelp]]) -> type[TyperCommand]:
    """A command whose ``--help`` ends with its config keys and their defaults, built
    from the config model only when help is asked for (curator.steps.help)."""

    class KeysHelpCommand(TyperCommand):
        def format_help(self, ctx: Any, formatter: Any) -> None:  # typer's vendored click
            super().format_help(ctx, formatter)
            rows = keys()
            if self.rich_markup_mode is None:  # click's plain help (no rich)
                with formatter.section(KEYS_TITLE):
                    formatter.write_dl([(r.key, f"{r.default}  [{r.type}] {r.description}")
                                        for r in rows])
                return
            from rich.panel import Panel
            from rich.table import Table
            from rich.text import Text
            from typer.rich_utils import _get_rich_console

            console = _get_rich_console()
            width = console.width  # narrow terminals: defaults and types fold, not the text
            table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1),
                          pad_edge=False, expand=True)
            table.add_column("key", style="bold cyan", overflow="fold",
                             max_width=max(20, width // 3))
            table.add_column("default", overflow="fold", max_width=max(12, width // 5))
            table.add_column("type", style="yellow", overflow="fold",
                             max_width=max(10, width // 7))
            table.add_column("description", ratio=1, min_width=min(40, width // 3))
            for r in rows:
                table.add_row(Text(r.key), Text(r.default, style="bold" if r.required else ""),
                              Text(r.type), Text(r.description))  # Text: no markup
            console.print(Panel(table, title=KEYS_TITLE, title_align="left",
                                border_style="dim"))

    return KeysHelpCommand


def _step_keys(spec: StepSpec) -> Callable[[], list[KeyHelp]]:
    def keys() -> list[KeyHelp]:
        from curator.steps.help import config_keys

        return config_keys(spec.config)

    return keys


def _flow_keys() -> list[KeyHelp]:
    from curator.steps.help import flow_config_keys

    return flow_config_keys()


def _step_command(spec: StepSpec) -> Callable[..., None]:
    """``curate <step> --config FILE [--set key=value ...]`` for one registered step."""

    def command(config: StepConfigOpt = None, set_: SetOpt = None) -> None:
        from flows.direct import run_step, use_prefect
        from flows.terminal import progress_bars, warning_lines

        _quiet_user_errors()
        try:
            source = str(config) if config else {}
            with progress_bars([spec]):
                if use_prefect():
                    from flows.steps import STEP_FLOWS

                    report = STEP_FLOWS[spec.key](source, set_ or [])
                else:
                    report = run_step(spec, source, set_ or [])
        except CuratorError as exc:
            fail(exc)
            return
        typer.echo(spec.rendered(report).summary)
        for line in warning_lines(report):  # what a person must see, not only the JSON
            typer.echo(f"warning: {line}", err=True)

    command.__doc__ = spec.help
    command.__name__ = spec.command_name.replace("-", "_")
    return command


for _spec in STEPS:
    app.command(_spec.command_name, cls=_keys_help(_step_keys(_spec)))(_step_command(_spec))


@app.command("flow", cls=_keys_help(_flow_keys))
def flow_(
    config: ConfigOpt,
    plan: Annotated[bool, typer.Option("--plan", help="write flow_plan.json, run nothing")]
    = False,
) -> None:
    """Run the enabled steps (and approval) as one flow (docs/flow.md)."""
    from flows.direct import run_flow_direct, use_prefect
    from flows.terminal import progress_bars

    _quiet_user_errors()
    try:
        with progress_bars(STEPS):
            if use_prefect():
                from flows.pipeline_flow import curate_flow

                result = curate_flow(str(config), plan=plan)
            else:
                result = run_flow_direct(str(config), plan=plan)
    except CuratorError as exc:
        fail(exc)
        return
    root = str(result["output_root"])  # a local path, or a URL (s3://...)

    def at(name: str) -> str:
        return storage.join(root, name) if storage.is_remote(root) else str(Path(root) / name)

    if plan:
        enabled = [s["key"] for s in result["steps"] if s["enabled"]]
        typer.echo(f"plan: {', '.join(enabled)}; written to {at('flow_plan.json')}")
        for warning in result["warnings"]:
            typer.echo(f"warning: {warning}", err=True)
        return
    for step in result["steps"]:
        typer.echo(f"  {step['step_id']:<16} {step['status']:<9} {step['output_dir'] or ''}")
        for line in _step_warnings(step):  # what this run's step reported, not only JSON
            typer.echo(f"warning: {step['step_id']}: {line}", err=True)
    typer.echo(f"flow: {result['status']}; policy {result['policy_status']} "
               f"(applied: {result['policy_applied']}); report {at('flow_report.json')}")
    try:
        page = storage.is_file_at(at("report.html"))
    except Exception:  # the bucket's own errors: this line is a courtesy
        page = False
    if page:
        typer.echo(f"the run on one page: {at('report.html')}")


def _step_warnings(step: dict[str, Any]) -> list[str]:
    """The warnings of a step a flow ran (``status: ok``), read from its report."""
    from flows.terminal import warning_lines

    spec = next((s for s in STEPS if s.step_id == step.get("step_id")), None)
    if spec is None or step.get("status") != "ok" or not step.get("output_dir"):
        return []
    try:
        report = spec.read_result({"output_dir": step["output_dir"]})
    except CuratorError:  # an unreadable report is curate status's and report's to say
        return []
    return warning_lines(report) if report is not None else []


@app.command("report")
def report_(
    output_root: Annotated[str, typer.Argument(help="a flow's output_root (a path, or "
                                                    "the URL of a bucket root)")],
) -> None:
    """Write OUTPUT_ROOT/report.html: one self-contained page of the run (docs/report.md)."""
    from curator.report import write_report

    remote = storage.is_remote(output_root)
    if not remote and not Path(output_root).is_dir():
        fail(CuratorError("output_root_missing", f"no directory {output_root}"))
    try:
        try:
            written = write_report(output_root if remote else Path(output_root))
        except OSError as exc:  # report.html a directory, no permission, disk full
            raise CuratorError("report_unwritable", f"cannot write the report in "
                               f"{output_root}: {exc}") from exc
    except CuratorError as exc:  # a malformed flow_plan.json or flow_report.json too
        fail(exc)
        return
    typer.echo(f"report {written}")


@app.command("status")
def status_(
    path: Annotated[str, typer.Argument(help="a flow's output_root, or one step's output_dir "
                                        "(a path, or a URL: s3://bucket/run)")],
    config: Annotated[
        str | None, typer.Option("--config", "-c", help="the flow's config, for the next "
                                 "command it prints")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Which steps finished, which resume, which did not run, and the next command."""
    from curator.flow.status import root_status

    try:
        result = root_status(path, flow_config=config)
    except CuratorError as exc:
        fail(exc)
        return
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    kind = ("flow output root" if result.kind == "flow"
            else f"output dir of curate {result.steps[0].key}")
    typer.echo(f"{result.path}: {kind}"
               + (f"; last flow run: {result.flow_status}" if result.flow_status else ""))
    for s in result.steps:
        enabled = "  (disabled in the plan)" if s.enabled is False else ""
        detail = ""
        if s.state == "finished":
            detail = f"completed {s.completed_at}"
            if s.error:  # a verdict on complete artifacts (the audit's findings)
                detail += f"; verdict [{s.error.get('error_id')}]"
        elif s.state == "resumable":
            detail = f"checkpoint {s.checkpoint}" if s.checkpoint else ""
        if s.error and s.state != "finished":
            detail = (detail + "; " if detail else "") + \
                f"[{s.error.get('error_id')}] {str(s.error.get('message', ''))[:160]}"
        typer.echo(f"  {s.key:<16} {s.state:<10} {detail}{enabled}".rstrip())
        for note in s.notes:
            typer.echo(f"  {'':<16} {'':<10} {note}")
    for note in result.notes:
        typer.echo(f"note: {note}")
    for command in result.next_commands:
        typer.echo(f"next: {command}")


@app.command("demo-corpus")
def demo_corpus(
    out: Annotated[Path, typer.Option("--out", help="folder to write the raw JSONL into")],
    docs: Annotated[int, typer.Option("--docs", help="documents (noise lines come on top)")]
    = 3000,
    seed: Annotated[int, typer.Option("--seed", help="same seed, same bytes")] = 1234,
) -> None:
    """Write a deterministic demo corpus: English-like web text with known noise."""
    from curator_demo import LABELLED_NAME, MANIFEST_NAME, generate_demo_corpus

    try:
        manifest = generate_demo_corpus(out, docs=docs, seed=seed)
    except CuratorError as exc:
        fail(exc)
        return
    noise = {**manifest["content_kinds"], **manifest["line_noise"]}
    typer.echo(
        f"demo corpus: {manifest['docs']} documents (seed {seed}), "
        f"{len(manifest['files'])} files, {manifest['total_bytes'] / 1e6:.1f} MB in {out}; "
        f"noise: {', '.join(f'{k} {v}' for k, v in noise.items() if k != 'clean')}; "
        f"manifest {out / MANIFEST_NAME}; labelled sample for curate evaluate "
        f"{out / LABELLED_NAME}"
    )


@app.command()
def approve(
    candidate: Annotated[Path, typer.Option("--candidate", help="candidate_policies.yaml")],
    out: Annotated[Path, typer.Option("--out", help="where to write approved_policy.yaml")],
    approver: Annotated[str, typer.Option("--approver", help="who approves")] = "",
    evidence: Annotated[str, typer.Option("--evidence", help="what the decision rests on")]
    = "",
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="signal=VALUE (one-sided) or signal=LO:HI (interval); "
                                   "repeatable"),
    ] = None,
    method: Annotated[str, typer.Option("--method", help="manual or ablation")] = "manual",
    date: Annotated[str | None, typer.Option("--date", help="YYYY-MM-DD (default: today, UTC)")]
    = None,
) -> None:
    """Approve a candidate policy: chosen thresholds plus approver and evidence."""
    from curator.policy import load_candidate, parse_threshold_assignments, promote, write_approved

    try:
        if out.resolve() == candidate.resolve():
            raise CuratorError("approve_out_is_candidate",
                               f"--out {out} would overwrite the candidate; write elsewhere")
        doc, warnings = promote(
            load_candidate(candidate), parse_threshold_assignments(set_ or []),
            approver=approver, evidence=evidence, method=method, date=date,
            log_warnings=False,
        )
        for warning in warnings:
            typer.echo(f"warning: {warning}", err=True)
        digest = write_approved(doc, out)
    except CuratorError as exc:
        fail(exc)
        return
    typer.echo(f"approved policy: {len(doc['thresholds'])} thresholds, written to {out}; "
               f"policy digest {digest}")


@app.command()
def evaluate(
    policy: Annotated[Path, typer.Option("--policy", help="approved_policy.yaml")],
    labelled: Annotated[
        list[Path],
        typer.Option("--labelled", help="labelled JSON lines {id, text, label, phenomenon} "
                                        "(repeatable)"),
    ],
    langpack_dir: Annotated[
        str | None, typer.Option("--langpack-dir", help="where the policy's pack is (default: "
                                                        "the packs installed with curator)")
    ] = None,
    language: Annotated[
        list[str] | None,
        typer.Option("--language", help="add the language gate: keep these codes "
                                        "(repeatable; e.g. en)"),
    ] = None,
    min_langid_score: Annotated[
        float, typer.Option("--min-langid-score", help="the language gate's floor")
    ] = 0.3,
    words: Annotated[
        str | None, typer.Option("--words", help="add the word bounds: MIN:MAX")
    ] = None,
    report: Annotated[  # a str: Path would drop the trailing "/" of a directory
        str | None, typer.Option("--report", help="write the JSON report here (a file)")
    ] = None,
) -> None:
    """Measure an approved policy on labelled sets: false rejection, noise removal."""
    from curator.artifacts import write_json_atomic
    from curator.evaluate import check_report_path, evaluate_policy, render_text

    try:
        if report is not None:  # before anything runs: never over an input, never a dir
            check_report_path(report, policy=policy, labelled=labelled,
                              langpack_dir=langpack_dir)
        bounds = None
        if words is not None:
            lo, sep, hi = words.partition(":")
            try:
                bounds = (int(lo), int(hi))
            except ValueError:
                sep = ""
            if not sep:
                raise CuratorError("config_error", f"--words {words!r}: expected MIN:MAX, "
                                                   "two integers")
        result = evaluate_policy(policy, labelled, langpack_dir=langpack_dir,
                                 language_codes=language or [],
                                 min_langid_score=min_langid_score, words=bounds)
        if report is not None:
            try:
                write_json_atomic(report, result)
            except OSError as exc:  # a parent that is a file, no permission, disk full
                raise CuratorError("report_unwritable",
                                   f"cannot write --report {report}: {exc}") from exc
    except CuratorError as exc:
        fail(exc)
        return
    typer.echo(render_text(result))
    if report is not None:
        typer.echo(f"report {report}")


@checkpoint_app.command("show")
def checkpoint_show(
    path: Annotated[Path, typer.Argument(help="the checkpoint_path a run was given")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """How many source partitions each writer file records as complete; damaged files."""
    meta = path / METADATA_DIRNAME
    if not meta.is_dir():
        fail(CuratorError("checkpoint_not_found", f"no checkpoint metadata under {path}"))
    writers, damaged, union = [], [], set()
    files = sorted(meta.glob("*.mdb"))
    results = read_checkpoint_files(files, with_stats=False)  # in a child: LMDB may crash
    for file in files:
        result = results[file]
        if isinstance(result, BaseException):
            damaged.append({"file": file.name, "error": f"{type(result).__name__}: {result}"})
            continue
        completed, _stats = result
        writers.append({"file": file.name, "completed": len(completed)})
        union |= completed
    from curator.models import CheckpointSummary, build

    report = build(CheckpointSummary, {"checkpoint": str(path), "completed_sources": len(union),
                                       "writers": writers, "damaged": damaged})
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
