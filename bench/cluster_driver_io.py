"""What the driver moves on a shared-nothing cluster, and the cluster's wall time
against one machine (issue 26).

    .venv/bin/python bench/cluster_driver_io.py --mb 200      # needs root
    .venv/bin/python bench/cluster_driver_io.py               # --mb 5: a smoke run

On the test cluster of ``tests/cluster/_harness.py`` (a moto S3 server; a Ray head with
``num_cpus=0``; two worker nodes in private mount namespaces), the demo corpus
(``curator_demo.generate_demo_corpus``, sized to ``--mb``) is uploaded once, then each
step runs S3 to S3 as its own ``python -m flows.entry <step> --config FILE``, in flow
order: ingest, profile, (the profile's candidate approved with the demo's thresholds,
in this process), filter (that policy), audit (mode ``all``), decontamination (a holdout
of ``--holdout`` documents planted from the filter's output, ``curator_demo.holdout``),
subset. ``checkpoint_path`` is on the bucket, as in docs/cluster.md's recipe.

The driver alone talks to the store through a byte-counting proxy
(``tests/cluster/_s3_proxy.py``: its ``AWS_ENDPOINT_URL`` and ``FSSPEC_S3_ENDPOINT_URL`` name
the proxy; the worker nodes reach moto directly): bytes up plus bytes down through it is
what the driver moved, per request key, aggregated by object prefix. The share is that
over the step's input bytes (the objects it reads as corpus; the audit: target,
reference and rejected records; decontamination: training shards and holdout). The
driver's ``/proc/<pid>/io`` (``rchar``/``wchar``: every read and write syscall,
imports, logs and Ray's RPCs included) is reported beside it.

Then the Ray nodes are stopped and the same sequence runs on one machine: the process
pool (``executor: local``, 2 workers), S3 to S3 on the same moto server (no proxy), for
the wall-time ratio. Prints one JSON line (``--out`` also writes it to a file).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (the repository on sys.path)
import yaml

from tests.cluster._harness import (
    SharedNothingCluster,
    finish,
    namespace_refusal,
    short_root,
)
from tests.cluster._s3_proxy import CountingProxy, Traffic, prefix_of

REPO = Path(__file__).resolve().parents[1]
LANGPACKS = str(REPO / "curator" / "langpacks")
#: (CLI verb, output prefix) in flow order
STEPS = [("ingest", "ingested"), ("profile", "profile"), ("filter", "filtered"),
         ("audit", "audit"), ("decontaminate", "decontaminated"), ("subset", "subset")]
BYTES_PER_DOC = 1300  # the demo corpus: about 1.39 kB a document (a margin below)
TARGET = 0.01  # the driver moves at most 1 % of the step's input bytes


def make_corpus(folder: Path, mb: float) -> tuple[int, list[Path]]:
    """The demo corpus of at least ``mb`` MB (its data files): ``(docs, files)``."""
    from curator_demo import generate_demo_corpus

    docs = max(200, math.ceil(mb * 1e6 / BYTES_PER_DOC))
    while True:
        generate_demo_corpus(folder, docs=docs, seed=7)
        files = sorted(p for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
        size = sum(p.stat().st_size for p in files)
        if size >= mb * 1e6:
            return docs, files
        docs = math.ceil(docs * mb * 1e6 / size * 1.02)
        for p in folder.iterdir():
            p.unlink()


def sizes(cluster: SharedNothingCluster, bucket: str, prefix: str,
          name_starts: str = "") -> int:
    """Bytes of the visible objects under ``prefix/`` whose name starts ``name_starts``."""
    total = 0
    for page in cluster.s3().get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix) + 1:]
            if any(p.startswith(".") for p in rel.split("/")):
                continue
            if rel.rsplit("/", 1)[-1].startswith(name_starts):
                total += int(obj["Size"])
    return total


class Sequence:
    """The six steps' configs under ``s3://<bucket>/<where>/``."""

    def __init__(self, bucket: str, where: str, execution: dict[str, Any], work: Path,
                 shard_size: int, partition: int, budgets: list[int]) -> None:
        self.bucket, self.where, self.work = bucket, where, work
        self.execution = execution
        self.shard_size, self.partition, self.budgets = shard_size, partition, budgets
        self.policy = work / f"{where}-approved_policy.yaml"

    def url(self, sub: str) -> str:
        return f"s3://{self.bucket}/{self.where}/{sub}"

    def keys(self, verb: str) -> dict[str, Any]:
        from tests.flow._support import SIGNALS

        u, b = self.url, self.bucket
        common = {"partition_size": self.partition}
        return {
            "ingest": {"input": f"s3://{b}/raw", "output_dir": u("ingested"),
                       "on_duplicate": "drop", "shard_size": self.shard_size,
                       "source_from": "source"},
            "profile": {**common, "input_glob": u("ingested/part_*.jsonl"),
                        "output_dir": u("profile"), "language": "en",
                        "langpack_dir": LANGPACKS, "source_field": "source",
                        "id_field": "id",  # the filter's: the fingerprints must agree
                        "max_total_docs": 2000, "signals": SIGNALS},
            "filter": {**common, "input_glob": u("ingested/part_*.jsonl"),
                       "output_dir": u("filtered"), "id_field": "id",
                       "source_field": "source", "metadata_fields": ["url"],
                       "quality_filters": {"min_words": 20, "max_words": 100000},
                       "heuristic_filters": {"approved_policy": str(self.policy),
                                             "langpack_dir": LANGPACKS}},
            "audit": {"target_glob": u("filtered"),
                      "declared_manifest": u("filtered/run_manifest.json"),
                      "ledger_glob": u("filtered/curation_ledger.json"),
                      "reference_glob": u("ingested/part_*.jsonl"),
                      "digest_root": u("filtered"), "id_field": "id",
                      "source_field": "source", "approved_policy": str(self.policy),
                      "mode": "all", "comparison_fields": ["id", "text"],
                      "output_dir": u("audit")},
            "decontaminate": {**common, "train_glob": u("filtered/part_*.jsonl"),
                              "holdout_glob": f"s3://{b}/holdout", "id_field": "id",
                              "source_field": "source", "output_dir": u("decontaminated")},
            "subset": {**common, "input_glob": u("decontaminated/part_*.jsonl"),
                       "output_dir": u("subset"), "id_field": "id", "source_field": "source",
                       "token_budgets": self.budgets},
        }[verb]

    def config(self, verb: str) -> Path:
        path = self.work / f"{self.where}-{verb}.yaml"
        execution = {**self.execution, "checkpoint_path": self.url(f"ckpt/{verb}")}
        path.write_text(yaml.safe_dump({**self.keys(verb), "execution": execution}))
        return path

    def input_bytes(self, cluster: SharedNothingCluster, verb: str) -> int:
        b, w = self.bucket, self.where
        return {
            "ingest": lambda: sizes(cluster, b, "raw"),
            "profile": lambda: sizes(cluster, b, f"{w}/ingested", "part_"),
            "filter": lambda: sizes(cluster, b, f"{w}/ingested", "part_"),
            "audit": lambda: (sizes(cluster, b, f"{w}/filtered")
                              + sizes(cluster, b, f"{w}/ingested", "part_")),
            "decontaminate": lambda: (sizes(cluster, b, f"{w}/filtered", "part_")
                                      + sizes(cluster, b, "holdout")),
            "subset": lambda: sizes(cluster, b, f"{w}/decontaminated", "part_"),
        }[verb]()

    def approve(self, cluster: SharedNothingCluster) -> None:
        """The profile's candidate approved with the demo's thresholds (this process)."""
        from curator.flow.approval import approve_policy
        from tests.flow._support import THRESHOLDS

        candidate = self.work / f"{self.where}-candidate_policies.yaml"
        candidate.write_bytes(cluster.s3().get_object(
            Bucket=self.bucket, Key=f"{self.where}/profile/candidate_policies.yaml")["Body"].read())
        approve_policy(candidate, self.policy, THRESHOLDS, approver="bench",
                       evidence="bench/cluster_driver_io.py")


def plant_holdout(cluster: SharedNothingCluster, bucket: str, prefix: str, count: int) -> int:
    """A holdout of about ``count`` documents planted from the filter's first shards
    (copies, edits, passages, same URLs, unseen: ``curator_demo.holdout.plant``),
    uploaded to ``holdout/``; its number of documents."""
    from curator_demo.holdout import HOLDOUT_NAME, plant

    s3, records = cluster.s3(), []
    listing = s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/part_")["Contents"]
    for obj in sorted(listing, key=lambda o: o["Key"])[:4]:
        body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read().decode()
        records += [json.loads(line) for line in body.splitlines()[:400]]
    docs, _ = plant(records, count, 11, id_field="id")
    s3.put_object(Bucket=bucket, Key=f"holdout/{HOLDOUT_NAME}",
                  Body="".join(json.dumps(r) + "\n" for r in docs).encode())
    return len(docs)


def by_prefix(traffic: dict[str, Traffic], top: int = 12) -> list[dict[str, Any]]:
    agg: dict[str, Traffic] = defaultdict(Traffic)
    for key, t in traffic.items():
        a = agg[prefix_of(key, depth=4)]
        a.requests += t.requests
        a.up += t.up
        a.down += t.down
    rows = sorted(agg.items(), key=lambda kv: -(kv[1].up + kv[1].down))[:top]
    return [{"prefix": k, "requests": t.requests, "up": t.up, "down": t.down} for k, t in rows]


def proc_io(path: Path) -> dict[str, int]:
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("rchar", "wchar", "read_bytes", "write_bytes"):
            out[name] = int(value)
    return out


def run_cluster_step(cluster: SharedNothingCluster, proxy: CountingProxy, seq: Sequence,
                     verb: str, timeout: float) -> dict[str, Any]:
    """One step on the cluster, its driver through the proxy; what it moved."""
    config, logs = seq.config(verb), seq.work / "logs"
    io_file = seq.work / f"{seq.where}-{verb}.io"
    script = f'"$@"; rc=$?; cat /proc/$$/io > {shlex.quote(str(io_file))}; exit $rc'
    argv = ["sh", "-c", script, "sh", sys.executable, "-m", "flows.entry", verb,
            "--config", str(config)]
    env = {"AWS_ENDPOINT_URL": proxy.endpoint, "FSSPEC_S3_ENDPOINT_URL": proxy.endpoint}
    proxy.take()
    t0 = time.perf_counter()
    proc = cluster.spawn(argv, logs, f"{seq.where}-{verb}", env=env)
    done = finish(proc, logs, f"{seq.where}-{verb}", timeout)
    wall = time.perf_counter() - t0
    traffic = proxy.take()
    up = sum(t.up for t in traffic.values())
    down = sum(t.down for t in traffic.values())
    return {"exit": done.returncode, "wall_s": round(wall, 2), "driver_up": up,
            "driver_down": down, "requests": sum(t.requests for t in traffic.values()),
            "proc_io": proc_io(io_file), "prefixes": by_prefix(traffic),
            "load_1min": round(os.getloadavg()[0], 1),
            **({"stderr_tail": done.stderr[-3000:]} if done.returncode not in (0, 1) else {})}


def run_local_step(cluster: SharedNothingCluster, seq: Sequence, verb: str,
                   timeout: float) -> dict[str, Any]:
    """One step on the process pool of this machine, straight to moto."""
    config, logs = seq.config(verb), seq.work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(logs / f"local-{verb}.err", "wb") as err:
        code = subprocess.run([sys.executable, "-m", "flows.entry", verb, "--config",
                               str(config)], stdout=subprocess.DEVNULL, stderr=err,
                              cwd=REPO, env=cluster.node_env(), timeout=timeout).returncode
    wall = time.perf_counter() - t0
    tail = (logs / f"local-{verb}.err").read_text(errors="replace")[-3000:]
    return {"exit": code, "wall_s": round(wall, 2), "load_1min": round(os.getloadavg()[0], 1),
            **({"stderr_tail": tail} if code not in (0, 1) else {})}


def run_sequence(cluster: SharedNothingCluster, seq: Sequence, step: Any, holdout: int,
                 corpus: int) -> dict[str, dict[str, Any]]:
    """The six steps in order; stops at the first that fails (exit other than 0, or
    other than 0/1 for the audit, whose findings exit 1 with a complete report)."""
    results: dict[str, dict[str, Any]] = {}
    for verb, _ in STEPS:
        if verb == "filter":
            seq.approve(cluster)
        if verb == "decontaminate" and holdout:
            plant_holdout(cluster, seq.bucket, f"{seq.where}/filtered", holdout)
        row = step(verb)
        row["input_bytes"] = seq.input_bytes(cluster, verb)
        if "driver_up" in row:
            moved = row["driver_up"] + row["driver_down"]
            row["share"] = round(moved / max(1, row["input_bytes"]), 5)
            row["share_of_corpus"] = round(moved / corpus, 5)
        results[verb] = row
        print(f"{seq.where} {verb}: " + json.dumps({k: v for k, v in row.items()
                                                    if k not in ("prefixes", "stderr_tail")}),
              file=sys.stderr, flush=True)
        if row["exit"] != 0 and not (verb == "audit" and row["exit"] == 1):
            print(row.get("stderr_tail", ""), file=sys.stderr)
            break
    return results


def stop_ray(cluster: SharedNothingCluster) -> None:
    """The worker nodes and the head killed (process groups); moto stays."""
    for node in [*cluster.workers, *([cluster.head] if cluster.head else [])]:
        node.kill()


def emit(figures: dict[str, Any], out: Path | None) -> None:
    """The JSON line, printed and, with ``out``, written there."""
    line = json.dumps(figures)
    print(line)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(line + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=5, help="corpus size (MB)")
    parser.add_argument("--holdout", type=int, default=300, help="holdout documents")
    parser.add_argument("--timeout", type=float, default=7200, help="per step (s)")
    parser.add_argument("--no-local", action="store_true", help="skip the one-machine run")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON there")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work folder (configs, drivers' logs) after a success")
    args = parser.parse_args()
    why = "needs root" if os.geteuid() != 0 else namespace_refusal()
    if why is not None:
        emit({"skipped": f"the shared-nothing cluster needs a private mount namespace "
                         f"(root): {why}"}, args.out)
        return 0

    work = Path(tempfile.mkdtemp(prefix="cluster-driver-io-"))
    cluster = SharedNothingCluster(short_root("cdio"))
    proxy: CountingProxy | None = None
    ok = False
    try:
        t0 = time.perf_counter()
        docs, files = make_corpus(work / "raw", args.mb)
        corpus = sum(p.stat().st_size for p in files)
        made = time.perf_counter() - t0
        cluster.start()
        bucket = cluster.new_bucket()
        s3 = cluster.s3()
        for p in files:
            s3.put_object(Bucket=bucket, Key=f"raw/{p.name}", Body=p.read_bytes())
        shutil.rmtree(work / "raw")  # uploaded once; the bucket is the input
        proxy = CountingProxy(("127.0.0.1", int(cluster.endpoint.rsplit(":", 1)[1]))).start()
        shard_size = max(50, docs // 24)  # about 24 shards
        partition = max(64_000, corpus // 12)  # about two shards a partition
        words = corpus // 7
        budgets = [words // 20, words // 5]
        figures: dict[str, Any] = {
            "mb": args.mb, "docs": docs, "corpus_bytes": corpus, "files": len(files),
            "shard_size": shard_size, "partition_size": partition, "token_budgets": budgets,
            "holdout_docs_asked": args.holdout, "corpus_made_s": round(made, 1),
            "cluster_up_s": round(cluster.started_in, 1),
            "load_average_start": [round(x, 1) for x in os.getloadavg()]}
        on_cluster = Sequence(bucket, "cluster", {"executor": "ray", "workers": 2}, work,
                              shard_size, partition, budgets)
        p = proxy
        figures["cluster"] = run_sequence(
            cluster, on_cluster,
            lambda verb: run_cluster_step(cluster, p, on_cluster, verb, args.timeout),
            args.holdout, corpus)
        if not args.no_local:
            stop_ray(cluster)
            local = Sequence(bucket, "local", {"executor": "local", "workers": 2}, work,
                             shard_size, partition, budgets)
            figures["local"] = run_sequence(
                cluster, local, lambda verb: run_local_step(cluster, local, verb, args.timeout),
                0, corpus)  # the holdout the cluster run planted
            figures["wall_ratio_cluster_over_local"] = {
                verb: round(figures["cluster"][verb]["wall_s"] / row["wall_s"], 2)
                for verb, row in figures["local"].items() if verb in figures["cluster"]}
            figures["wall_total_s"] = {
                where: round(sum(r["wall_s"] for r in figures[where].values()), 1)
                for where in ("cluster", "local")}
        over = {verb: row["prefixes"] for verb, row in figures["cluster"].items()
                if row.get("share", 0) > TARGET}
        figures["over_target"] = over
        figures["load_average_end"] = [round(x, 1) for x in os.getloadavg()]
        emit(figures, args.out)
        ok = not over and all(r["exit"] in (0, 1) for r in figures["cluster"].values())
    finally:
        if proxy is not None:
            proxy.close()
        cluster.close()  # every node's process group, moto; its logs removed
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work folder kept: {work}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
