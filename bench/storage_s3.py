"""The chain of steps, local disk versus a local S3 server (moto), on the same corpus.

    .venv/bin/python bench/storage_s3.py [--mb 40] [--files 8] [--workers 2]

Starts a moto server (``curator_testing.moto``) on a free loopback port, writes
``--files`` JSONL files of about ``--mb`` MB in total (one partition each), and times
(wall seconds, the best of ``--repeat`` runs of each, local and S3 interleaved, on the
process pool with ``--workers``):

- ingest local -> local, and s3 -> s3 (input read with one GET per object, output
  written to the local copy beside the checkpoint, then published with one put each);
- the filter on the ingested shards, local -> local and s3 -> s3;
- with ``--all-steps``, then the profile (of the ingested shards), decontamination (the
  filtered shards against a holdout of 200 of their documents, rewritten), the subset
  (of the decontaminated shards) and the audit (of the filter's output, mode digest),
  each local -> local and s3 -> s3.

Prints one JSON line. The S3 figures measure this code's overhead over the local path
(the GETs, the publication) on loopback; a real bucket adds its network.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from curator_testing.moto import MotoServer, environment, start_moto


def make_corpus(folder: Path, files: int, mb: float) -> None:
    """Clean English documents of the demo generator (unique urls), ``files`` files."""
    from curator_demo import iter_clean_lines

    lines = iter_clean_lines(16)
    folder.mkdir(parents=True)
    per_file = int(mb * 1_000_000 / files)
    n = 0
    for f in range(files):
        out, size = [], 0
        while size < per_file:
            line = json.dumps({**json.loads(next(lines)), "url": f"https://site/{n}"})
            out.append(line)
            size += len(line) + 1
            n += 1
        (folder / f"part-{f:03d}.jsonl").write_text("\n".join(out) + "\n")


def _best(times: dict[str, float], key: str, seconds: float) -> None:
    times[key] = round(min(times.get(key, seconds), seconds), 2)


def _holdout(filtered: Path, holdout: Path, client: object) -> None:
    """200 documents of the filtered shards, every other one rewritten (a sentence cut),
    with their own ids: what the decontamination is to find."""
    lines = [json.loads(line) for p in sorted(filtered.glob("part_*.jsonl"))
             for line in p.read_text().splitlines()[:25]][:200]
    holdout.mkdir()
    out = []
    for i, doc in enumerate(lines):
        text = doc["text"] if i % 2 else doc["text"].split(". ", 1)[-1]
        out.append(json.dumps({"id": f"h-{i}", "url": f"https://holdout/{i}", "text": text}))
    (holdout / "holdout.jsonl").write_text("\n".join(out) + "\n")
    client.put_object(Bucket="bench", Key="holdout/holdout.jsonl",  # type: ignore[attr-defined]
                      Body=(holdout / "holdout.jsonl").read_bytes())


def _more_steps(out: str, holdout: str, execution: dict, block: str, where: str,
                times: dict[str, float]) -> None:
    """profile, decontamination, subset, audit: one run each, timed."""
    from curator.errors import CuratorError
    from curator.steps.audit import AuditConfig, run_audit
    from curator.steps.decontamination import DecontaminationConfig, run_decontamination
    from curator.steps.profile import ProfileConfig, run_profile
    from curator.steps.subset import SubsetConfig, run_subset

    langpacks = str(Path(__file__).resolve().parents[1] / "curator" / "langpacks")
    runs = [
        ("profile", lambda: run_profile(ProfileConfig(
            input_glob=f"{out}/ingested/part_*.jsonl", output_dir=f"{out}/profile",
            language="en", langpack_dir=langpacks, max_total_docs=2000, source_field=None,
            partition_size=block, execution=execution))),
        ("decontamination", lambda: run_decontamination(DecontaminationConfig(
            train_glob=f"{out}/filtered/part_*.jsonl", holdout_glob=holdout, id_field="id",
            output_dir=f"{out}/decontaminated", partition_size=block,
            execution=execution))),
        ("subset", lambda: run_subset(SubsetConfig(
            input_glob=f"{out}/decontaminated/part_*.jsonl", output_dir=f"{out}/subset",
            id_field="id", token_budgets=[100_000, 1_000_000], partition_size=block,
            execution=execution))),
        ("audit", lambda: run_audit(AuditConfig(
            target_glob=f"{out}/filtered", declared_manifest=f"{out}/filtered/run_manifest.json",
            ledger_glob=f"{out}/filtered/curation_ledger.json", digest_root=f"{out}/filtered",
            output_dir=f"{out}/audit", mode="digest", execution=execution))),
    ]
    for name, run in runs:
        t0 = time.perf_counter()
        try:
            run()
        except CuratorError as exc:  # findings: the report is complete, the run timed
            if exc.error_id != "audit_findings":
                raise
        _best(times, f"{name}_{where}_s", time.perf_counter() - t0)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=40)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--all-steps", action="store_true",
                        help="profile, decontaminate, subset and audit after the filter")
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the figures there (JSON; run_all.py passes one)")
    args = parser.parse_args()
    os.environ["CURATE_PREFECT"] = "never"
    server = start_moto()
    try:
        with environment(server):
            return _run(args, server)
    finally:
        server.stop()


def _run(args: argparse.Namespace, server: MotoServer) -> int:
    """Both chains, local and on ``server``; the figures printed (and written)."""
    from curator.steps.filter import FilterConfig, run_filter
    from curator.steps.ingest import IngestConfig, run_ingest

    work = Path(tempfile.mkdtemp(prefix="bench-s3-"))
    make_corpus(work / "raw", args.files, args.mb)
    client = server.client()
    client.create_bucket(Bucket="bench")
    for p in sorted((work / "raw").iterdir()):
        client.put_object(Bucket="bench", Key=f"raw/{p.name}", Body=p.read_bytes())
    execution = {"executor": "local", "workers": args.workers}
    # one partition per input file (an object is never split), shards of ~1/8 MB...
    block = f"{max(1, int(args.mb / args.files * 1.2))}MB"
    keys = {"partition_size": block, "shard_size": 2000, "on_duplicate": "drop"}
    fkeys = {"quality_filters": {"min_words": 50, "max_words": 100000},
             "partition_size": block, "source_field": None}
    times: dict[str, float] = {}
    holdout = work / "holdout"
    for rep in range(args.repeat):  # fresh outputs each time (a fresh run each)
        for where, src, out in (("local", str(work / "raw"), str(work / f"out{rep}")),
                                ("s3", "s3://bench/raw", f"s3://bench/out{rep}")):
            ckpt = str(work / f"ckpt-{where}")
            t0 = time.perf_counter()
            run_ingest(IngestConfig(**keys, input=src, output_dir=f"{out}/ingested",
                                    execution={**execution, "checkpoint_path": ckpt}))
            _best(times, f"ingest_{where}_s", time.perf_counter() - t0)
            t0 = time.perf_counter()
            run_filter(FilterConfig(**fkeys, input_glob=f"{out}/ingested/part_*.jsonl",
                                    output_dir=f"{out}/filtered",
                                    execution={**execution, "checkpoint_path": ckpt}))
            _best(times, f"filter_{where}_s", time.perf_counter() - t0)
            if args.all_steps:
                if not holdout.is_dir():
                    _holdout(work / "out0" / "filtered", holdout, client)
                src_holdout = str(holdout) if where == "local" else "s3://bench/holdout"
                _more_steps(out, src_holdout, {**execution, "checkpoint_path": ckpt},
                            block, where, times)
    size = sum(p.stat().st_size for p in (work / "raw").iterdir())
    figures = {"input_mb": round(size / 1e6, 1), "files": args.files,
               "workers": args.workers, "repeat": args.repeat, **times,
               "load_average_1min": round(os.getloadavg()[0], 1)}
    print(json.dumps(figures))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"results": figures}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
