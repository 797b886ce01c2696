"""The step contract: one declarative record per step (:class:`StepSpec`).

The command line, the flow planner and runner, the progress display and the
deployments iterate :data:`curator.steps.registry.STEPS`; none of them names a step.
A spec says what a step is (key, config model, run function, phases with the
counter that measures each), where its completion is recorded (the artifact whose
``producer.completed_at`` marks it done), how a flow derives its config, and how
its report reads to a person. See docs/architecture.md, "How to add a step".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.config import StepConfig
from curator.io import storage

#: ``(error_id, message)``: one problem a preflight found.
Problem = tuple[str, str]


@dataclass(frozen=True)
class Phase:
    """One engine pass of a step: its name, what a person sees, what counts documents."""

    name: str
    label: str
    counter: str  # the engine statistic that counts documents in this phase


@dataclass(frozen=True)
class CorpusView:
    """A corpus as a step reads it: where, and which fields are the text, id and source."""

    glob: str | list[str] | None
    text_field: str = "text"
    id_field: str | None = None
    source_field: str | None = None
    metadata_fields: tuple[str, ...] = ()

    def keys(self, glob_key: str = "input_glob") -> dict[str, Any]:
        """The config keys of a step that reads this corpus."""
        return {glob_key: self.glob, "text_field": self.text_field, "id_field": self.id_field,
                "source_field": self.source_field}


@dataclass
class FlowContext:
    """What a flow hands each step's ``derive``: the flow's corpus block, where things
    go, and the corpus the step reads (raw input, or what an earlier step produced)."""

    root: Path
    corpus: Any  # curator.flow.plan.Corpus: language, langpack_dir, id rules, ...
    reads: CorpusView
    approved_policy: str | None  # the policy the flow's approve block writes, if any
    #: the signals the filter's policy has thresholds for, when known while planning
    #: (the approve block's thresholds, else an existing policy file's); None: unknown
    policy_signals: tuple[str, ...] | None = None
    output_dir: str = ""  # this step's output dir under root
    done: bool = False  # its artifacts are complete for this config: the flow skips it
    #: the configs of the steps before it (enabled or not), by key, and which are enabled
    upstream: dict[str, dict[str, Any]] = field(default_factory=dict)
    upstream_enabled: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # a preflight's warnings go here


@dataclass(frozen=True)
class Rendering:
    """A report for people: markdown, tables (Prefect table artifacts), one CLI line."""

    markdown: str
    tables: dict[str, list[dict[str, Any]]]
    summary: str


def _none(_: Any) -> Any:
    return None


@dataclass(frozen=True)
class StepSpec:
    """Everything the outer layers need to know about one step."""

    key: str  # ``ingest``; the flow's ``steps.<key>`` block, the CLI command by default
    help: str  # one line: the CLI's help and the flow's description
    config: type[StepConfig]
    run: Callable[..., dict[str, Any]]  # run(config, executor=None, on_progress=None)
    phases: tuple[Phase, ...]
    output_subdir: str  # its output dir under a flow's output_root
    completion_name: Callable[[dict[str, Any]], str | None]  # file under output_dir
    input_key: str  # the config key that names what it reads (a glob or paths)
    derive: Callable[[FlowContext], dict[str, Any]]  # its config keys in a flow
    render: Callable[[dict[str, Any]], Rendering]
    #: the corpus it writes (``None``: it writes none): what the next step reads
    produces: Callable[[dict[str, Any]], CorpusView | None] = _none
    #: files besides its input whose bytes its result depends on (the filter's policy)
    depends_on: Callable[[dict[str, Any]], list[str]] = lambda cfg: []
    #: fields of ``flow_report.json`` taken from its result (the filter's policy status)
    flow_fields: Callable[[dict[str, Any]], dict[str, Any]] = lambda report: {}
    #: named paths under its output dir, listed in ``flow_plan.json`` ``artifacts``
    artifacts: dict[str, str] = field(default_factory=dict)
    #: it applies the policy a flow's ``approve`` block writes (approval runs before it)
    applies_policy: bool = False
    #: it reads Parquet as well as JSONL (else a flow's raw input must hold JSONL)
    reads_parquet: bool = False
    #: its CLI command when that is a verb unlike its key (``decontaminate``)
    command: str | None = None

    @property
    def command_name(self) -> str:
        """``curate <command_name>``: :attr:`command`, else the key."""
        return self.command or self.key

    @property
    def step_id(self) -> str:
        return f"curate/{self.key}"

    @property
    def flow_name(self) -> str:
        return f"curate-{self.key}"

    def completion_location(self, config: dict[str, Any]) -> str | None:
        """Where its completion artifact is: a local path, or an object's URL when
        ``output_dir`` is one (``s3://b/out/ingest_report.json``). An absolute
        ``completion_name`` (the filter's ``emit_manifest``) is a local path, always."""
        name = self.completion_name(config)
        out = config.get("output_dir")
        if name is None or out is None:
            return None
        if Path(name).is_absolute():
            return str(name)
        if storage.is_remote(out):
            return storage.join(str(out), str(name))
        return str(Path(out) / name)

    def completion_path(self, config: dict[str, Any]) -> Path | None:
        """:meth:`completion_location` as a local :class:`Path`; ``None`` for an object
        (a URL is no local path: read it with :meth:`read_result`)."""
        where = self.completion_location(config)
        return None if where is None or storage.is_remote(where) else Path(where)

    def read_result(self, config: dict[str, Any]) -> dict[str, Any] | None:
        """Its completion artifact as written (a local file, or the object on a bucket
        read through :mod:`curator.io.storage`), or ``None`` when there is none. The
        store's own errors (credentials, network) are ``object_storage_error``."""
        where = self.completion_location(config)
        if where is None:
            return None
        remote = storage.is_remote(where)
        try:
            with storage.store_errors(f"{self.step_id}: reading {where}", remote, url=where):
                try:
                    raw = storage.read_file(where)
                except FileNotFoundError:
                    raw = None  # no artifact there
        except OSError:  # a local file that cannot be read
            return None
        try:
            data = json.loads(raw.decode("utf-8")) if raw is not None else None
        except ValueError:  # not JSON
            return None
        return data if isinstance(data, dict) else None

    def rendered(self, report: dict[str, Any]) -> Rendering:
        """:attr:`render` of a report; a failed run's report is marked as such (its own
        rendering where the report has enough for it)."""
        producer = report.get("producer") or {}
        if producer.get("completed_at"):
            return self.render(report)
        err = report.get("error") or {"error_id": "incomplete", "message": "not completed"}
        head = f"# {self.step_id}: FAILED\n\n- error: `{err['error_id']}` {err['message']}\n\n"
        summary = f"{self.key}: FAILED [{err['error_id']}] {err['message']}"
        try:
            shown = self.render(report)
        except (KeyError, TypeError, ValueError, AttributeError):
            return Rendering(head, {}, summary)
        return Rendering(head + shown.markdown, shown.tables, summary)

    def is_complete(self, config: dict[str, Any]) -> bool:
        """The one completion rule: its artifact's ``producer.completed_at`` is set."""
        result = self.read_result(config)
        producer = (result or {}).get("producer")
        return isinstance(producer, dict) and bool(producer.get("completed_at"))
