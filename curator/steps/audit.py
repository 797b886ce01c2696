"""curate audit: prove from disk what the filter's artifacts claim.

1. refuse what cannot be audited: a target that matches nothing, a declared manifest,
   ledger or policy that does not exist, containment without comparison fields or a
   reference (exit 2);
2. scan (engine pass, one unit per file): every target shard, reference file and
   rejected file is read once; its bytes, digest, rows, first fault and sources go to
   the work dir (:mod:`curator.audit.scan`) and are merged from disk, its ids and keys
   to the exchange, keyed by their hash; ``net`` (one unit per bucket) nets the
   multisets per bucket, and the driver sums the buckets' summaries
   (:mod:`curator.audit.netting`);
3. the checks (:mod:`curator.audit.checks`) and ``audit_report.json`` with
   ``audit_summary.md``, complete (``producer.completed_at``) whatever the verdict;
4. the verdict: findings raise ``audit_findings`` (exit 1) *after* the complete report
   is written (:meth:`curator.steps.base.StepRun.verdict`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from curator import models
from curator.artifacts import file_digest
from curator.audit.checks import AuditFacts
from curator.audit.kinds import ArtifactKind, found, kinds_of
from curator.audit.netting import NetStage, Netted, summarise
from curator.audit.rebase import Rebase, rebase_values
from curator.audit.report import (
    REPORT_NAME,
    SCHEMA_VERSION,
    SUMMARY_NAME,
    build_report,
    render,
)
from curator.audit.scan import FileScan, ScanStage, load_scans, scan_path
from curator.config import StepConfig
from curator.corpus.formats import JSONL_EXTENSIONS
from curator.corpus.records import RecordSpec
from curator.errors import CuratorError
from curator.exchange import BucketPartitioning, Exchange, choose_buckets
from curator.exchange.buckets import summary_file
from curator.execution import Executor
from curator.io import shared, storage
from curator.io.partitioning import FilePartitioningStage, resolve_input_files
from curator.models import AuditReport, FlowPlanFile, RunManifest
from curator.steps.base import ProgressHook, StepRun
from curator.steps.spec import (
    CorpusView,
    FlowContext,
    Phase,
    Port,
    Problem,
    StepSpec,
    offers_at_root,
    registered,
    without_sidecars,
)

Mode = Literal["integrity", "digest", "containment", "all"]
#: the keys that may name an fsspec URL (docs/storage.md): what the audit reads (a
#: filter's output published to a bucket) and where its report goes
URL_KEYS = ("target_glob", "reference_glob", "ledger_glob", "declared_manifest",
            "rejected_dir", "digest_root", "output_dir")


class AuditConfig(StepConfig):
    """Configuration of ``curate audit`` (the reference's keys and four of this
    project's; docs/audit.md)."""

    target_glob: str | list[str] | None = Field(None, description="or found under output_root")
    output_dir: str = "./output/audit"
    declared_manifest: str | None = None
    ledger_glob: str | list[str] | None = None
    reference_glob: str | list[str] | None = None
    mode: Mode = "integrity"
    comparison_fields: list[str] = Field(default_factory=list)
    source_field: str | None = Field(None, description="the manifest's output.source_field wins")
    digest_root: str | None = None
    # this project's
    id_field: str | None = Field(None, description="the manifest's output.id_field wins")
    text_field: str = Field("text", description=(
        "as the filter read it: which input lines were documents"))
    approved_policy: str | None = Field(None, description=(
        "the policy file whose digest the manifest names"))
    rejected_dir: str | None = Field(None, description="default: the manifest's rejected_dir")
    output_root: str | None = Field(None, description=(
        "a flow's output root: audit every step that ran there (the filter's artifacts fill "
        "the keys above that are unset; each later step's artifact gets its checker)"))

    def preflight(self, flow: FlowContext | None = None) -> list[Problem]:
        problems: list[Problem] = []
        # object storage: what it reads and its output_dir may be URLs, not the policy
        # or a flow's output_root (docs/storage.md)
        problems += self.url_problems()
        if self.target_glob is None and self.output_root is None:
            problems.append(("audit_needs_a_target",
                             "set target_glob (the shards to audit) or output_root (a "
                             "flow's output root: every step that ran there)"))
        if self.mode in ("containment", "all"):
            if not self.comparison_fields:
                problems.append(("containment_needs_comparison_fields",
                                 f"mode {self.mode} compares rows by comparison_fields, which "
                                 "is empty (e.g. comparison_fields: [id, text])"))
            if not self.reference_glob:
                problems.append(("containment_needs_a_reference",
                                 f"mode {self.mode} needs reference_glob (the corpus the "
                                 "target must be contained in)"))
        if flow is None:  # in a flow the upstream files are written by earlier steps
            for key in ("declared_manifest", "approved_policy"):
                value = getattr(self, key)  # an object is looked for when the run starts
                if value is not None and not storage.is_remote(value) \
                        and not Path(value).is_file():
                    problems.append((f"{key}_not_found", f"{key} {value!r} does not exist"))
        else:
            if self.declared_manifest is None or self.ledger_glob is None:
                flow.warnings.append(
                    "the audit has no manifest or no ledger (the filter is off and its "
                    "artifacts are absent): it claims less (docs/audit.md)")
            provider = flow.offer("manifest")
            if not (provider and provider.enabled) and not _matches(self.target_glob or []):
                problems.append(("missing_upstream_artifact",
                                 f"steps.audit.target_glob {self.target_glob!r} matches no "
                                 "files and the filter, which writes them, is off"))
        return problems


def _matches(spec: str | list[str]) -> bool:
    try:
        return bool(resolve_input_files(spec, JSONL_EXTENSIONS))
    except CuratorError:
        return False


def run_audit(config: AuditConfig, executor: Executor | None = None,
              on_progress: ProgressHook | None = None) -> dict[str, Any]:
    """Audit; return the report (also written). Findings raise ``audit_findings``
    (exit 1) after the complete report is on disk."""
    return AuditRun(from_output_root(config), executor, on_progress).run()


def from_output_root(config: AuditConfig) -> AuditConfig:
    """With ``output_root``: the config a flow would derive there fills the keys the
    config leaves unset: the ports the earlier steps provide (the manifest's step's
    corpus, manifest, ledger, ...), placed as the root's ``flow_plan.json`` says, else
    as the flow's default layout does (:func:`~curator.steps.spec.offers_at_root`).
    Without such output there, only the later steps' artifacts are audited."""
    if config.output_root is None or storage.is_remote(config.output_root):
        return config  # a flow's root is local: the run refuses a URL (docs/storage.md)
    root = Path(config.output_root).resolve()  # the derived paths are absolute, as planned
    if not root.is_dir():
        raise CuratorError("output_root_not_found",
                           f"output_root {config.output_root!r} is not a directory")
    configs: dict[str, dict[str, Any]] = {}
    planned = True
    try:
        plan = models.read(FlowPlanFile, root / "flow_plan.json")
        # a copied or moved root: the plan's paths under its output_root are the copy's
        configs = {s.key: rebase_values(dict(s.config or {}), plan.output_root, root)
                   for s in plan.steps or []}
    except FileNotFoundError:
        planned = False
    except (OSError, CuratorError) as exc:  # CuratorError: artifact_invalid, its field
        why = exc.message if isinstance(exc, CuratorError) else f"{type(exc).__name__}: {exc}"
        raise CuratorError("flow_plan_unreadable",
                           f"{root / 'flow_plan.json'} cannot be read as a flow plan: "
                           f"{why}") from exc
    ctx = FlowContext(root=root, corpus=None, reads=CorpusView(None), approved_policy=None,
                      offers=offers_at_root(root, SPEC.key, configs))
    manifest = ctx.offer("manifest")
    if manifest is None or not Path(manifest.config["output_dir"]).is_dir():
        return config
    derived = _derive(ctx)
    if not planned:  # built step by step: what the filter read is in its manifest
        derived = {**_from_manifest(root, derived.get("declared_manifest")),
                   **{k: v for k, v in derived.items() if v is not None}}
    unset = {k: v for k, v in derived.items()
             if k not in config.model_fields_set and v is not None}
    return config.model_copy(update=unset)


def _from_manifest(root: Path, path: str | None) -> dict[str, Any]:
    """What a root built one step at a time (no ``flow_plan.json``) says about the
    filter's input, from its ``run_manifest.json``: the glob it read (``input.glob``,
    rebased onto ``root``), its id and source fields (``output``), its rejected dir;
    and the approved policy where ``curate approve`` puts it in a flow's layout
    (``<root>/policy/approved_policy.yaml``), when there. A manifest that cannot be read
    gives nothing (the audit reports it as ``manifest_unreadable``)."""
    if path is None:
        return {}
    try:
        manifest = models.read(RunManifest, path)
    except (OSError, CuratorError):
        return {}
    where = Rebase.of(Path(path), root, manifest.producer.output_dir
                      if manifest.producer else None)
    ignored: list[dict[str, Any]] = []  # a path that leaves the root is not derived

    def here(value: Any, field: str, output: bool) -> Any:
        if isinstance(value, str):
            return where.path(value, field, output=output, problems=ignored)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            found = where.paths(value, field, output=output, problems=ignored)
            return found or None
        return None

    output = manifest.output
    policy = root / "policy" / "approved_policy.yaml"
    return {"reference_glob": here(manifest.input.glob if manifest.input else None,
                                   "input.glob", False),
            "id_field": output.id_field if output else None,
            "source_field": output.source_field if output else None,
            "rejected_dir": here(manifest.rejected_dir, "rejected_dir", True),
            "approved_policy": str(policy) if policy.is_file() else None}


def audit_kinds() -> tuple[ArtifactKind, ...]:
    """What a whole-root audit proves: the kinds the registered steps declare."""
    return kinds_of(registered())


class AuditRun(StepRun):
    schema_version = SCHEMA_VERSION
    config: AuditConfig

    def __init__(self, config: AuditConfig, executor: Executor | None = None,
                 on_progress: ProgressHook | None = None) -> None:
        super().__init__(config, executor, on_progress)
        self.report_path = self.out / REPORT_NAME
        self.target: list[str] = []
        self.reference: list[str] = []
        self.rejected: list[str] = []
        self.manifest: RunManifest | None = None
        self.manifest_error: str | None = None
        self.kinds: list[tuple[ArtifactKind, Path]] = []
        self.exchange: Exchange | None = None  # the multisets' (execute)

    # -- refusals ----------------------------------------------------------------------
    def refuse(self) -> None:
        cfg = self.config
        self.kinds = found(Path(cfg.output_root), audit_kinds()) if cfg.output_root else []
        if cfg.target_glob is None:
            if not self.kinds:
                raise CuratorError("nothing_to_audit",
                                   f"output_root {cfg.output_root!r} holds no filter output "
                                   f"and none of {sorted({k.artifact for k in audit_kinds()})}")
            return
        self.target = self._resolve(cfg.target_glob, "target_glob")
        if not self.target:
            raise CuratorError("target_glob_no_matches",
                               f"target_glob {cfg.target_glob!r} matches no JSONL files")
        if cfg.reference_glob:
            self.reference = self._resolve(cfg.reference_glob, "reference_glob")
            if not self.reference:
                raise CuratorError("reference_glob_no_matches",
                                   f"reference_glob {cfg.reference_glob!r} matches no files")
        self._read_manifest()
        rejected = cfg.rejected_dir or (self.manifest.rejected_dir if self.manifest else None)
        if rejected and storage.is_remote(rejected):  # a filter that published to a bucket
            self.rejected = self._objects(storage.join(rejected, "*.jsonl"), "rejected_dir")
        elif rejected and Path(rejected).is_dir():
            self.rejected = sorted(str(p.resolve()) for p in Path(rejected).glob("*.jsonl"))
        self.target = [f for f in self.target if f not in set(self.rejected)]

    def _resolve(self, spec: str | list[str], key: str) -> list[str]:
        try:
            found = resolve_input_files(spec, JSONL_EXTENSIONS)
        except CuratorError as exc:
            raise CuratorError(f"{key}_no_matches", exc.message) from exc
        found = [f for f in without_sidecars(found) if not Path(f).name.startswith(".")]
        return self.outside_output(found, key, spec)

    def _objects(self, pattern: str, key: str) -> list[str]:
        """The objects a URL glob matches (none is fine); the store's errors are
        ``object_storage_error``."""
        with storage.store_errors(f"{key}: cannot list {pattern!r}", True, url=pattern):
            return storage.glob(pattern)

    def _read_manifest(self) -> None:
        path = self.config.declared_manifest
        if path is None:
            return
        with storage.store_errors(f"declared_manifest {path!r}", True, url=path):
            found = storage.is_file_at(path)  # a local file or an object
        if not found:
            raise CuratorError("declared_manifest_not_found",
                               f"declared_manifest {path!r} does not exist")
        try:
            self.manifest = models.load(RunManifest, storage.read_file(path), path)
        except OSError as exc:
            self.manifest_error = f"{type(exc).__name__}: {exc}"
        except CuratorError as exc:  # artifact_invalid: not JSON, or a field's type
            self.manifest_error = exc.message

    # -- the run -----------------------------------------------------------------------
    def fields(self) -> tuple[str | None, str | None]:
        """(id_field, source_field): the manifest's output fields win."""
        output = self.manifest.output if self.manifest is not None else None
        return ((output.id_field if output else None) or self.config.id_field,
                (output.source_field if output else None) or self.config.source_field)

    def files(self) -> list[str]:
        return sorted(set(self.target) | set(self.reference) | set(self.rejected))

    def config_extra(self) -> dict[str, Any]:
        """The files scanned, by path, size and mtime (an object: its ETag): changed
        files are rescanned."""
        stats = [[path, *storage.version(path)] for path in self.files()]
        return {"files": stats, "fields": list(self.fields()),
                "artifacts": [[kind.name, file_digest(path)] for kind, path in self.kinds]}

    def clear_outputs(self) -> None:
        for name in (REPORT_NAME, SUMMARY_NAME):
            (self.out / name).unlink(missing_ok=True)

    def execute(self) -> None:
        if not self.files():  # output_root with only later steps' artifacts
            return
        cfg = self.config
        id_field, source_field = self.fields()
        keyed = frozenset(self.target) | frozenset(self.reference) \
            if cfg.mode in ("containment", "all") else frozenset()
        size = sum(storage.version(p)[0] or 0 for p in self.files())
        self.exchange = Exchange.open(
            self.work / "exchange", choose_buckets(size, cfg.execution.exchange_buckets))
        stage = ScanStage(
            work_dir=str(self.work),
            spec=RecordSpec(text_field=cfg.text_field, id_field=id_field,
                            source_field=source_field),
            want_ids=id_field is not None, comparison_fields=tuple(cfg.comparison_fields),
            keyed=keyed, rejected=frozenset(self.rejected),
            digested=frozenset(self.target),  # only the target's sha256 is checked
            exchange=self.exchange,
            fingerprinted=frozenset(self.reference) if cfg.approved_policy else frozenset(),
            referenced=frozenset(self.reference))
        partitions = FilePartitioningStage(file_paths=self.files(), files_per_partition=1,
                                           file_extensions=None)
        self.phase("scan", partitions, stage)
        # the multisets netted per bucket of keys; the driver reads the summaries
        self.phase("net", BucketPartitioning(exchange=self.exchange),
                   NetStage(exchange=self.exchange, work_dir=str(self.work / "net")))

    def netted(self) -> Netted | None:
        """The buckets' summaries added up; ``None`` while one is missing (a failed run)."""
        if self.exchange is None:
            return None
        count = self.exchange.buckets
        net = self.work / "net"
        if not all(shared.localize(summary_file(net, b)).is_file() for b in range(count)):
            return None
        return summarise(net, count)

    def facts(self) -> AuditFacts | None:
        """What the checks read; ``None`` while a unit's scan is missing (a failed run)."""
        files = self.files()
        shared.localize_dir(self.work / "scan")  # the units' scans, written on any node
        if not (files or self.kinds) or not all(scan_path(self.work, p).is_file()
                                                for p in files):
            return None
        netted = self.netted() if files else None
        if files and netted is None:
            return None
        scans: dict[str, FileScan] = load_scans(self.work, files)
        cfg = self.config
        id_field, source_field = self.fields()
        ledgers: list[tuple[str, dict[str, Any] | None, str | None]] = []
        if cfg.ledger_glob:
            try:
                paths = resolve_input_files(cfg.ledger_glob, (".json",))
            except CuratorError:
                paths = []
            for path in paths:
                try:  # parsed through CurationLedger by the check (a finding if malformed)
                    data = models.load_json(storage.read_file(path), path)
                    ledgers.append((path, data if isinstance(data, dict) else None,
                                    None if isinstance(data, dict) else "not a JSON object"))
                except OSError as exc:
                    ledgers.append((path, None, f"{type(exc).__name__}: {exc}"))
                except CuratorError as exc:  # not JSON
                    ledgers.append((path, None, exc.message))
        policy_digest, fingerprint = None, None
        if cfg.approved_policy and Path(cfg.approved_policy).is_file():
            policy_digest = file_digest(cfg.approved_policy)
            fingerprint = _policy_fingerprint(cfg.approved_policy)
        return AuditFacts(
            mode=cfg.mode, target_glob=cfg.target_glob, target=self.target,
            reference=self.reference, rejected=self.rejected, scans=scans,
            comparison_fields=list(cfg.comparison_fields), source_field=source_field,
            id_field=id_field, digest_root=cfg.digest_root,
            manifest_path=cfg.declared_manifest, manifest=self.manifest,
            manifest_error=self.manifest_error, ledgers=ledgers,
            policy_path=cfg.approved_policy, policy_digest=policy_digest,
            policy_fingerprint=fingerprint, netted=netted)

    # -- artifacts and the verdict -----------------------------------------------------
    def artifacts(self) -> list[tuple[Path | None, Any]]:
        facts = self.facts() if self.completed else None
        producer = self.producer()
        if facts is None:
            return [(self.report_path, models.build(AuditReport, self._unfinished(producer)))]
        report = models.build(AuditReport, build_report(facts, producer, self.error_block(),
                                                        self.step_checks()))
        shown = render(AuditReport.model_validate(report)).markdown
        return [(self.out / SUMMARY_NAME, shown), (self.report_path, report)]

    def step_checks(self) -> dict[str, dict[str, Any]]:
        """Each later step's artifact found under ``output_root``, proved by its checker
        (:mod:`curator.audit.kinds`): ``{key: {artifact, block, findings}}``."""
        out: dict[str, dict[str, Any]] = {}
        for kind, path in self.kinds:
            assert self.config.output_root is not None  # kinds are found under it
            block, findings = kind.prove(path, Path(self.config.output_root))
            name = kind.name if kind.name not in out else f"{kind.name}:{path.parent.name}"
            out[name] = {"artifact": str(path), "block": block,
                         "findings": [{**f, "step": kind.name} for f in findings]}
        return out

    def _unfinished(self, producer: dict[str, Any]) -> dict[str, Any]:
        """A report of an audit that did not finish: no verdict, no claims."""
        why = "the audit did not finish"
        return {
            "schema_version": SCHEMA_VERSION, "step_id": self.step_id, "mode": self.config.mode,
            "producer": producer,
            "target": {"glob": self.config.target_glob, "file_count": len(self.target),
                       "row_count": None, "bytes": None, "unreadable_count": None,
                       "bad_record_count": None, "unreadable": []},
            "findings": [], "observations": {},
            "completeness": {"claimed": False, "reason": why},
            "attribution": {"available": False, "reason": why},
            "accounting": {"available": False, "reason": why},
            "strengths": [], "passed": False, "error": self.error_block(),
        }

    def verdict(self, result: dict[str, Any]) -> None:
        findings = result.get("findings") or []
        if findings:
            names = sorted({f["name"] for f in findings})
            where = (storage.join(self.output_url, REPORT_NAME) if self.output_url
                     else str(self.report_path))  # published: the bucket's copy
            raise CuratorError(
                "audit_findings",
                f"{len(findings)} findings ({', '.join(names)}); the complete report is "
                f"{where}", complete=True, report=where)


def _policy_fingerprint(path: str) -> str | None:
    """The corpus fingerprint a policy file names (``corpus.fingerprint``), if any."""
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None
    corpus = doc.get("corpus") if isinstance(doc, dict) else None
    value = corpus.get("fingerprint") if isinstance(corpus, dict) else None
    return value if isinstance(value, str) else None


def _derive(flow: FlowContext) -> dict[str, Any]:
    """What the nearest step providing a ``manifest`` wrote: its corpus, manifest,
    ledger, rejected records, policy and the input it accounts for (spec section 12).
    A manifest of a step that is off is audited only where its files exist."""
    offer = flow.offer("manifest")
    if offer is None:
        return {}
    out = offer.config.get("output_dir") or flow.root / offer.spec.output_subdir

    def existing(path: str | None) -> str | None:
        return path if path is not None and (offer.enabled or storage.is_file_at(path)) else None

    reference = offer.locate("manifest_input") or CorpusView(None)
    return {"target_glob": str(out), "declared_manifest": existing(offer.value),
            "ledger_glob": existing(offer.locate("ledger")),
            "reference_glob": reference.glob, "digest_root": str(out),
            "text_field": reference.text_field, "id_field": reference.id_field,
            "source_field": reference.source_field, "approved_policy": offer.locate("policy"),
            "rejected_dir": offer.locate("rejected")}


def _depends_on(config: dict[str, Any]) -> list[str]:
    """What the verdict depends on besides the target: the manifest, the ledgers, the
    policy and the rejected records (a flow reruns the audit when one changed)."""
    files = [config.get("declared_manifest"), config.get("approved_policy")]
    ledgers = config.get("ledger_glob")
    files += ledgers if isinstance(ledgers, list) else [ledgers]
    rejected = config.get("rejected_dir")
    if rejected is None and config.get("declared_manifest"):
        rejected = str(Path(config["declared_manifest"]).parent / "rejected")
    found = sorted(str(p) for p in Path(rejected).glob("*.jsonl")) if rejected else []
    return [f for f in files if isinstance(f, str)] + found


def _flow_fields(report: dict[str, Any]) -> dict[str, Any]:
    return {"audit_passed": bool(report.get("passed"))}


SPEC = StepSpec(
    key="audit",
    url_keys=URL_KEYS,
    help="Prove from disk what the filter's artifacts claim (exit 1 on findings).",
    config=AuditConfig,
    run=run_audit,
    phases=(Phase("scan", "scan", "scan.rows"),
            Phase("net", "net the multisets", "audit_net.keys")),
    output_subdir="audit",
    completion_name=lambda cfg: REPORT_NAME,
    input_key="target_glob",
    derive=_derive,
    model=AuditReport,
    render=render,
    consumes=(Port("manifest", "manifest"), Port("ledger", "ledger"),
              Port("rejected", "rejected"), Port("policy", "policy"),
              Port("manifest_input", "corpus")),
    depends_on=_depends_on,
    flow_fields=_flow_fields,
    artifacts={"audit_report": REPORT_NAME},
)

__all__ = ["SPEC", "AuditConfig", "run_audit"]
