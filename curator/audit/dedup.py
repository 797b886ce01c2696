"""The audit's checker of ``curate dedup`` (``dedup_report.json``; docs/dedup.md, "Audit").

Proved from the files alone, with none of the step's code: the step's package
(``curator.dedup``, the MinHash kernel included) is another step's, which the audit may
not import (tests/unit/test_layering.py), so the shingle hashes and the signature are
recomputed here by :mod:`curator.audit.dedup_kernel`, an independent implementation of
the definitions docs/dedup.md and ``curator/dedup/shingles.py`` state (pinned equal to
the kernel by tests/audit/test_dedup_checker.py).

- **input = output + removed, by id**: the multiset of the input records' ids equals the
  output's plus ``removed/``'s (``dedup_accounting_mismatch``), and the lines add up;
- **no removed document is also in the output** (``dedup_removed_in_output``);
- **every removed document's survivor is in the output** (``dedup_survivor_missing``),
  and its neighbour is the survivor or a removed document of the same component
  (``dedup_neighbor_not_in_component``);
- **similarities, recomputed from the two records' texts** with the report's ``params``:
  the edge a document was removed by is at least ``threshold``
  (``dedup_below_threshold``), and ``dedup_similarity`` (to the survivor, which may be
  below the threshold in a chain) and ``dedup_neighbor_similarity`` are what the kernel
  computes (``dedup_similarity_mismatch``). All removed records up to
  :data:`SAMPLE_ABOVE`, else a seeded sample of that many (the block says which);
- the report's ``documents_in``, ``documents_out``, ``removed`` are the files' lines, and
  its ``shards`` / ``removed_shards`` their rows and sha256 (``dedup_counts_mismatch``,
  ``dedup_shard_mismatch``).

Reads the paths the report records (``input.glob``, ``output_dir``, ``removed_dir``); in a
whole-root audit, under the root it is given (:mod:`curator.audit.rebase`).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from curator import models
from curator.audit.checks import EXAMPLES, Block, Finding, finding
from curator.audit.dedup_kernel import estimate, jaccard, shingle_hashes, signature
from curator.audit.rebase import Rebase
from curator.corpus.formats import JSONL_EXTENSIONS, PARQUET_NAMES, file_facts
from curator.corpus.reading import iter_lines
from curator.errors import CuratorError
from curator.models import DedupReport

#: removed records whose similarities are all recomputed; above, a seeded sample this big
SAMPLE_ABOVE = 20_000
SAMPLE_SEED = 0
#: recomputed and written similarities may differ by float rounding only
TOLERANCE = 1e-9
FIELDS = ("dedup_component", "dedup_survivor", "dedup_similarity", "dedup_neighbor",
          "dedup_neighbor_similarity")


def _records(paths: list[str]) -> tuple[int, list[dict[str, Any] | None]]:
    """``(lines, records)`` of JSONL files: a line that is not a JSON object is ``None``."""
    lines, out = 0, []
    for path in paths:
        for _, line in iter_lines(path):
            lines += 1
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                rec = None
            out.append(rec if isinstance(rec, dict) else None)
    return lines, out


def _shards(folder: Path) -> list[Path]:
    return sorted(folder.glob("part_*.jsonl"), key=lambda p: int(p.stem[5:]))


def _id(rec: dict[str, Any] | None, field: str) -> str | None:
    value = None if rec is None else rec.get(field)
    return None if value is None else str(value)


def check_dedup(report_path: Path, root: Path | None = None) -> Block:
    """``(block, findings)`` of one ``dedup_report.json``; with ``root`` (a whole-root
    audit) the paths it records are read under that root."""
    try:
        report = models.read(DedupReport, report_path)
    except OSError as exc:
        return None, [finding("dedup_report_unreadable",
                              f"{report_path}: {type(exc).__name__}: {exc}")]
    except CuratorError as exc:
        return None, [finding("dedup_report_unreadable", exc.message)]
    params = report.params or {}
    need = {"params.id_field": params.get("id_field"), "params.threshold":
            params.get("threshold"), "output_dir": report.output_dir,
            "removed_dir": report.removed_dir, "input.glob": (report.input or {}).get("glob")}
    missing = [k for k, v in need.items() if v is None]
    if missing:
        return None, [finding("dedup_report_unreadable",
                              f"{report_path}: {', '.join(missing)} missing")]
    assert report.output_dir and report.removed_dir
    where = Rebase.of(report_path, root, (report.producer.output_dir if report.producer
                                          else None) or report.output_dir)
    outside: list[Finding] = []
    out_at = where.path(report.output_dir, "output_dir", output=True, problems=outside)
    removed_at = where.path(report.removed_dir, "removed_dir", output=True, problems=outside)
    glob = (report.input or {})["glob"]
    globs = where.paths([glob] if isinstance(glob, str) else list(glob), "input.glob",
                        output=False, problems=outside)
    if out_at is None or removed_at is None or globs is None:
        return None, outside
    out, removed_dir = Path(out_at), Path(removed_at)
    findings: list[Finding] = []
    if not report.is_complete:
        findings.append(finding("dedup_incomplete", f"{report_path} has no "
                                                    "producer.completed_at"))
    from curator.io.partitioning import resolve_input_files

    try:
        inputs = [f for f in resolve_input_files(globs, JSONL_EXTENSIONS)
                  if not f.lower().endswith(PARQUET_NAMES)
                  and not Path(f).resolve().is_relative_to(out.resolve())]
        lines_in, recs_in = _records(inputs)
        kept_shards, removed_shards = _shards(out), _shards(removed_dir)
        lines_out, recs_out = _records([str(p) for p in kept_shards])
        lines_removed, recs_removed = _records([str(p) for p in removed_shards])
    except (OSError, ValueError, CuratorError) as exc:
        return None, [*findings, finding("dedup_files_unreadable",
                                         f"{type(exc).__name__}: {exc}")]
    id_field, text_field = str(params["id_field"]), str(params.get("text_field") or "text")
    threshold = float(params["threshold"])

    # input = output + removed, by id (and by lines)
    ids_in = Counter(i for r in recs_in if (i := _id(r, id_field)) is not None)
    ids_out = Counter(i for r in recs_out if (i := _id(r, id_field)) is not None)
    removed = [r for r in recs_removed if r is not None]
    ids_removed = Counter(i for r in removed if (i := _id(r, id_field)) is not None)
    lost = sorted((ids_in - ids_out - ids_removed).elements())
    extra = sorted(((ids_out + ids_removed) - ids_in).elements())
    if lost or extra or lines_in != lines_out + lines_removed:
        findings.append(finding(
            "dedup_accounting_mismatch",
            f"input ({lines_in} lines) is not output ({lines_out}) + removed "
            f"({lines_removed}): {len(lost)} input ids in neither, {len(extra)} ids not in "
            "the input (or more often than there)", examples=(lost + extra)[:EXAMPLES]))
    put_back = sorted(set(ids_out) & set(ids_removed))
    if put_back:
        findings.append(finding("dedup_removed_in_output",
                                f"{len(put_back)} removed documents are also in the output",
                                examples=put_back[:EXAMPLES]))
    malformed = [r for r in removed if any(r.get(f) is None for f in FIELDS)]
    if malformed or len(removed) != lines_removed:
        findings.append(finding(
            "dedup_removed_record_malformed",
            f"{len(malformed) + lines_removed - len(removed)} lines of removed/ are not "
            f"records with {', '.join(FIELDS)}",
            examples=[_id(r, id_field) for r in malformed][:EXAMPLES]))
    good = [r for r in removed if all(r.get(f) is not None for f in FIELDS)]
    missing_survivor = sorted({str(r["dedup_survivor"]) for r in good
                               if str(r["dedup_survivor"]) not in ids_out})
    if missing_survivor:
        findings.append(finding("dedup_survivor_missing",
                                f"{len(missing_survivor)} survivors named in removed/ are not "
                                "in the output", examples=missing_survivor[:EXAMPLES]))
    component = {str(r[id_field]): str(r["dedup_component"]) for r in good
                 if r.get(id_field) is not None}
    stray = sorted(str(r[id_field]) for r in good
                   if str(r["dedup_neighbor"]) != str(r["dedup_survivor"])
                   and component.get(str(r["dedup_neighbor"])) != str(r["dedup_component"]))
    if stray:
        findings.append(finding("dedup_neighbor_not_in_component",
                                f"{len(stray)} removed documents name a neighbour that is "
                                "neither their survivor nor removed in their component",
                                examples=stray[:EXAMPLES]))

    # similarities, recomputed: every removed record, or a seeded sample
    if len(good) > SAMPLE_ABOVE:
        sample = random.Random(SAMPLE_SEED).sample(range(len(good)), SAMPLE_ABOVE)
        checked = [good[i] for i in sorted(sample)]
        scope = f"a seeded sample of {SAMPLE_ABOVE} of {len(good)} (seed {SAMPLE_SEED})"
    else:
        checked, scope = good, f"all {len(good)}"
    wanted = {str(r["dedup_survivor"]) for r in checked} | \
        {str(r["dedup_neighbor"]) for r in checked}
    texts: dict[str, Any] = {}
    for r in recs_out + good:
        i = _id(r, id_field)
        if i in wanted and r is not None:
            texts.setdefault(i, r.get(text_field))
    below, mismatch, unverifiable = [], [], []
    measure = _measure(params)
    for r in checked:
        rid = str(r[id_field])
        survivor, neighbor = str(r["dedup_survivor"]), str(r["dedup_neighbor"])
        if not isinstance(texts.get(survivor), str) or not isinstance(texts.get(neighbor), str) \
                or not isinstance(r.get(text_field), str):
            unverifiable.append(rid)
            continue
        to_survivor = measure(r[text_field], texts[survivor])
        edge = measure(r[text_field], texts[neighbor])
        if edge < threshold:
            below.append(rid)
        if abs(to_survivor - float(r["dedup_similarity"])) > TOLERANCE or \
                abs(edge - float(r["dedup_neighbor_similarity"])) > TOLERANCE:
            mismatch.append(rid)
    if below:
        findings.append(finding("dedup_below_threshold",
                                f"{len(below)} removed documents' edge, recomputed from the "
                                f"texts, is below the threshold {threshold}",
                                examples=below[:EXAMPLES]))
    if mismatch:
        findings.append(finding("dedup_similarity_mismatch",
                                f"{len(mismatch)} removed records' similarities differ from "
                                "those recomputed from the texts", examples=mismatch[:EXAMPLES]))
    if unverifiable:
        findings.append(finding("dedup_similarity_unverifiable",
                                f"{len(unverifiable)} removed records' survivor or neighbour "
                                "text is not in the files", examples=unverifiable[:EXAMPLES]))

    on_disk = {"documents_in": lines_in, "documents_out": lines_out, "removed": lines_removed}
    wrong = {k: (getattr(report, k), v) for k, v in on_disk.items() if getattr(report, k) != v}
    if wrong:
        findings.append(finding("dedup_counts_mismatch",
                                f"the report's counts differ from the files: {wrong}"))
    differ = []
    for declared_list, files in ((report.shards, kept_shards),
                                 (report.removed_shards, removed_shards)):
        declared = {s.name: (s.rows, s.sha256) for s in declared_list or []}
        actual = {p.name: file_facts(p) for p in files}
        differ += sorted(n for n in set(declared) | set(actual)
                         if declared.get(n) != actual.get(n))
    if differ:
        findings.append(finding("dedup_shard_mismatch",
                                f"{len(differ)} shards differ from the report's lists",
                                examples=differ[:EXAMPLES]))
    block = {"input_documents": lines_in, "output_documents": lines_out,
             "removed_documents": lines_removed,
             "output_is_input_minus_removed": not (lost or extra or put_back),
             "survivors_in_output": not missing_survivor,
             "similarity": "exact Jaccard" if params.get("verify", True)
             else "signature estimate",
             "similarities_checked": len(checked) - len(unverifiable),
             "similarity_scope": scope, "threshold": threshold,
             "shards_match_report": not differ, "passed": not findings}
    return block, findings


def _measure(params: dict[str, Any]) -> Any:
    """``(text_a, text_b) -> similarity`` as the report's ``params`` define it."""
    kind, n = str(params.get("shingle") or "words"), int(params.get("n") or 5)
    if params.get("verify", True):
        return lambda a, b: jaccard(shingle_hashes(a, kind, n), shingle_hashes(b, kind, n))
    perms = int(params.get("bands") or 20) * int(params.get("rows") or 8)
    seed = int(params.get("seed") or 0)
    return lambda a, b: estimate(signature(a, perms, seed, kind, n),
                                 signature(b, perms, seed, kind, n))


__all__ = ["SAMPLE_ABOVE", "check_dedup"]
