"""The driver's side of the scan: the units' results merged from disk
(:func:`load_scans`), and the deferred targets completed by one join of their lines with
the reference's lines tables (:func:`complete`; docs/audit.md, "Target lines reused from
the reference"). The completed targets' and the references' ids and keys are rows of the
joined tables (:class:`curator.audit.multisets.Rows`), which the checks net row by row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from curator.audit._lines import LINE_SCHEME
from curator.audit.multisets import Rows
from curator.audit.summary import FileScan, lines_path, scan_path
from curator.audit.unit import scan_file
from curator.corpus.records import RecordSpec
from curator.errors import CuratorError


def load_scans(work_dir: str | Path, paths: list[str]) -> dict[str, FileScan]:
    """Every file's scan, from the units' results on disk; a deferred target's completed
    (:func:`complete`). Containment keys made two ways (a run resumed after a polars
    upgrade) are refused: their keys never meet."""
    out: dict[str, FileScan] = {}
    for path in paths:
        data = orjson.loads(scan_path(work_dir, path).read_bytes())
        out[path] = FileScan(**data)
    if any(s.deferred is not None or s.line_table is not None for s in out.values()):
        complete(work_dir, out)
    # a scan written before schemes were recorded has keys and no scheme
    schemes = {str(s.key_scheme) for s in out.values() if s.keys or s.key_scheme}
    if len(schemes) > 1:
        raise CuratorError("audit_scan_mixed",
                           f"the scans in {work_dir} made containment keys in {len(schemes)} "
                           f"ways ({sorted(schemes)}): rerun the audit without its checkpoint")
    return out


def complete(work_dir: str | Path, scans: dict[str, FileScan]) -> None:
    """Complete each deferred target scan (read, split and hashed only) from the
    reference's lines tables: a target line whose bytes are a reference document's line
    (same two 64-bit hashes) is that document, with its source, id and key, so what the
    full scan would find is counted from the table. A target with any other line (or no
    usable table) is scanned in full here, as :func:`scan_file` scans it.

    The tables become one frame; each reference file's ids and keys are its rows of it,
    and a completed target's the rows its lines matched (:class:`Rows`), so the checks
    net them row by row (:func:`curator.audit.multisets.differences`)."""
    owners, tables = [], []
    for p, s in scans.items():
        if s.line_table == LINE_SCHEME:
            owners.append((p, s))
            tables.append(pl.read_ipc(lines_path(scan_path(work_dir, p))))
    shared = pl.concat(tables) if tables and all(t.schema == tables[0].schema
                                                  for t in tables) else None
    columns = _columns(shared) if shared is not None else {}
    start = 0
    for (p, s), table in zip(owners, tables, strict=True):
        if shared is None:  # each table its own
            _own_rows(s, _columns(table), np.arange(table.height))
        else:
            _own_rows(s, columns, np.arange(start, start + table.height))
            start += table.height
        if not set(s.in_table) <= set(s.frames):
            raise CuratorError("audit_scan_incomplete",
                               f"the scan of {p} left {s.in_table} to its lines table, "
                               "which lacks them: rerun the audit without its checkpoint")
    # the keys in the tables, made as the target's would be
    key_schemes = {s.key_scheme for _, s in owners}
    usable, rescan = [], []
    for path, scan in scans.items():
        d = scan.deferred
        if d is None:
            continue
        if shared is not None and d["line_scheme"] == LINE_SCHEME \
                and (not d["want_ids"] or "id" in shared.columns) \
                and (not d["comparison_fields"] or ("key" in shared.columns
                                                    and key_schemes == {d.get("key_scheme")})):
            usable.append(path)
        else:
            rescan.append(path)
    if usable:  # one join of every target's lines with the tables, "t": which target
        assert shared is not None
        lines = pl.concat([pl.read_ipc(lines_path(scan_path(work_dir, path)))
                           .with_columns(t=pl.lit(i, pl.Int32)) for i, path in enumerate(usable)])
        rows = shared.select("h0", "h1").with_row_index("r")
        if rows["h0"].is_duplicated().any():  # a line repeated in the tables (or an h0
            # collision): one row per line; its attributes are a function of its bytes,
            # so which copy is moot
            rows = rows.unique(subset=["h0", "h1"], keep="any")
        joined = lines.join(rows, on=["h0", "h1"], how="left").select("t", "r")
        unmatched = set(joined.filter(pl.col("r").is_null())["t"].unique().to_list())
        rescan += [usable[i] for i in sorted(unmatched)]  # a line that is no document's
        _fill(scans, {i: path for i, path in enumerate(usable) if i not in unmatched},
              joined.filter(~pl.col("t").is_in(list(unmatched))), columns)
    for path in sorted(rescan):
        scan = scans[path]
        d = scan.deferred
        assert d is not None
        spec = d["spec"]
        scans[path] = scan_file(
            path, RecordSpec(**{**spec, "metadata_fields": tuple(spec["metadata_fields"])}),
            want_ids=d["want_ids"], comparison_fields=tuple(d["comparison_fields"]),
            digest=scan.sha256 is not None)


def _columns(table: pl.DataFrame) -> dict[str, Any]:
    """A lines table's columns, each one object (multisets over one column net row by
    row only when they hold the same object: :class:`Rows`), and ``keyed``: which rows
    have a key (numpy)."""
    out: dict[str, Any] = {name: table[name] for name in ("source", "id", "key")
                           if name in table.columns}
    if "key" in out:
        out["keyed"] = out["key"].is_not_null().to_numpy()
    return out


def _own_rows(scan: FileScan, columns: dict[str, Any], rows: np.ndarray) -> None:
    """A reference file's ids and keys: its ``rows`` of the tables' ``columns``: its
    documents' ids, and their keys when every object is a document (the keys are of
    every object)."""
    if "id" in columns:
        scan.frames["ids"] = Rows(columns["id"], rows)
    if "key" in columns and scan.documents + scan.bad_records == scan.rows:
        scan.frames["keys"] = Rows(columns["key"], rows[columns["keyed"][rows]])


def _fill(scans: dict[str, FileScan], matched: dict[int, str], joined: pl.DataFrame,
          columns: dict[str, Any]) -> None:
    """The deferred targets' counts (``matched``: by ``t``) from their lines' rows
    ``r`` of the tables (their ``columns``; each target's lines all matched)."""
    rows = {key[0]: part["r"].cast(pl.Int64).to_numpy() for key, part in
            joined.partition_by("t", as_dict=True, include_key=False).items()}
    sources = joined.with_columns(source=columns["source"].gather(joined["r"])) \
        .group_by("t", "source").len()
    per_source = {key[0]: dict(zip(part["source"].to_list(), part["len"].to_list(),
                                   strict=True))
                  for key, part in sources.partition_by("t", as_dict=True,
                                                        include_key=False).items()}
    keyed = columns.get("keyed")
    none = np.zeros(0, np.int64)
    for i, path in matched.items():
        scan = scans[path]
        d = scan.deferred
        assert d is not None
        mine = rows.get(i, none)
        scan.documents = len(mine)
        scan.per_source = dict(sorted(per_source.get(i, {}).items()))
        # the multisets as rows of the tables only (the checks take them;
        # :meth:`FileScan.counts` gives them as maps)
        if d["want_ids"]:
            scan.frames["ids"] = Rows(columns["id"], mine)
        if d["comparison_fields"]:
            assert keyed is not None
            has = keyed[mine]
            scan.frames["keys"] = Rows(columns["key"], mine[has])
            scan.missing_keys = len(mine) - int(has.sum())
            scan.key_scheme = d["key_scheme"]
        scan.deferred = None
