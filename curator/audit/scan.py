"""The audit's one engine pass: every file (a target shard, a reference file, a rejected
file) is one unit, read once (:func:`curator.audit.unit.scan_file`), and what the checks
need is written to the work dir.

A unit's result (``<work>/scan/<digest of the path>.json``, atomically,
:func:`curator.audit.summary.scan_path`) holds the file's size and sha256 (of the bytes
on disk; only for the files whose digest a check reads, the target shards), its rows
(non-blank lines), the first fault with its byte offset, per-source counts, and, when
asked for, the multiset of its documents' ids and of its containment keys; a rejected
file adds the gate (``removed_by``) or reason (``failed``) of each line
(:class:`curator.audit.summary.FileScan`). A reference file's lines table, or a deferred
target's line hashes, go next to it (:func:`curator.audit.summary.lines_path`). The
driver merges the units' results from disk (:func:`curator.audit.join.load_scans`), so
a resumed run reads what finished units wrote.

The scan's jobs, one module each: reading a file and parsing its lines
(:mod:`curator.audit.unit`, over the corpus kernel's line reader), summarising its
records (:mod:`curator.audit.summary`), keying them (:mod:`curator.audit.keys`), and
the driver's merge and join (:mod:`curator.audit.join`). This module is the engine stage,
and the names the step and the checks import.

**On the exchange** (the step's way, issue 27: :mod:`curator.audit.netting`): with an
``exchange``, a unit sends its file's ids, containment keys and removed ids to the
exchange's buckets instead of writing them in its result, and neither writes a lines
table nor defers a target (a target is parsed: the multisets are netted per key bucket
by a reduce phase, and the driver reads only the buckets' summaries).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import orjson
import polars as pl

from curator.audit.join import load_scans
from curator.audit.netting import exchange_rows
from curator.audit.summary import NOT_A_FILE, NOT_READABLE, FileScan, lines_path, scan_path
from curator.audit.unit import scan_file, scan_unit
from curator.corpus.records import RecordSpec
from curator.exchange import Exchange
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

#: what the step and the checks import from here
__all__ = ["NOT_A_FILE", "NOT_READABLE", "FileScan", "ScanStage", "load_scans", "scan_file",
           "scan_path"]


@dataclass
class ScanStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """One unit per file: :func:`scan_unit`, its result written to the work dir."""

    work_dir: str
    spec: RecordSpec
    want_ids: bool
    comparison_fields: tuple[str, ...]
    keyed: frozenset[str]  # files whose containment keys are wanted (target, reference)
    rejected: frozenset[str]  # files in the filter's rejected dir
    fingerprinted: frozenset[str] = frozenset()  # files whose corpus fingerprint is wanted
    #: files whose sha256 a check reads (the target shards); None: every file
    digested: frozenset[str] | None = None
    #: the multisets go to this exchange (module docstring), with each file's roles:
    #: ``referenced`` the reference files (the target is ``digested``)
    exchange: Exchange | None = None
    referenced: frozenset[str] = frozenset()
    name: str = "scan"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        rows = 0
        target = self.digested  # the target shards (their sha256 is checked)
        # the reference: keyed or fingerprinted, not a target or rejected file (none
        # known in integrity and digest modes without an approved policy)
        reference = (self.keyed | self.fingerprinted) - (target or frozenset()) - self.rejected
        if self.exchange is not None:  # no lines tables, no deferred targets
            reference = frozenset()
        for path in task.data:
            # a target shard is read without parsing when a reference will hold a lines
            # table to complete it from (the driver); a reference file writes one
            defer = bool(reference) and target is not None and path in target \
                and path not in self.fingerprinted and path not in self.rejected
            scan, lines = scan_unit(path, self.spec, want_ids=self.want_ids,
                                    comparison_fields=self.comparison_fields
                                    if path in self.keyed else (),
                                    rejected=path in self.rejected,
                                    fingerprint=path in self.fingerprinted,
                                    digest=target is None or path in target,
                                    table=bool(target) and path in reference, defer=defer)
            out = scan_path(self.work_dir, path)
            if self.exchange is not None:  # first: a scan on disk has sent its rows
                self._send(scan, out.stem)
            if lines is not None:  # first: a scan on disk has its lines file
                write_atomic(lines_path(out), _ipc(lines))
            write_atomic(out, orjson.dumps(scan.to_json()))
            rows += scan.rows
        self.stat_update("rows", rows)
        self.stat_update("files", len(task.data))
        return FileGroupTask(data=list(task.data), _metadata={"rows": rows})

    def _send(self, scan: FileScan, name: str) -> None:
        """The file's multisets to the exchange (as ``name``), then out of its result."""
        assert self.exchange is not None
        frame = exchange_rows(scan, reference=scan.path in self.referenced,
                              target=self.digested is not None and scan.path in self.digested,
                              rejected=scan.path in self.rejected)
        self.exchange.write(name, frame, "k")
        self.stat_update("exchanged", frame.height)
        scan.ids, scan.keys, scan.removed_ids = {}, {}, {}


def _ipc(frame: pl.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.write_ipc(buf)
    return buf.getvalue()
