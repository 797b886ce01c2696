"""The audit's scan pass: every file (a target shard, a reference file, a rejected file)
is one unit, read once (:func:`curator.audit.unit.scan_file`), and what the checks need
is written to the work dir and the exchange.

A unit's result (``<work>/scan/<digest of the path>.json``, atomically,
:func:`curator.audit.summary.scan_path`) holds the file's size and sha256 (of the bytes
on disk; only for the files whose digest a check reads, the target shards), its rows
(non-blank lines), the first fault with its byte offset, per-source counts, and a
rejected file's gates (``removed_by``) and reasons (``failed``)
(:class:`curator.audit.summary.FileScan`). The file's multisets (its documents' ids, its
containment keys, a rejected file's removed ids) go to the exchange's buckets instead
(issue 27, :mod:`curator.audit.netting`): a reduce phase nets them per key bucket, and
the driver reads only the buckets' summaries and the units' results, merged from disk
(:func:`load_scans`), so a resumed run reads what finished units wrote.

The scan's jobs, one module each: reading a file and parsing its lines
(:mod:`curator.audit.unit`, over the corpus kernel's line reader), summarising its
records (:mod:`curator.audit.summary`), keying them (:mod:`curator.audit.keys`). This
module is the engine stage and the driver's merge, and the names the step and the
checks import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from curator.audit.netting import exchange_rows
from curator.audit.summary import NOT_A_FILE, NOT_READABLE, FileScan, scan_path
from curator.audit.unit import scan_file
from curator.corpus.records import RecordSpec
from curator.errors import CuratorError
from curator.exchange import Exchange
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

#: what the step and the checks import from here
__all__ = ["NOT_A_FILE", "NOT_READABLE", "FileScan", "ScanStage", "load_scans", "scan_file",
           "scan_path"]

#: fields a unit wrote before the driver-side join was removed, and their value in every
#: scan a unit on the exchange wrote
_RETIRED = {"line_table": None, "deferred": None, "in_table": []}


@dataclass
class ScanStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """One unit per file: :func:`scan_file`, its multisets sent to the exchange, its
    result written to the work dir."""

    work_dir: str
    spec: RecordSpec
    want_ids: bool
    comparison_fields: tuple[str, ...]
    keyed: frozenset[str]  # files whose containment keys are wanted (target, reference)
    rejected: frozenset[str]  # files in the filter's rejected dir
    digested: frozenset[str]  # the target shards (a check reads their sha256)
    exchange: Exchange  # where the multisets go (module docstring)
    fingerprinted: frozenset[str] = frozenset()  # files whose corpus fingerprint is wanted
    referenced: frozenset[str] = frozenset()  # the reference files
    name: str = "scan"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        rows = 0
        for path in task.data:
            scan = scan_file(path, self.spec, want_ids=self.want_ids,
                             comparison_fields=self.comparison_fields
                             if path in self.keyed else (),
                             rejected=path in self.rejected,
                             fingerprint=path in self.fingerprinted,
                             digest=path in self.digested)
            out = scan_path(self.work_dir, path)
            self._send(scan, out.stem)  # first: a scan on disk has sent its rows
            write_atomic(out, orjson.dumps(scan.to_json()))
            rows += scan.rows
        self.stat_update("rows", rows)
        self.stat_update("files", len(task.data))
        return FileGroupTask(data=list(task.data), _metadata={"rows": rows})

    def _send(self, scan: FileScan, name: str) -> None:
        """The file's multisets to the exchange (as ``name``), then out of its result."""
        frame = exchange_rows(scan, reference=scan.path in self.referenced,
                              target=scan.path in self.digested,
                              rejected=scan.path in self.rejected)
        self.exchange.write(name, frame, "k")
        self.stat_update("exchanged", frame.height)
        scan.ids, scan.keys, scan.removed_ids = {}, {}, {}


def load_scans(work_dir: str | Path, paths: list[str]) -> dict[str, FileScan]:
    """Every file's scan, from the units' results on disk. Refused: containment keys made
    two ways (a run resumed after a polars upgrade: their keys never meet), and a scan
    that left its multisets to the removed driver-side join (a checkpoint from before
    c7953ab)."""
    out: dict[str, FileScan] = {}
    for path in paths:
        data = orjson.loads(scan_path(work_dir, path).read_bytes())
        if any(data.pop(k, v) != v for k, v in _RETIRED.items()):
            raise CuratorError("audit_scan_mixed",
                               f"the scan of {path} in {work_dir} was written by an older "
                               "audit: rerun the audit without its checkpoint")
        out[path] = FileScan(**data)
    # a scan written before schemes were recorded has keys and no scheme
    schemes = {str(s.key_scheme) for s in out.values() if s.keys or s.key_scheme}
    if len(schemes) > 1:
        raise CuratorError("audit_scan_mixed",
                           f"the scans in {work_dir} made containment keys in {len(schemes)} "
                           f"ways ({sorted(schemes)}): rerun the audit without its checkpoint")
    return out
