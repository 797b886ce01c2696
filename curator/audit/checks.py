"""The audit's checks: pure functions over what the scan found and the artifacts say.

Each check returns its report block and its findings (``{name, message, ...}``). One
checker per artifact kind (:data:`CHECKERS`): the corpus itself (readability, counts,
digests), the run manifest (completeness, per-shard digests and rows, the policy
digest), the ledger (attribution), the rejected records (record-level accounting),
the reference (containment). A later step registers its artifact kind's checker here.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from curator import models
from curator.audit.netting import Netted
from curator.audit.scan import NOT_A_FILE, NOT_READABLE, FileScan
from curator.corpus.fingerprint import RowDigest
from curator.io import storage
from curator.models import CurationLedger, RunManifest
from curator.models.run_manifest import ManifestOutput

#: how many ids (or shards) a finding names
EXAMPLES = 5
Finding = dict[str, Any]
Block = tuple[dict[str, Any] | None, list[Finding]]
#: every key of a ledger the attribution reads (:class:`curator.models.CurationLedger`)
LEDGER_KEYS = tuple(k for k, f in CurationLedger.model_fields.items() if f.is_required())
#: a ledger's failed unit of lines that were not records (accounted, not lost)
RECORDS_UNIT = "records:"


def finding(name: str, message: str, **more: Any) -> Finding:
    return {"name": name, "message": message, **more}


@dataclass
class AuditFacts:
    """Everything the checks read: the config's choices, the scans, the artifacts."""

    mode: str
    target_glob: Any
    target: list[str]
    reference: list[str]
    rejected: list[str]
    scans: dict[str, FileScan]
    comparison_fields: list[str] = field(default_factory=list)
    source_field: str | None = None
    id_field: str | None = None
    digest_root: str | None = None
    manifest_path: str | None = None
    manifest: RunManifest | None = None
    manifest_error: str | None = None
    ledgers: list[tuple[str, dict[str, Any] | None, str | None]] = field(default_factory=list)
    policy_path: str | None = None
    policy_digest: str | None = None  # of the file's bytes, None if unreadable
    policy_fingerprint: str | None = None  # the corpus fingerprint the policy names
    #: the multisets netted on the exchange (the step's way: the scans then hold no
    #: ids or keys); None: netted here from the scans (:mod:`curator.audit.netting`)
    netted: Netted | None = None

    @property
    def wants_digest(self) -> bool:
        return self.mode in ("digest", "all")

    @property
    def wants_containment(self) -> bool:
        return self.mode in ("containment", "all")

    def rows(self, paths: list[str]) -> int:
        return sum(self.scans[p].rows for p in paths)


def _name(path: str, root: str | None) -> str:
    """``path`` relative to ``root`` (a local folder or a URL prefix), else as it is."""
    if root:
        rel = storage.relative(path, root)
        if rel is not None:
            return rel
    return path


# -- strength 1: the corpus alone ------------------------------------------------------
def check_target(f: AuditFacts) -> Block:
    """Readability and counts of the target shards; per-shard digests in digest modes."""
    findings: list[Finding] = []
    unreadable = []
    per_source: Counter[str] = Counter()
    for path in f.target:
        s = f.scans[path]
        per_source.update(s.per_source)
        if s.fault is not None:
            unreadable.append({"path": path, **s.fault})
            findings.append(finding(
                "unreadable_shard", f"{path}: {s.fault['kind']} at byte {s.fault['offset']}",
                path=path, fault=s.fault["kind"], offset=s.fault["offset"]))
    block: dict[str, Any] = {
        "glob": f.target_glob, "file_count": len(f.target), "row_count": f.rows(f.target),
        "bytes": sum(f.scans[p].bytes for p in f.target),
        "unreadable_count": len(unreadable),
        "bad_record_count": sum(f.scans[p].bad_records for p in f.target),
        "unreadable": unreadable,
    }
    if f.source_field is not None:
        block["per_source"] = dict(sorted(per_source.items()))
    if f.wants_digest:
        root = f.digest_root
        shards = [{"name": _name(p, root), "rows": f.scans[p].rows, "bytes": f.scans[p].bytes,
                   "sha256": f.scans[p].sha256} for p in f.target]
        block["shards"] = shards
        block["digest"] = corpus_digest(shards)
    for path in f.reference:
        s = f.scans[path]
        if s.fault is not None and s.fault["kind"] in (NOT_READABLE, NOT_A_FILE):
            findings.append(finding("unreadable_reference_shard",
                                    f"{path}: {s.fault['kind']}", path=path))
    return block, findings


def corpus_digest(shards: list[dict[str, Any]]) -> str:
    """sha256 over the sorted lines ``name\\tdigest\\tsize`` (each ending in a newline)."""
    lines = sorted(f"{s['name']}\t{s['sha256']}\t{s['bytes']}" for s in shards)
    return "sha256:" + hashlib.sha256("".join(f"{x}\n" for x in lines).encode()).hexdigest()


def observations(f: AuditFacts) -> dict[str, Any]:
    empty = [p for p in f.target if f.scans[p].rows == 0]
    out: dict[str, Any] = {"zero_row_shard": {
        "count": len(empty), "paths": empty,
        "note": "shards without rows: not an error, but nothing in them"}}
    if f.reference:
        ref, tgt = f.rows(f.reference), f.rows(f.target)
        out["reference_delta"] = {
            "reference_rows": ref, "target_rows": tgt, "delta": ref - tgt,
            "note": "reference rows minus target rows (what the filter removed, if the "
                    "reference is its input)"}
    return out


# -- strength 2: the manifest ----------------------------------------------------------
def check_manifest(f: AuditFacts) -> Block:
    """Completeness: ``completed_at``, totals, per-shard rows and digests, per source."""
    if f.manifest_path is None:
        return {"claimed": False, "reason": "no declared_manifest"}, []
    if f.manifest is None:
        return ({"claimed": False, "reason": f"manifest unreadable: {f.manifest_error}"},
                [finding("manifest_unreadable", f"{f.manifest_path}: {f.manifest_error}")])
    m = f.manifest
    findings: list[Finding] = []
    if not m.is_complete:
        err = m.error.error_id if m.error is not None else None
        findings.append(finding(
            "manifest_incomplete",
            f"{f.manifest_path} has no producer.completed_at: the run that wrote it did not "
            f"finish{f' ({err})' if err else ''}"))
    output = m.output or ManifestOutput()
    actual_rows, actual_files = f.rows(f.target), len(f.target)
    declared_rows, declared_files = output.row_count, output.file_count
    if declared_rows != actual_rows or declared_files != actual_files:
        findings.append(finding(
            "manifest_mismatch",
            f"the manifest declares {declared_rows} rows in {declared_files} files; the "
            f"target holds {actual_rows} rows in {actual_files} files"))
    declared_sources = output.per_source
    if f.source_field is not None and declared_sources is not None:
        actual_sources: Counter[str] = Counter()
        for p in f.target:
            actual_sources.update(f.scans[p].per_source)
        if {k: v for k, v in declared_sources.items() if v} != dict(actual_sources):
            findings.append(finding("manifest_mismatch",
                                    "per-source row counts differ from the manifest's",
                                    declared=declared_sources, actual=dict(actual_sources)))
    findings += _shards(f, output.shards)
    block = {"claimed": True, "declared_rows": declared_rows, "actual_rows": actual_rows,
             "declared_files": declared_files, "actual_files": actual_files}
    return block, findings


def _shards(f: AuditFacts, declared: list[models.Shard] | None) -> list[Finding]:
    """The manifest's ``shards[{name, rows, sha256}]`` against the files on disk."""
    if declared is None:
        return []
    root = storage.parent(f.manifest_path or "./.")  # the manifest's folder (or a URL's)
    on_disk = {_name(p, root): f.scans[p] for p in f.target}
    findings: list[Finding] = []
    names = set()
    for entry in declared:
        name = entry.name
        names.add(name)
        scan = on_disk.get(name)
        if scan is None:
            findings.append(finding("shard_missing",
                                    f"{name} is in the manifest but not in the target",
                                    shard=name))
            continue
        if entry.rows != scan.rows:
            findings.append(finding(
                "shard_rows_mismatch",
                f"{name}: the manifest says {entry.rows} rows, the file holds "
                f"{scan.rows}", shard=name, declared=entry.rows, actual=scan.rows))
        if entry.sha256 != scan.sha256:
            findings.append(finding(
                "shard_digest_mismatch",
                f"{name}: sha256 {scan.sha256} is not the manifest's {entry.sha256}",
                shard=name, declared=entry.sha256, actual=scan.sha256))
    for name in sorted(set(on_disk) - names):
        findings.append(finding("unexpected_shard",
                                f"{name} is in the target but not in the manifest", shard=name))
    return findings


def check_policy(f: AuditFacts) -> Block:
    """The manifest's policy digest against the approved policy file's bytes."""
    declared = (f.manifest.policy.policy_digest
                if f.manifest is not None and f.manifest.policy is not None else None)
    block: dict[str, Any] = {"manifest_policy_digest": declared, "file": f.policy_path,
                             "file_digest": f.policy_digest}
    if declared is None:
        block.update(checked=False, reason="the manifest names no policy digest")
        return block, []
    if f.policy_path is None:
        block.update(checked=False, reason="no approved_policy configured to compare with")
        return block, []
    block["checked"] = True
    block["agrees"] = declared == f.policy_digest
    findings: list[Finding] = []
    if not block["agrees"]:
        what = "cannot be read" if f.policy_digest is None else f"has digest {f.policy_digest}"
        findings.append(finding(
            "policy_digest_mismatch",
            f"{f.policy_path} {what}; the manifest applied {declared}: the policy was "
            "edited after the run, or is not the one applied"))
    parts = [f.scans[p].fingerprint for p in f.reference]
    if f.policy_fingerprint and parts and all(parts):
        total = RowDigest()
        for part in parts:
            total = total.merge(RowDigest.from_json(part))  # type: ignore[arg-type]
        agrees = total.digest == f.policy_fingerprint
        block["corpus_fingerprint"] = {"policy": f.policy_fingerprint,
                                       "reference": total.digest, "agrees": agrees}
        if not agrees:
            findings.append(finding(
                "policy_corpus_mismatch",
                f"the reference (the filter's input) has fingerprint {total.digest}; the "
                f"policy was approved for {f.policy_fingerprint}"))
    return block, findings


# -- strength 3: the ledger ------------------------------------------------------------
def _parse_ledger(path: str, data: Any) -> CurationLedger | str:
    """The ledger parsed through its model, or why it cannot be (naming the field)."""
    try:
        return CurationLedger.model_validate(data)
    except ValidationError as exc:
        return models.problem(path, exc)


def _load_ledger(path: str, data: dict[str, Any] | None, error: str | None
                 ) -> tuple[dict[str, Any] | None, list[Finding]]:
    if data is None:
        return None, [finding("ledger_unreadable", f"{path}: {error}", path=path)]
    missing = [k for k in LEDGER_KEYS if k not in data]
    if missing:
        return None, [finding("ledger_unreadable", f"{path} lacks {missing}", path=path)]
    ledger = _parse_ledger(path, data)
    if isinstance(ledger, str):  # a count that is no integer, a block of the wrong type
        return None, [finding("ledger_unreadable", ledger, path=path)]
    by_reason = ledger.filtered_by_reason
    n_failed = sum(u.records for u in ledger.failed_units)
    n_quar = sum(u.records for u in ledger.quarantined_units)
    n_filtered = sum(by_reason.values())
    accounted = ledger.n_success + n_filtered + n_failed + n_quar
    findings = []
    derived = {"n_filtered": n_filtered, "n_failed": n_failed, "n_quarantined": n_quar,
               "n_accounted": accounted, "balanced": accounted == ledger.n_input}
    stored = ledger.dump()
    wrong = {k: (stored[k], v) for k, v in derived.items() if stored[k] != v}
    if wrong or not derived["balanced"]:
        findings.append(finding(
            "ledger_imbalanced",
            f"{path}: n_input {ledger.n_input} vs n_accounted {accounted}"
            + "".join(f"; {k} stored {a!r}, derived {b!r}" for k, (a, b) in wrong.items()),
            path=path))
    return {**stored, **derived, "filtered_by_reason": by_reason}, findings


def check_ledgers(f: AuditFacts) -> Block:
    """Attribution of the input->output difference to gates, failed and lost units."""
    if not f.ledgers:
        return {"available": False, "reason": "no ledger_glob (or it matched nothing)"}, []
    findings: list[Finding] = []
    loaded = []
    for path, data, error in f.ledgers:
        ledger, problems = _load_ledger(path, data, error)
        findings += problems
        if ledger is not None:
            loaded.append((path, ledger))
    if not loaded:
        return {"available": False, "reason": "no ledger could be read"}, findings
    by_reason: Counter[str] = Counter()
    for _, ledger in loaded:
        by_reason.update(ledger["filtered_by_reason"])
    filtered = sum(by_reason.values())
    failed = sum(ledger["n_failed"] for _, ledger in loaded)
    quarantined = sum(ledger["n_quarantined"] for _, ledger in loaded)
    lost = [dict(u, ledger=path) for path, ledger in loaded for u in ledger["failed_units"]
            if not str(u.get("unit", "")).startswith(RECORDS_UNIT)]
    target_rows = f.rows(f.target)
    manifest_in = (f.manifest.input.row_count
                   if f.manifest is not None and f.manifest.input is not None else None)
    if manifest_in is not None:
        observed, basis = manifest_in - target_rows, "manifest input rows - target rows"
    elif f.reference:
        observed, basis = f.rows(f.reference) - target_rows, "reference rows - target rows"
    else:
        observed, basis = None, "neither a manifest nor a reference: no input row count"
    unexplained = None if observed is None else observed - filtered - failed - quarantined
    if lost:
        findings.append(finding(
            "lost_units", f"{len(lost)} failed units hold records that are in neither the "
            "output nor a gate (record counts are a floor)",
            units=[u.get("unit") for u in lost][:EXAMPLES]))
    if unexplained is not None and unexplained > 0:
        findings.append(finding("unexplained_loss",
                                f"{unexplained} rows left the corpus without a gate, a failed "
                                "or a quarantined unit to account for them",
                                unexplained=unexplained))
    elif unexplained is not None and unexplained < 0:
        findings.append(finding("unaccounted_gain",
                                f"the target holds {-unexplained} rows more than the input "
                                "minus what the ledger removed", unexplained=unexplained))
    declared = (f.manifest.declared.filtered
                if f.manifest is not None and f.manifest.declared is not None else None)
    if declared is not None and \
            {k: v for k, v in declared.items() if v} != dict(by_reason):
        findings.append(finding("attribution_disagreement",
                                "the manifest's declared.filtered differs from the ledger's "
                                "filtered_by_reason", manifest=declared, ledger=dict(by_reason)))
    block = {
        "available": True, "attribution_note": basis, "observed_delta": observed,
        "declared_filtered": filtered, "declared_failed": failed,
        "declared_quarantined": quarantined, "filtered_by_reason": dict(sorted(by_reason.items())),
        "unexplained": unexplained, "lost_units": len(lost),
        "all_ledgers_balanced": all(ledger["balanced"] for _, ledger in loaded)
        and not any(x["name"] == "ledger_imbalanced" for x in findings),
        "record_counts_are_a_floor": bool(lost),
        "ledgers": [path for path, _ in loaded],
        "stages": [{"ledger": path, "stage": ledger["stage"], "n_input": ledger["n_input"],
                    "n_success": ledger["n_success"], "n_filtered": ledger["n_filtered"],
                    "n_failed": ledger["n_failed"], "n_quarantined": ledger["n_quarantined"],
                    "balanced": ledger["balanced"]} for path, ledger in loaded],
    }
    return block, findings


# -- strength 4: the rejected records --------------------------------------------------
def check_records(f: AuditFacts) -> Block:
    """Record-level accounting: input = output + rejected, as multisets of ids; and the
    rejected records' gates against the ledger's per-gate counts."""
    if f.manifest is None:
        return {"available": False, "reason": "no manifest: the rejected records are unknown"}, []
    if not f.reference:
        return {"available": False, "reason": "no reference_glob: the input is unknown"}, []
    ref = [f.scans[p] for p in f.reference]
    out = [f.scans[p] for p in f.target]
    rej = [f.scans[p] for p in f.rejected]
    removed: Counter[str] = Counter()
    gates: Counter[str] = Counter()
    failed_in: Counter[str] = Counter()
    failed_rej: Counter[str] = Counter()
    for s in ref:
        failed_in.update(s.rejections)
    for s in rej:
        gates.update(s.removed_by)
        failed_rej.update(s.failed)
        for key, n in s.removed_ids.items():
            removed[key.rsplit("|", 1)[0]] += n
    findings: list[Finding] = []
    by_id = f.id_field is not None
    docs_in = sum(s.documents for s in ref)
    docs_out = sum(s.rows for s in out)
    n_removed = sum(gates.values())
    block: dict[str, Any] = {
        "available": True, "by_id": by_id, "id_field": f.id_field,
        "rejected_files": len(f.rejected), "input_documents": docs_in,
        "output_records": docs_out, "rejected_records": n_removed,
        "input_failed_lines": dict(sorted(failed_in.items())),
        "rejected_failed_lines": dict(sorted(failed_rej.items())),
        "rejected_by_gate": dict(sorted(gates.items())),
    }
    if by_id and f.netted is not None:
        n_missing, n_unexpected = f.netted.missing, f.netted.unexpected
        block.update(missing_count=n_missing, unexpected_count=n_unexpected,
                     missing_ids=f.netted.missing_ids[:EXAMPLES],
                     unexpected_ids=f.netted.unexpected_ids[:EXAMPLES])
    elif by_id:
        missing, unexpected = _differences((s.ids for s in ref),
                                           [*(s.ids for s in out), removed])
        n_missing, n_unexpected = missing.total(), unexpected.total()
        block.update(missing_count=n_missing, unexpected_count=n_unexpected,
                     missing_ids=sorted(missing)[:EXAMPLES],
                     unexpected_ids=sorted(unexpected)[:EXAMPLES])
    if by_id:
        if n_missing or n_unexpected:
            findings.append(finding(
                "record_accounting_mismatch",
                f"input ids != output ids + rejected ids: {n_missing} input "
                f"records are in neither (first: {', '.join(block['missing_ids']) or '-'}), "
                f"{n_unexpected} output or rejected records are not in the "
                f"input (first: {', '.join(block['unexpected_ids']) or '-'})",
                missing_ids=block["missing_ids"], unexpected_ids=block["unexpected_ids"]))
    elif docs_in != docs_out + n_removed:
        findings.append(finding(
            "record_accounting_mismatch",
            f"input documents {docs_in} != output {docs_out} + rejected {n_removed} (no "
            "id_field: counted, not matched by id)"))
    if failed_in != failed_rej:
        findings.append(finding(
            "record_accounting_mismatch",
            "the input's lines that are not records differ from the rejected dir's",
            input=dict(failed_in), rejected=dict(failed_rej)))
    ledger = _ledger_gates(f)
    if ledger is not None:
        block["ledger_by_gate"] = ledger
        block["gates_agree"] = ledger == dict(sorted(gates.items()))
        if not block["gates_agree"]:
            findings.append(finding(
                "rejected_gate_disagreement",
                "the rejected records' gates do not add up to the ledger's per-gate counts",
                rejected=dict(gates), ledger=ledger))
    block["balanced"] = not findings
    return block, findings


def _ledger_gates(f: AuditFacts) -> dict[str, int] | None:
    total: Counter[str] = Counter()
    seen = False
    for path, data, _ in f.ledgers:
        ledger = _parse_ledger(path, data) if data is not None else None
        if isinstance(ledger, CurationLedger):  # an unreadable one is its own finding
            seen = True
            total.update(ledger.filtered_by_reason)
    return dict(sorted((k, v) for k, v in total.items() if v)) if seen else None


# -- containment -----------------------------------------------------------------------
def check_containment(f: AuditFacts) -> Block:
    """The target a multiset subset of the reference, by the comparison fields' key."""
    tgt = [f.scans[p] for p in f.target]
    ref = [f.scans[p] for p in f.reference]
    t_keys = [s.keys for s in tgt]
    r_keys = [s.keys for s in ref]
    ids = [s.ids for s in tgt]
    n = f.netted
    problems = []
    t_missing = sum(s.missing_keys + s.bad_records for s in tgt)
    r_missing = sum(s.missing_keys + s.bad_records for s in ref)
    missing_rows = n.missing_rows if n is not None else \
        _differences(t_keys, r_keys)[0].total()
    if t_missing:
        problems.append(f"{t_missing} target rows lack a comparison field or are not objects")
    # an unkeyed reference row (not JSON, or lacking a field) can only hide a target row
    # that was not found: with every target row found, the verdict stands without it
    if r_missing and missing_rows:
        problems.append(f"{r_missing} reference rows lack a comparison field or are not "
                        f"objects, and {missing_rows} target rows were not found: they may "
                        "be among them")
    if not f.reference:
        problems.append("no reference files")
    duplicates = 0 if not f.id_field else n.target_ids - n.target_distinct \
        if n is not None else _total(ids) - len(set().union(*ids))
    verifiable = not problems
    block = {
        "comparison_fields": f.comparison_fields, "duplicate_ids": duplicates,
        "subset_rows": f.rows(f.target), "superset_rows": f.rows(f.reference),
        "verifiable": verifiable, "contained": verifiable and missing_rows == 0,
        "missing_key_count": t_missing + r_missing, "missing_row_count": missing_rows,
        "target": {"rows": f.rows(f.target),
                   "keyed_rows": n.target_keyed if n is not None else _total(t_keys)},
        "reference": {"rows": f.rows(f.reference),
                      "keyed_rows": n.reference_keyed if n is not None else _total(r_keys)},
        "problems": problems,
    }
    findings: list[Finding] = []
    if not verifiable:
        findings.append(finding("containment_unverifiable", "; ".join(problems)))
    elif missing_rows:
        findings.append(finding(
            "containment_violation",
            f"{missing_rows} target rows are not in the reference (multiset, by "
            f"{f.comparison_fields})", missing_row_count=missing_rows))
    policy = (f.manifest.canonicalization.duplicate_ids if f.manifest is not None
              and f.manifest.canonicalization is not None else None)
    if duplicates and policy == "reject":
        findings.append(finding("duplicate_ids",
                                f"{duplicates} duplicate ids, and the manifest says reject"))
    return block, findings


def _differences(a: Iterable[dict[str, int]], b: Iterable[dict[str, int]]
                 ) -> tuple[Counter[str], Counter[str]]:
    """``(A - B, B - A)``, A the sum of the multisets ``a`` and B of ``b`` (maps ``{key:
    count}``), as ``Counter`` subtraction (the scans' multisets, when they were not
    netted on the exchange: :attr:`AuditFacts.netted`)."""
    sum_a: Counter[str] = Counter()
    sum_b: Counter[str] = Counter()
    for m in a:
        sum_a.update(m)
    for m in b:
        sum_b.update(m)
    return sum_a - sum_b, sum_b - sum_a


def _total(maps: list[dict[str, int]]) -> int:
    """How many elements the multisets hold together."""
    return sum(sum(m.values()) for m in maps)


#: one checker per artifact kind: the report field it fills and the function
CHECKERS: dict[str, tuple[str, Callable[[AuditFacts], Block]]] = {
    "corpus": ("target", check_target),
    "run_manifest": ("completeness", check_manifest),
    "approved_policy": ("policy", check_policy),
    "curation_ledger": ("attribution", check_ledgers),
    "rejected_records": ("accounting", check_records),
}
