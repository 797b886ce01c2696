"""Print where `make demo` put its artifacts and the headline numbers of each step.

    python examples/demo/summary.py [--workdir demo-run]

Reads ``<workdir>/ingested/ingest_report.json`` and compares it with what the demo
corpus generator planted (``<workdir>/raw/demo_corpus_manifest.yaml``), then, when
present, ``<workdir>/profile/profile_report.json``, the filter's manifest and ledger, and
``<workdir>/evaluation.json`` (``curate evaluate`` on the generator's labelled sample)
and ``<workdir>/audit/audit_report.json`` (``curate audit``'s verdict), and
``<workdir>/deduplicated/dedup_report.json`` against the near-duplicates the generator
planted, ``<workdir>/decontaminated/decontamination_report.json`` against the holdout that
``curator_demo.holdout`` planted, and ``<workdir>/subset/subset_report.json``
(``curate subset``'s tiers).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from curator import models
from curator.models import (
    AuditReport,
    CurationLedger,
    DecontaminationReport,
    DedupReport,
    EvaluationReport,
    IngestReport,
    ProfileReport,
    RunManifest,
    SubsetReport,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("demo-run"))
    args = parser.parse_args()
    raw, ingested = args.workdir / "raw", args.workdir / "ingested"
    report_path = ingested / "ingest_report.json"
    if not report_path.is_file():
        print(f"no report at {report_path}: run `make demo` first", file=sys.stderr)
        return 2
    report = models.read(IngestReport, report_path)
    manifest_path = raw / "demo_corpus_manifest.yaml"
    manifest = yaml.safe_load(manifest_path.read_text(encoding="utf-8"))
    expected = manifest["expected_ingest"]

    raw_mb = sum(f["bytes"] for f in manifest["files"].values()) / 1e6
    shards = report.shards or []
    print("\n== demo: curate ingest ==")
    print(f"raw corpus   {raw}/  ({len(manifest['files'])} files, {raw_mb:.1f} MB, "
          f"manifest {manifest_path.name})")
    print(f"shards       {ingested}/part_*.jsonl  ({len(shards)} shards, "
          f"{sum(s.rows or 0 for s in shards)} documents)")
    print(f"rejections   {ingested}/rejected/*.jsonl  (one line per rejected record, with a "
          "reason)")
    print(f"report       {report_path}")
    print()
    balanced = bool(report.balance and report.balance.ok)
    print(f"documents seen {report.documents_seen}, accepted {report.documents_accepted}, "
          f"rejected {report.documents_rejected}; balance ok: {balanced}")
    reasons = ", ".join(f"{k} {v}" for k, v in (report.rejections_by_reason or {}).items())
    print(f"rejected by reason: {reasons}")
    print(f"encodings: {', '.join(f'{k} {v}' for k, v in (report.encodings_used or {}).items())}; "
          f"files with a BOM: {report.files_with_bom}; lossy decodes: "
          f"{report.lossy_documents}")
    print(f"ingest took {report.seconds} s (completed normally: "
          f"{report.completed_normally})")
    keys = ("documents_seen", "documents_accepted", "rejections_by_reason", "encodings_used")
    matches = all(getattr(report, k) == expected[k] for k in keys)
    print(f"matches the noise the generator planted: {'yes' if matches else 'NO'}")
    profiled = _profile(args.workdir / "profile")
    filtered = _filter(args.workdir / "filtered_jsonl", args.workdir / "policy")
    audited = _audit(args.workdir / "audit")
    _dedup(args.workdir / "deduplicated", manifest)
    _decontamination(args.workdir / "decontaminated", args.workdir / "holdout")
    _subset(args.workdir / "subset")
    _evaluation(args.workdir / "evaluation.json")
    whole = _audit_root(args.workdir / "audit-all")
    page = args.workdir / "report.html"  # written by curate flow (docs/report.md)
    print(f"\nthe run on one page: {page}  (open it in a browser)" if page.is_file()
          else f"\n(no {page}: `curate report {args.workdir}` writes it)")
    print("\nNext: read docs/demo-corpus.md for what the noise is and which later step "
          "should catch it.")
    return 0 if matches and balanced and profiled and filtered \
        and audited and whole else 1


def _audit_root(out: Path) -> bool:
    """``curate audit`` on the whole output root: every step that ran, proved from disk."""
    path = out / "audit_report.json"
    if not path.is_file():
        print(f"\n(no audit of the whole root at {path})")
        return True
    report = models.read(AuditReport, path)
    print("\n== demo: curate audit of the whole output root (every step that ran) ==")
    print(f"report       {path}")
    print(f"verdict: {'PASSED' if report.passed else 'FAILED'}; filtered corpus "
          f"{report.target.file_count if report.target else '-'} shards")
    for key, block in (report.steps or {}).items():
        print(f"  {key:<16} {', '.join(block.findings or []) or 'no findings'}  "
              f"({block.artifact})")
    return bool(report.passed)


def _profile(out: Path) -> bool:
    """The profile's headline numbers; False when its report is missing."""
    path = out / "profile_report.json"
    if not path.is_file():
        print(f"\n(no profile at {path})")
        return False
    report = models.read(ProfileReport, path)
    corpus, sim = report.corpus or models.profile_report.ProfileCorpus(), report.policy_simulation
    print("\n== demo: curate profile ==")
    print(f"summary      {out / 'profile_summary.md'}  (plots in {out / 'plots'}/)")
    print(f"candidates   {out / 'candidate_policies.yaml'}  (approved: false)")
    print(f"report       {path}  (sample: {out / 'sample_manifest.json'})")
    print()
    signals = report.signals or []
    print(f"{corpus.document_count} documents in {corpus.source_count} sources, "
          f"{report.sampling.sampled if report.sampling else '-'} scored with {len(signals)} "
          f"signals of pack {report.langpack.language_tag if report.langpack else '-'}")
    print(f"corpus fingerprint {corpus.fingerprint}")
    if sim is not None and sim.retention is not None and sim.sum_of_marginals is not None:
        print(f"all one-sided gates at their 99% points would keep {sim.retention:.1%} "
              f"({sim.gates} gates; sum of single-gate drops {sim.sum_of_marginals:.1%})")
    for block in signals:
        if block.signal in ("word_count", "stopword_ratio", "boilerplate_hits"):
            micro = block.views.get("micro", {}) if block.views else {}
            print(f"  {block.signal:<18} p10 {micro.get('p10')}  p50 {micro.get('p50')}  "
                  f"p90 {micro.get('p90')}")
    return True



def _filter(out: Path, policy_dir: Path) -> bool:
    """The filter's headline numbers; False when its manifest is missing or unbalanced."""
    path = out / "run_manifest.json"
    if not path.is_file():
        print(f"\n(no filter run at {path})")
        return False
    manifest = models.read(RunManifest, path)
    ledger = models.read(CurationLedger, out / "curation_ledger.json")
    policy = manifest.policy or models.run_manifest.ManifestPolicy()
    output = manifest.output or models.run_manifest.ManifestOutput()
    print("\n== demo: curate approve + curate filter ==")
    print(f"policy       {policy_dir / 'approved_policy.yaml'}  (status "
          f"{policy.status}, {policy.thresholds_applied} thresholds)")
    print(f"shards       {out}/part_*.jsonl  ({output.file_count} shards, "
          f"{output.row_count} documents, sha256 of each in the manifest)")
    print(f"rejected     {manifest.rejected_dir}/  (every removed document: its gates, "
          "scores)")
    print(f"manifest     {path}")
    print(f"ledger       {out / 'curation_ledger.json'}")
    print()
    removed = ", ".join(f"{k} {v}" for k, v in ledger.filtered_by_reason.items())
    print(f"{ledger.n_input} in = {ledger.n_success} kept + {ledger.n_filtered} "
          f"filtered + {ledger.n_failed} failed + {ledger.n_quarantined} quarantined; "
          f"balanced: {ledger.balanced}")
    print(f"removed by gate: {removed}")
    return ledger.balanced and manifest.is_complete


def _audit(out: Path) -> bool:
    """The audit's verdict and what it could claim; True when it passed or did not run."""
    path = out / "audit_report.json"
    if not path.is_file():
        print(f"\n(no audit at {path})")
        return True
    report = models.read(AuditReport, path)
    print("\n== demo: curate audit ==")
    print(f"report       {path}  (for people: {out / 'audit_summary.md'})")
    print()
    t, acc = report.target or models.audit_report.Target(), report.accounting
    print(f"verdict: {'PASSED' if report.passed else 'FAILED'} (mode {report.mode}); "
          f"{t.file_count} shards, {t.row_count} rows, corpus digest "
          f"{t.digest or '-'}")
    if acc is not None and acc.available:
        print(f"records: {acc.input_documents} in = {acc.output_records} out + "
              f"{acc.rejected_records} rejected, matched by id: {acc.by_id}")
    made = [str(s.claim) for s in report.strengths or [] if s.made]
    print(f"claims made: {'; '.join(made)}")
    for f in report.findings or []:
        print(f"  finding {f.name}: {f.message}")
    return bool(report.passed)


def _subset(out: Path) -> None:
    """The subset's tiers: documents, tokens, shortfall, per-stratum shares as bars."""
    path = out / "subset_report.json"
    if not path.is_file():
        print(f"\n(no subset at {path})")
        return
    report = models.read(SubsetReport, path)
    unit = str(report.unit)
    corpus = report.corpus or models.subset_report.SubsetCorpus()
    tok = report.tokenizer
    cache = report.token_cache.dump() if report.token_cache else None
    print("\n== demo: curate subset ==")
    print(f"report       {path}  (plan: {out / 'plan.json'})")
    print(f"corpus       {corpus.documents} documents, {corpus.total_tokens or 0:,} {unit} "
          f"({tok.name if tok and tok.name else 'whitespace words'}); token cache {cache}")
    print(f"{'tier':>28} {'documents':>10} {unit:>10} {'shortfall':>10}")
    tiers = report.tiers or []
    for t in tiers:
        print(f"{Path(str(t.output)).name:>28} {t.document_count:>10} "
              f"{t.achieved_tokens or 0:>10,} {t.token_shortfall or 0:>10,}")
    strata = (report.stratification.strata if report.stratification else None) or {}
    total = sum(s.tokens or 0 for s in strata.values()) or 1
    largest = tiers[-1] if tiers else None
    print(f"per-stratum share of {unit}: corpus | largest tier")
    for key, s in sorted(strata.items(), key=lambda kv: -(kv[1].tokens or 0))[:12]:
        share = (s.tokens or 0) / total
        got = (largest.per_stratum_tokens.get(key, 0)
               if largest is not None and largest.per_stratum_tokens else 0)
        tier_share = got / ((largest.achieved_tokens if largest else None) or 1)
        print(f"  {key[:34]:34} {'#' * round(share * 40):40} {share:6.1%} | "
              f"{tier_share:6.1%}")
    print(f"nesting verified: {report.nesting_verified}; warnings: "
          f"{sorted({str(w.id) for w in report.warnings or []}) or 'none'}")
    copy = report.parquet
    if copy is not None:
        print(f"parquet      {len(copy.shards or [])} files, {copy.rows} rows under "
              f"{out / str(copy.dir)}  (pl.read_parquet / datasets.load_dataset(\"parquet\"))")


def _dedup(out: Path, manifest: dict[str, Any]) -> None:
    """What dedup removed, against the near-duplicate pairs the generator planted."""
    path = out / "dedup_report.json"
    if not path.is_file():
        print(f"\n(no dedup at {path})")
        return
    report = models.read(DedupReport, path)
    print("\n== demo: curate dedup ==")
    print(f"report       {path}  (every removal, with its survivor: {out / 'removed'}/)")
    print(f"{report.documents_in} in = {report.documents_out} kept + {report.removed} removed; "
          f"{report.components} components, {report.verified_pairs} of "
          f"{report.candidate_pairs} candidate pairs verified")
    removed = {json.loads(line).get("url") for p in sorted((out / "removed").glob("*.jsonl"))
               for line in p.read_text(encoding="utf-8").splitlines()}
    kept = {json.loads(line).get("url") for p in sorted(out.glob("part_*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()}
    threshold = float(report.params["threshold"] if report.params else 0.8)
    found: Counter[bool] = Counter()
    present: Counter[bool] = Counter()
    for pair in (manifest.get("near_duplicates") or {}).get("pairs", []):
        urls = {pair["copy_url"], pair["original_url"]}
        if urls <= removed | kept:  # both reached dedup (the filter may remove either)
            near = pair["jaccard_words5"] >= threshold
            present[near] += 1
            found[near] += bool(urls & removed)
    print(f"planted pairs that reached dedup: at or above the threshold {found[True]}/"
          f"{present[True]} removed (expected all), below it {found[False]}/"
          f"{present[False]} (expected none)")


def _decontamination(out: Path, holdout: Path) -> None:
    """What the decontamination removed, against what the holdout generator planted."""
    path = out / "decontamination_report.json"
    if not path.is_file():
        print(f"\n(no decontamination at {path})")
        return
    report = models.read(DecontaminationReport, path)
    planted = json.loads((holdout / "planted.json").read_text(encoding="utf-8"))
    r = report.result or models.decontamination_report.DecontaminationResult()
    print("\n== demo: curate decontaminate ==")
    print(f"report       {path}  (every removal, with its proof: {out / 'removed'}/)")
    print(f"{r.train_documents_in} in = {r.train_documents_out} kept + "
          f"{r.train_documents_removed} removed; by rule {r.removed_by_rule}")
    urls: dict[str, list[str]] = {}
    for p in sorted((out / "removed").glob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for m in row["matches"]:
                urls.setdefault(m["holdout_id"], []).append(
                    f"{row['document'].get('url')} ({'+'.join(m['rules'])})")
    train_files = (report.paths.train_files if report.paths else None) or []
    seen = {json.loads(line).get("url") for f in train_files
            for line in Path(f).read_text(encoding="utf-8").splitlines() if line.strip()}
    print(f"{'holdout':>14} {'planted as':>10} {'expected':>9}  removed")
    found = upstream = 0
    for hid, p in sorted(planted.items()):
        got = urls.get(hid, [])
        gone = p["source_url"] is not None and p["source_url"] not in seen
        expected = "kept" if gone and p["expected"] == "removed" else p["expected"]
        ok = bool(got) == (expected == "removed") and (
            not got or any(p["source_url"] in g for g in got))
        found += ok
        upstream += gone
        note = "   (its source was removed upstream by the filter)" if gone else ""
        print(f"{hid:>14} {p['kind']:>10} {p['expected']:>9}  "
              f"{', '.join(got) or '-'}{note}{'' if ok else '   <- differs'}")
    print(f"{found} of {len(planted)} holdout documents as planted ({upstream} planted from "
          "documents the filter removed, so there was nothing left to find)")


def _evaluation(path: Path) -> None:
    """What ``curate evaluate`` measured on the generator's labelled sample (informative)."""
    if not path.is_file():
        print(f"\n(no evaluation at {path})")
        return
    report = models.read(EvaluationReport, path)
    t = report.totals
    print("\n== demo: curate evaluate (the labelled sample) ==")
    print(f"report       {path}  (gates: {', '.join(report.gates)})")
    print(f"false rejection {t.keep_dropped}/{t.keep} keep documents dropped; "
          f"noise removal {t.drop_dropped}/{t.drop} drop documents dropped")
    for row in report.phenomena:
        parts = [f"{dropped}/{n} {label} dropped" for label, n, dropped in
                 (("keep", row.keep, row.keep_dropped), ("drop", row.drop, row.drop_dropped))
                 if n]
        if parts:
            print(f"  {row.phenomenon:<13} {', '.join(parts)}")
    # the generator's kind of each labelled document, to say what got through
    kinds = {}
    for file in report.labelled_files:
        sample = Path(str(file.path))
        lines = sample.read_text(encoding="utf-8").splitlines() if sample.is_file() else []
        for line in filter(str.strip, lines):
            doc = json.loads(line)
            kinds[doc["id"]] = doc.get("kind", doc["phenomenon"])
    for name, rows in (("wrongly dropped", report.false_rejections or []),
                       ("noise kept", report.missed_noise or [])):
        if rows:
            counts = Counter(kinds.get(r.id, "?") for r in rows)
            print(f"{name}: {', '.join(f'{k} {n}' for k, n in counts.most_common())}")


if __name__ == "__main__":
    sys.exit(main())
