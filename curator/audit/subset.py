"""The audit's checker of ``subset_report.json`` (curate subset's completion artifact).

Proved from disk, without the subset's own code (``curator.subset`` is not imported):

- every tier's ids are a subset of the next larger tier's (``subset_tiers_do_not_nest``);
- each tier's units, recomputed from its documents, equal its ``achieved_tokens``
  (``subset_token_count_mismatch``): whitespace words directly; a tokenizer is loaded
  with its own library (``tiktoken`` with the ranks ``bpe-openai`` ships, or
  ``tokenizers`` for a ``tokenizer.json``) only if its vocabulary's sha256 equals the
  recorded revision; otherwise the counts are not recomputed and the block says so;
- each stratum's deviation, recomputed from ``plan.json`` (quotas; each id's stratum from
  its per-range id files, schema 3, or its ``strata`` lists, schema 2) and the
  recounted documents, equals the report's ``per_stratum_deviation``
  (``subset_deviation_mismatch``); every tier document is in a planned stratum
  (``subset_unplanned_document``); the written count equals ``document_count``
  (``subset_document_count_mismatch``).

Reads from the report: ``tiers[].output``, ``id_field``, ``text_field``, ``unit``,
``tokenizer`` and ``plan``; in a whole-root audit, the paths under the root it is given
(:mod:`curator.audit.rebase`).
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from curator import models
from curator.audit.checks import EXAMPLES, Block, Finding, finding
from curator.audit.rebase import Rebase
from curator.corpus.reading import iter_lines
from curator.corpus.tokenizers import tiktoken_encoding
from curator.errors import CuratorError
from curator.models import SubsetPlan, SubsetReport

Counter_ = Callable[[list[str]], list[int]]
_BUNDLED = {"cl100k_base", "o200k_base"}


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _counter(unit: str, tok: dict[str, Any] | None) -> tuple[Counter_ | None, str]:
    """A recounting function and how it was obtained (or why there is none)."""
    if unit == "words" or not tok:
        return (lambda texts: [len(t.split()) for t in texts]), "whitespace words"
    name, revision = tok.get("name"), tok.get("revision")
    try:
        if name in _BUNDLED:
            import importlib.resources as resources

            data = gzip.decompress(resources.files("bpe_openai").joinpath(
                f"data/{name}.tiktoken.gz").read_bytes())
            if _sha(data) != revision:
                return None, f"the installed {name} ranks are not revision {revision}"
            enc = tiktoken_encoding(name, data)
            return (lambda texts: [len(x) for x in enc.encode_ordinary_batch(texts)],
                    f"tiktoken {name} (recomputed)")
        path = Path(str(name))
        if not path.is_file() or _sha(path.read_bytes()) != revision:
            return None, f"{name} is not here at revision {revision}"
        from tokenizers import Tokenizer

        tk = Tokenizer.from_file(str(path))
        return (lambda texts: [len(e.ids) for e in
                               tk.encode_batch(texts, add_special_tokens=False)],
                f"tokenizers {path.name} (recomputed)")
    except (ImportError, OSError, ValueError, CuratorError) as exc:
        return None, f"tokenizer {name} cannot be loaded here ({type(exc).__name__})"


def _tier_docs(output: Path, id_field: str, text_field: str
               ) -> tuple[list[str], list[str], list[str]]:
    ids: list[str] = []
    texts: list[str] = []
    bad: list[str] = []
    for shard in sorted(output.glob("*.jsonl")):
        for offset, line in iter_lines(str(shard)):
            try:
                rec = orjson.loads(line)
                doc_id, text = str(rec[id_field]), rec[text_field]
            except (orjson.JSONDecodeError, KeyError, TypeError, IndexError):
                bad.append(f"{shard.name}@{offset}")
                continue
            if not isinstance(text, str):  # a record the subset never wrote: no recount
                bad.append(f"{shard.name}@{offset}")
                continue
            ids.append(doc_id)
            texts.append(text)
    return ids, texts, bad


def _read_plan(path: str | None) -> SubsetPlan | None:
    """``plan.json`` through its model; ``None`` when absent, unreadable or malformed."""
    try:
        return models.read(SubsetPlan, path) if path else None
    except (OSError, CuratorError):
        return None


def _strata_of(plan: SubsetPlan, plan_at: str) -> dict[str, str]:
    """Each planned id's stratum: from the per-range id files (schema 3, Parquet beside
    ``plan.json``) or the ``strata`` lists (schema 2). ``OSError`` when a file is not
    there or not an id file."""
    if plan.strata is not None:
        return {i: key for key, ids in plan.strata.items() for i in ids}
    out: dict[str, str] = {}
    for r in plan.ranges or []:
        try:
            table = pq.read_table(Path(plan_at).parent / r.file, columns=["id", "stratum"])
        except (pa.ArrowInvalid, KeyError) as exc:
            raise OSError(f"{r.file}: {exc}") from exc
        out.update(zip(table["id"].to_pylist(), table["stratum"].to_pylist(), strict=True))
    return out


def check_subset(report_path: Path, root: Path | None = None) -> Block:
    """Prove ``subset_report.json`` from the tiers on disk and ``plan.json``; with
    ``root`` (a whole-root audit) the paths it records are read under that root
    (:mod:`curator.audit.rebase`)."""
    findings: list[Finding] = []
    try:
        report = models.read(SubsetReport, report_path)
    except OSError as exc:
        return None, [finding("subset_report_unreadable", f"{report_path}: {exc}")]
    except CuratorError as exc:  # artifact_invalid: names the file and the field
        return None, [finding("subset_report_unreadable", exc.message)]
    if not report.is_complete:
        return ({"complete": False}, [finding("subset_incomplete",
                                              f"{report_path} is not complete")])
    id_field = report.id_field or "id"
    text_field = report.text_field or "text"
    unit = report.unit if "unit" in report.model_fields_set else "words"
    where = Rebase.of(report_path, root, report.producer.output_dir if report.producer
                      else None)
    outside: list[Finding] = []
    plan_at = where.path(report.plan, "plan", output=True, problems=outside) \
        if report.plan else None
    outputs = {id(t): where.path(t.output, f"tiers[{i}].output", output=True,
                                    problems=outside)
               for i, t in enumerate(report.tiers or []) if t.output is not None}
    tok = report.tokenizer.dump() if report.tokenizer else None
    if tok and isinstance(tok.get("name"), str) and tok["name"] not in _BUNDLED \
            and Path(tok["name"]).is_absolute():  # a tokenizer.json: an input
        tok["name"] = where.path(tok["name"], "tokenizer.name", output=False,
                                 problems=outside)
    if outside:
        return None, outside
    plan = _read_plan(plan_at)
    if plan is None:
        findings.append(finding("subset_plan_unreadable",
                                f"plan.json {report.plan!r} cannot be read"))
    stratum_of: dict[str, str] = {}
    if plan is not None and plan_at is not None:
        try:
            stratum_of = _strata_of(plan, plan_at)
        except OSError as exc:
            findings.append(finding("subset_plan_unreadable",
                                    f"plan.json {report.plan!r}: an id file cannot be read "
                                    f"({exc})"))
            plan = None
    count, how = _counter(unit, tok)
    tiers_out: list[dict[str, Any]] = []
    previous: set[str] | None = None
    previous_budget = None
    for tier in sorted(report.tiers or [], key=lambda t: t.budget):
        budget = tier.budget
        if tier.output is None:
            findings.append(finding("subset_report_unreadable",
                                    f"{report_path}: tier {budget} names no output"))
            continue
        ids, texts, bad = _tier_docs(Path(str(outputs[id(tier)])), id_field, text_field)
        for b in bad[:EXAMPLES]:
            findings.append(finding("subset_unreadable_document",
                                    f"tier {budget}: {b} is not a record with id and text"))
        block: dict[str, Any] = {"budget": budget, "documents": len(ids)}
        if len(ids) != tier.document_count:
            findings.append(finding("subset_document_count_mismatch",
                                    f"tier {budget}: {len(ids)} documents on disk, report "
                                    f"says {tier.document_count}"))
        here = set(ids)
        if previous is not None and not previous <= here:
            missing = sorted(previous - here)
            findings.append(finding(
                "subset_tiers_do_not_nest",
                f"{len(missing)} ids of tier {previous_budget} are not in tier {budget}, "
                f"e.g. {missing[:EXAMPLES]}", examples=missing[:EXAMPLES]))
        previous, previous_budget = here, budget
        unplanned = [i for i in ids if plan is not None and i not in stratum_of]
        if unplanned:
            findings.append(finding("subset_unplanned_document",
                                    f"tier {budget}: {len(unplanned)} ids in no stratum of "
                                    f"plan.json, e.g. {unplanned[:EXAMPLES]}"))
        if count is not None:
            units = count(texts)
            achieved = sum(units)
            block["recomputed_tokens"] = achieved
            if achieved != tier.achieved_tokens:
                findings.append(finding(
                    "subset_token_count_mismatch",
                    f"tier {budget}: {achieved} {unit} recomputed from its documents, the "
                    f"report says {tier.achieved_tokens}"))
            quotas = plan.quotas.get(str(budget)) if plan and plan.quotas else None
            if quotas is not None:
                taken: dict[str, int] = dict.fromkeys(quotas, 0)
                for i, n in zip(ids, units, strict=True):
                    key = stratum_of.get(i)
                    if key is not None:
                        taken[key] = taken.get(key, 0) + n
                deviation = {k: taken.get(k, 0) - q for k, q in quotas.items()}
                reported = tier.per_stratum_deviation or {}
                wrong = {k: (v, reported.get(k)) for k, v in deviation.items()
                         if v != reported.get(k)}
                block["deviations_checked"] = len(deviation)
                if wrong:
                    first = sorted(wrong.items())[:EXAMPLES]
                    findings.append(finding(
                        "subset_deviation_mismatch",
                        f"tier {budget}: {len(wrong)} strata's deviations recomputed from "
                        f"plan.json differ from the report's, e.g. {first}"))
        tiers_out.append(block)
    block = {"artifact": str(report_path), "unit": unit, "recount": how,
             "recounted": count is not None, "tiers": tiers_out,
             "note": None if count is not None else
             "token counts not recomputed (" + how + "); nesting and plan membership "
             "checked from plan.json and the shards"}
    return block, findings


__all__ = ["check_subset"]
