"""The audit's one engine pass: every file (a target shard, a reference file, a rejected
file) is one unit, read once, and what the checks need is written to the work dir.

A unit's result (``<work>/scan/<digest of the path>.json``, atomically) holds the file's
size and sha256 (of the bytes on disk), its rows (non-blank lines), the first fault
with its byte offset, per-source counts, and, when asked for, the multiset of its
documents' ids and of its containment keys; a rejected file adds the gate
(``removed_by``) or reason (``failed``) of each line. The driver merges the units'
results from disk (:func:`load_scans`), so a resumed run reads what finished units
wrote.

Faults (only the first per file, with the byte offset of the line):
``truncated final record`` (the file does not end in a newline), ``unparsable record``
(not JSON, or not UTF-8), ``non-object record``, ``not readable`` (an I/O or
decompression error; offset 0). Lines are read with the corpus kernel
(:mod:`curator.corpus.reading`); records are classified with its rules
(:func:`curator.corpus.records.classify_record`).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from curator.corpus.fingerprint import RowDigest, fingerprint_key, text_digest
from curator.corpus.reading import read_bytes, split_lines
from curator.corpus.records import RecordSpec, Rejection, classify_record, id_of, source_of
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

TRUNCATED = "truncated final record"
UNPARSABLE = "unparsable record"
NON_OBJECT = "non-object record"
NOT_READABLE = "not readable"
NOT_A_FILE = "not a file"


def id_key(value: Any) -> str:
    """An id as a multiset key: its canonical JSON (``"a"`` and ``1`` stay apart)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def row_key(record: dict[str, Any], fields: tuple[str, ...]) -> str | None:
    """The containment key: sha256 of the canonical JSON array of ``fields``' values
    (``None`` when the record lacks one of them)."""
    try:
        values = [record[f] for f in fields]
    except KeyError:
        return None
    # orjson writes the canonical form: compact, UTF-8 unescaped, keys sorted
    return hashlib.sha256(orjson.dumps(values, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class FileScan:
    """What one file holds, as the checks need it."""

    path: str
    bytes: int = 0
    sha256: str | None = None
    rows: int = 0
    bad_records: int = 0
    fault: dict[str, Any] | None = None  # {kind, offset}: the first fault
    per_source: dict[str, int] = field(default_factory=dict)
    documents: int = 0
    rejections: dict[str, int] = field(default_factory=dict)  # kernel reasons
    ids: dict[str, int] = field(default_factory=dict)  # documents' ids (id_key form)
    keys: dict[str, int] = field(default_factory=dict)  # containment keys
    missing_keys: int = 0
    removed_by: dict[str, int] = field(default_factory=dict)  # a rejected file's gates
    removed_ids: dict[str, int] = field(default_factory=dict)  # with their gate: id|gate
    failed: dict[str, int] = field(default_factory=dict)  # a rejected file's reasons
    #: the corpus fingerprint's partial sum of its documents (the profile's definition)
    fingerprint: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def scan_file(path: str, spec: RecordSpec, *, want_ids: bool,
              comparison_fields: tuple[str, ...] = (), rejected: bool = False,
              fingerprint: bool = False) -> FileScan:
    """Read one file once (see the module docstring)."""
    scan = FileScan(path=path)
    if not os.path.isfile(path):
        scan.fault = {"kind": NOT_A_FILE, "offset": 0}
        return scan
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
                scan.bytes += len(chunk)
        scan.sha256 = "sha256:" + h.hexdigest()
        data = read_bytes(path)
    except (OSError, EOFError, ValueError) as exc:
        scan.fault = {"kind": NOT_READABLE, "offset": 0, "detail": f"{type(exc).__name__}: {exc}"}
        return scan
    if data and not data.endswith(b"\n"):
        scan.fault = {"kind": TRUNCATED, "offset": data.rfind(b"\n") + 1}
    sources: Counter[str] = Counter()
    ids: Counter[str] = Counter()
    keys: Counter[str] = Counter()
    digest = RowDigest() if fingerprint else None
    for offset, line in split_lines(data):
        scan.rows += 1
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            _bad(scan, UNPARSABLE, offset, "unparsable_line")
            continue
        if not isinstance(obj, dict):
            _bad(scan, NON_OBJECT, offset, "not_an_object")
            continue
        if rejected:
            _rejected_line(scan, obj)
            continue
        sources[source_of(obj, spec.source_field)] += 1
        if comparison_fields:
            key = row_key(obj, comparison_fields)
            if key is None:
                scan.missing_keys += 1
            else:
                keys[key] += 1
        record = classify_record(obj, spec)
        if type(record) is Rejection:
            scan.rejections[record.reason] = scan.rejections.get(record.reason, 0) + 1
            continue
        scan.documents += 1
        if digest is not None:
            digest.add(fingerprint_key(id_of(record, spec), text_digest(record[spec.text_field])))
        if want_ids:
            ids[id_key(obj.get(spec.id_field) if spec.id_field else None)] += 1
    scan.per_source = dict(sorted(sources.items()))
    scan.ids, scan.keys = dict(ids), dict(keys)
    if digest is not None:
        scan.fingerprint = digest.to_json()
    return scan


def _bad(scan: FileScan, kind: str, offset: int, reason: str) -> None:
    scan.bad_records += 1
    scan.rejections[reason] = scan.rejections.get(reason, 0) + 1
    if scan.fault is None or (scan.fault["kind"] == TRUNCATED and scan.fault["offset"] > offset):
        scan.fault = {"kind": kind, "offset": offset}


def _rejected_line(scan: FileScan, obj: dict[str, Any]) -> None:
    """A line of the filter's ``rejected/``: a removed record (``removed_by``) or a line
    that was not a record (``failed``)."""
    gate, reason = obj.get("removed_by"), obj.get("failed")
    if isinstance(gate, str):
        scan.removed_by[gate] = scan.removed_by.get(gate, 0) + 1
        key = f"{id_key(obj.get('id'))}|{gate}"
        scan.removed_ids[key] = scan.removed_ids.get(key, 0) + 1
    elif isinstance(reason, str):
        scan.failed[reason] = scan.failed.get(reason, 0) + 1
    else:
        scan.failed["__unknown__"] = scan.failed.get("__unknown__", 0) + 1


def scan_path(work_dir: str | Path, path: str) -> Path:
    name = hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]
    return Path(work_dir) / "scan" / f"{name}.json"


@dataclass
class ScanStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """One unit per file: :func:`scan_file`, its result written to the work dir."""

    work_dir: str
    spec: RecordSpec
    want_ids: bool
    comparison_fields: tuple[str, ...]
    keyed: frozenset[str]  # files whose containment keys are wanted (target, reference)
    rejected: frozenset[str]  # files in the filter's rejected dir
    fingerprinted: frozenset[str] = frozenset()  # files whose corpus fingerprint is wanted
    name: str = "scan"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        rows = 0
        for path in task.data:
            scan = scan_file(path, self.spec, want_ids=self.want_ids,
                             comparison_fields=self.comparison_fields if path in self.keyed
                             else (), rejected=path in self.rejected,
                             fingerprint=path in self.fingerprinted)
            write_atomic(scan_path(self.work_dir, path),
                         orjson.dumps(scan.to_json(), option=orjson.OPT_SORT_KEYS))
            rows += scan.rows
        self.stat_update("rows", rows)
        self.stat_update("files", len(task.data))
        return FileGroupTask(data=list(task.data), _metadata={"rows": rows})


def load_scans(work_dir: str | Path, paths: list[str]) -> dict[str, FileScan]:
    """Every file's scan, from the units' results on disk."""
    out: dict[str, FileScan] = {}
    for path in paths:
        data = orjson.loads(scan_path(work_dir, path).read_bytes())
        out[path] = FileScan(**data)
    return out
