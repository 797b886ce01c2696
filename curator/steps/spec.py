"""The step contract: one declarative record per step (:class:`StepSpec`).

The command line, the flow planner and runner, the progress display and the
deployments iterate :data:`curator.steps.registry.STEPS`; none of them names a step.
A spec says what a step is (key, config model, run function, phases with the
counter that measures each), where its completion is recorded (the artifact whose
``producer.completed_at`` marks it done), how a flow derives its config, and how
its report reads to a person. See docs/architecture.md, "How to add a step".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any, Literal

from curator import models
from curator.config import StepConfig
from curator.errors import CuratorError
from curator.io import storage
from curator.models import CompletionArtifact
from curator.steps.funnel import FunnelReader

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


#: what a port carries: a corpus (a :class:`CorpusView`), a file or directory path
#: (manifest, ledger, rejected records, policy, candidates, summary, plan, holdout), or
#: the score columns a step writes into its corpus (:class:`ScoreColumns`)
PortKind = Literal["corpus", "manifest", "ledger", "rejected", "policy", "candidates",
                   "summary", "plan", "holdout", "scores"]


@dataclass(frozen=True)
class Port:
    """One named, typed thing a step consumes or provides.

    A provided port's :attr:`locate` says where it is from the step's (derived) config:
    a :class:`CorpusView` for a corpus, a path for a file, ``None`` when this
    configuration writes none. A flow wires steps by ports: a step asks its
    :class:`FlowContext` for the :class:`Offer` of a port name (``flow.offer("manifest")``),
    never for another step's config keys."""

    name: str
    kind: PortKind
    locate: Callable[[dict[str, Any]], Any] = field(default=lambda cfg: None, compare=False)


def in_output(name: str | None) -> Callable[[dict[str, Any]], str | None]:
    """A provided port's ``locate`` for a file ``name`` under the step's ``output_dir``
    (an absolute ``name`` stands as it is; ``None``: the step writes no such file)."""

    def locate(config: dict[str, Any]) -> str | None:
        out = config.get("output_dir")
        if name is None or out is None:
            return None
        if Path(name).is_absolute():
            return name
        return storage.join(str(out), name) if storage.is_remote(str(out)) \
            else str(Path(out) / name)

    return locate


@dataclass(frozen=True)
class ScoreColumns:
    """The ``__<signal>`` score columns a step writes into the corpus it provides:
    those of the policy it applies, unless :attr:`none_because` says why it writes none."""

    none_because: str | None = None


@dataclass(frozen=True)
class Offer:
    """A port an earlier step of a flow provides: the step, whether it runs in this
    flow, its config, and where the port is (``value``)."""

    port: Port
    spec: StepSpec
    enabled: bool
    config: dict[str, Any]
    value: Any

    @property
    def step(self) -> str:
        return self.spec.key

    def locate(self, name: str) -> Any:
        """Where another port ``name`` of the same step is (``None``: it has none)."""
        return next((p.locate(self.config) for p in self.spec.provides if p.name == name),
                    None)


@dataclass
class FlowContext:
    """What a flow hands each step's ``derive``: the flow's corpus block, where things
    go, the corpus the step reads (raw input, or what an earlier step provides) and the
    ports every earlier step provides (:meth:`offer`)."""

    root: Path
    corpus: Any  # curator.flow.plan.Corpus: language, langpack_dir, id rules, ...
    reads: CorpusView
    approved_policy: str | None  # the policy the flow's approve block writes, if any
    #: the signals the filter's policy has thresholds for, when known while planning
    #: (the approve block's thresholds, else an existing policy file's); None: unknown
    policy_signals: tuple[str, ...] | None = None
    output_dir: str = ""  # this step's output dir under root
    done: bool = False  # its artifacts are complete for this config: the flow skips it
    #: every port the steps before it provide (enabled or not), in flow order
    offers: list[Offer] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # a preflight's warnings go here

    def offer(self, name: str) -> Offer | None:
        """The port ``name`` as the nearest earlier *enabled* step provides it, else as
        the nearest earlier step that is off provides it (its files may exist from an
        earlier run), else ``None``."""
        found = [o for o in self.offers if o.port.name == name]
        on = [o for o in found if o.enabled]
        return (on or found or [None])[-1]

    def stale(self, name: str) -> list[Offer]:
        """Offers of ``name`` by steps that are off and come after the one :meth:`offer`
        picks: what an earlier run of a disabled step may have left."""
        picked = self.offer(name)
        found = [o for o in self.offers if o.port.name == name]
        after = found[found.index(picked) + 1:] if picked in found else found
        return [o for o in after if not o.enabled]


@dataclass(frozen=True)
class Rendering:
    """A report for people: markdown, tables (Prefect table artifacts), one CLI line."""

    markdown: str
    tables: dict[str, list[dict[str, Any]]]
    summary: str


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
    render: Callable[[Any], Rendering]  # render(its completion artifact, a :attr:`model`)
    #: what it reads from earlier steps, by port (a flow wires steps by these names)
    consumes: tuple[Port, ...] = ()
    #: what it writes that a later step, the audit or the report reads, by port; its
    #: ``corpus`` port (a :class:`CorpusView`) is what the next step reads
    provides: tuple[Port, ...] = ()
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
    #: the config keys that may name an fsspec URL (docs/storage.md); a URL in any other
    #: path-like key is refused before anything runs (``object_storage_unsupported``)
    url_keys: tuple[str, ...] = ()
    #: its audit hook: the checker that proves its completion artifact from disk
    #: (``path -> (block, findings)``, ``curate audit`` with ``output_root``)
    audit: Callable[[Path], Any] | None = None
    #: JSON reports it writes beside its corpus besides its completion artifact (the
    #: filter's ledger): with every completion artifact, never read as corpus input
    reports: tuple[str, ...] = ()
    #: the model of its completion artifact (:mod:`curator.models`): how every reader
    #: parses it (a step without its own model is read as the common base)
    model: type[CompletionArtifact] = CompletionArtifact
    #: its place in the run report's funnel: its typed completion artifact -> ``(rows,
    #: tiers)`` (:mod:`curator.steps.funnel`); ``None``: it counts no documents in and out
    funnel: FunnelReader | None = None

    def __post_init__(self) -> None:
        # the key is written here alone: the config and the run read it from the spec.
        # Bound once per config class: a copy of a spec (dataclasses.replace, a test's
        # variant) never rebinds the class its original owns
        if "step_spec" not in vars(self.config):
            self.config.step_spec = self

    def produces(self, config: dict[str, Any]) -> CorpusView | None:
        """The corpus it writes with ``config`` (its ``corpus`` port), if any."""
        return next((p.locate(config) for p in self.provides if p.kind == "corpus"
                     and p.name == "corpus"), None)

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

    def read_result(self, config: dict[str, Any]) -> CompletionArtifact | None:
        """Its completion artifact parsed through its model (a local file, or the object
        on a bucket read through :mod:`curator.io.storage`), or ``None`` when there is
        none (or a local file that cannot be read). A malformed one (not JSON, a field
        of the wrong type) is ``artifact_invalid`` naming the file and the field; the
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
                    return None  # no artifact there
        except OSError:  # a local file that cannot be read
            return None
        return models.load(self.model, raw, where)

    def rendered(self, report: CompletionArtifact | dict[str, Any]) -> Rendering:
        """:attr:`render` of a report (its model, or the dict a run returned), read as
        :attr:`model`; a failed run's report is marked as such (its own rendering where
        the report has enough for it)."""
        if isinstance(report, self.model):
            artifact = report
        else:
            data = report.dump() if isinstance(report, CompletionArtifact) else report
            artifact = models.parse(self.model, data, f"{self.step_id}'s report")
        if artifact.is_complete:
            return self.render(artifact)
        err = artifact.failure()
        head = f"# {self.step_id}: FAILED\n\n- error: `{err.error_id}` {err.message}\n\n"
        summary = f"{self.key}: FAILED [{err.error_id}] {err.message}"
        try:
            shown = self.render(artifact)
        except (KeyError, TypeError, ValueError, AttributeError):
            return Rendering(head, {}, summary)
        return Rendering(head + shown.markdown, shown.tables, summary)

    def is_complete(self, config: dict[str, Any]) -> bool:
        """Whether its completion artifact is complete (the one rule:
        :attr:`CompletionArtifact.is_complete`); a malformed one is not."""
        try:
            result = self.read_result(config)
        except CuratorError as exc:
            if exc.error_id != models.ARTIFACT_INVALID:
                raise
            return False
        return result is not None and result.is_complete


#: the registry's steps in flow order (:func:`register`, called by
#: :mod:`curator.steps.registry`, which ``curator.steps`` imports first)
_REGISTERED: tuple[StepSpec, ...] = ()


def register(steps: tuple[StepSpec, ...]) -> None:
    """Make ``steps`` the steps :func:`offers_at_root` knows (the registry's, in order)."""
    global _REGISTERED
    _REGISTERED = steps


def registered() -> tuple[StepSpec, ...]:
    """The registry's steps, in flow order. The registry is imported here when nothing
    has yet: at call time (every step module is loaded by then), by name, so no step
    module depends on it at import (a stage unpickled in a worker imports its own
    package, not every step)."""
    if not _REGISTERED:
        import_module("curator.steps.registry")  # it calls register()
    return _REGISTERED


#: the files a flow writes in its root and step directories (never read as a corpus)
FLOW_FILES = ("flow_plan.json", "flow_report.json", ".curate_flow_step.json")


def sidecars() -> frozenset[str]:
    """The JSON reports the registered steps (and a flow) write beside corpora: never
    read as corpus input, though ``.json`` is a JSON-lines extension. Each step's
    completion artifact, its ``reports`` and the JSON files of its ``artifacts``."""
    names = set(FLOW_FILES)
    for spec in registered():
        names.add(Path(str(spec.completion_name({}))).name)
        names.update(spec.reports)
        names.update(n for n in spec.artifacts.values() if n.endswith(".json"))
    return frozenset(names)


def without_sidecars(files: list[str]) -> list[str]:
    """``files`` less the reports steps write beside corpora (:func:`sidecars`, built
    once for the whole list)."""
    names = sidecars()
    return [f for f in files if Path(f).name not in names]


def offers(planned: list[tuple[StepSpec, dict[str, Any], bool]]) -> list[Offer]:
    """Every port the ``(spec, config, enabled)`` steps provide, in their order."""
    return [Offer(port, spec, enabled, config, port.locate(config))
            for spec, config, enabled in planned for port in spec.provides]


def offers_at_root(root: Path, before: str | None, configs: dict[str, dict[str, Any]]
                   ) -> list[Offer]:
    """What the steps before ``before`` (every step: ``None``) left under a flow's
    output ``root``: their
    ports as ``configs`` (a ``flow_plan.json``'s step configs) place them, else as the
    flow's default layout does; each as a step that is off (its files may exist)."""
    planned = []
    for spec in registered():
        if spec.key == before:
            break
        config = configs.get(spec.key) or {}
        planned.append((spec, {**config, "output_dir": config.get("output_dir")
                               or str(root / spec.output_subdir)}, False))
    return offers(planned)
