"""The audit's checker of ``curate decontaminate`` (``decontamination_report.json``).

It proves from disk, with none of the step's code (the step packages are independent;
an auditor that reused the producer's code would prove less):

- the output is the input minus the removed documents, by id: no input id lost
  without a line in ``removed/``, no removed id still in the output, no id in the
  output that the input does not hold;
- every removed id is listed once in ``removed/`` and the report's counts are what is
  on disk;
- the shards are the ones the report lists (rows, sha256);
- the holdout is unmodified: its files still hash to the report's ``content_digest``.

It reads the paths the step records in its report (``paths``); in a whole-root audit,
under the root it is given (:mod:`curator.audit.rebase`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from curator import models
from curator.audit.checks import EXAMPLES, Block, Finding, finding
from curator.audit.rebase import Rebase
from curator.corpus.formats import file_facts
from curator.corpus.reading import iter_lines, iter_records
from curator.corpus.records import RecordSpec, Rejection
from curator.errors import CuratorError
from curator.io import storage
from curator.models import DecontaminationReport
from curator.models.decontamination_report import DecontaminationResult, SplitBlock


def _digest_files(files: dict[str, str]) -> str:
    """sha256 over the files' names (as the report records them) and bytes (read where
    each is now: ``files[name]``) in sorted order (the report's
    ``splits.holdout.content_digest``); a holdout on object storage is read there."""
    # a loop, not hashlib.file_digest: one digest over several files and their names
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode("utf-8", "surrogatepass") + b"\0")
        with storage.open_file(files[name]) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return "sha256:" + h.hexdigest()


def _ids(files: list[str], spec: RecordSpec) -> list[str]:
    out = []
    for path in files:
        for _, _, record in iter_records(path, None, spec):
            if type(record) is Rejection or record.get(spec.id_field) is None:
                continue
            out.append(str(record[spec.id_field]))
    return out


def check_decontamination(report_path: Path, root: Path | None = None) -> Block:
    """``(block, findings)`` of one ``decontamination_report.json``; with ``root`` (a
    whole-root audit) the paths it records are read under that root
    (:mod:`curator.audit.rebase`)."""
    findings: list[Finding] = []
    try:
        report = models.read(DecontaminationReport, report_path)
    except OSError as exc:
        return None, [finding("decontamination_report_unreadable",
                              f"{report_path}: {type(exc).__name__}: {exc}")]
    except CuratorError as exc:  # artifact_invalid: names the file and the field
        return None, [finding("decontamination_report_unreadable", exc.message)]
    paths = report.paths
    needed = {"paths": paths} if paths is None else {
        f"paths.{k}": getattr(paths, k) for k in ("output_dir", "removed_dir", "id_field",
                                                  "train_files", "holdout_files")}
    missing = [k for k, v in needed.items() if v is None]
    if paths is None or missing:
        return None, [finding("decontamination_report_unreadable",
                              f"{report_path}: {', '.join(missing)} missing")]
    assert paths.output_dir and paths.removed_dir and paths.train_files is not None
    where = Rebase.of(report_path, root, (report.producer.output_dir if report.producer
                                          else None) or paths.output_dir)
    outside: list[Finding] = []
    out_at = where.path(paths.output_dir, "paths.output_dir", output=True, problems=outside)
    removed_at = where.path(paths.removed_dir, "paths.removed_dir", output=True,
                            problems=outside)
    train = where.paths(list(paths.train_files), "paths.train_files", output=False,
                        problems=outside)
    holdout_files = where.paths(list(paths.holdout_files or []), "paths.holdout_files",
                                output=False, problems=outside)
    if out_at is None or removed_at is None or train is None or holdout_files is None:
        return None, outside
    out, removed_dir = Path(out_at), Path(removed_at)
    spec = RecordSpec(text_field=paths.text_field or "text", id_field=paths.id_field)
    if not report.is_complete:
        findings.append(finding("decontamination_incomplete",
                                f"{report_path} has no producer.completed_at"))
    try:
        ids_in = _ids(train, spec)
        shards = sorted(out.glob("part_*.jsonl"))
        ids_out = _ids([str(p) for p in shards], spec)
        removed: list[str] = []
        for p in sorted(removed_dir.glob("*.jsonl")) if removed_dir.is_dir() else []:
            for _, line in iter_lines(str(p)):
                removed.append(str(json.loads(line)["id"]))
    except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError) as exc:
        return None, [*findings, finding("decontamination_files_unreadable",
                                         f"{type(exc).__name__}: {exc}")]
    set_in, set_out, set_removed = set(ids_in), set(ids_out), set(removed)
    put_back = sorted(set_out & set_removed)
    lost = sorted(set_in - set_out - set_removed)
    foreign = sorted(set_out - set_in)
    twice = sorted(i for i, n in Counter(removed).items() if n > 1)
    if put_back:
        findings.append(finding("decontamination_removed_id_in_output",
                                f"{len(put_back)} removed ids are still in the output",
                                examples=put_back[:EXAMPLES]))
    if lost:
        findings.append(finding("decontamination_removed_id_not_listed",
                                f"{len(lost)} input ids are neither in the output nor in "
                                f"{removed_dir}", examples=lost[:EXAMPLES]))
    if foreign:
        findings.append(finding("decontamination_output_id_not_in_input",
                                f"{len(foreign)} output ids are not in the training input",
                                examples=foreign[:EXAMPLES]))
    if twice:
        findings.append(finding("decontamination_removed_listed_twice",
                                f"{len(twice)} ids are listed more than once in removed/",
                                examples=twice[:EXAMPLES]))
    result = (report.result or DecontaminationResult()).dump()
    on_disk = {"train_documents_in": len(ids_in), "train_documents_removed": len(removed),
               "train_documents_out": len(ids_out)}
    wrong = {k: (result.get(k), v) for k, v in on_disk.items() if result.get(k) != v}
    if wrong:
        findings.append(finding("decontamination_counts_mismatch",
                                f"the report's counts differ from the files: {wrong}"))
    declared = {s.name: (s.rows, s.sha256)
                for s in (report.output.shards if report.output else None) or []}
    actual = {p.name: file_facts(p) for p in shards}
    if declared != actual:
        differ = sorted(n for n in set(declared) | set(actual)
                        if declared.get(n) != actual.get(n))
        findings.append(finding("decontamination_shard_mismatch",
                                f"{len(differ)} shards differ from the report's list",
                                examples=differ[:EXAMPLES]))
    holdout = (report.splits.holdout if report.splits else None) or SplitBlock()
    try:
        digest = _digest_files({name: p for name, p in
                                zip(paths.holdout_files or [], holdout_files, strict=True)})
    except OSError as exc:
        digest = f"unreadable: {exc}"
    unchanged = digest == holdout.content_digest and not holdout.modified
    if not unchanged:
        findings.append(finding("decontamination_holdout_modified",
                                f"the holdout files hash to {digest}, the report recorded "
                                f"{holdout.content_digest} (modified: "
                                f"{holdout.modified})"))
    block = {"input_documents": len(ids_in), "output_documents": len(ids_out),
             "removed_documents": len(removed), "output_is_input_minus_removed":
             not (put_back or lost or foreign), "holdout_unchanged": unchanged,
             "shards_match_report": declared == actual, "passed": not findings}
    return block, findings
