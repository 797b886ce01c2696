"""The dedup phases' stages, each one engine unit (an input partition or a bucket).

Folders of the work area (``<work>``), each written by one phase and read by the next:

- ``bands`` (exchange, keyed by band key): ``signatures`` -> ``candidates``;
- ``cand/p<part>``: candidate pairs ``(a, b)``, ``a`` the smaller label, by ``b``'s
  partition; ``candidates`` -> ``send``;
- ``verify/p<part>``: each pair with ``b``'s id and payload, by ``a``'s partition;
  ``send`` -> ``verify``;
- ``cc/<k>`` (exchanges, keyed by label): the edges, round by round (:mod:`.components`);
- ``nbr/p<part>``: each verified edge seen from each end (node, other, other's id,
  similarity), by the node's partition; ``verify`` -> ``write``;
- ``assign/p<part>``: ``(removed, survivor)`` by the survivor's partition;
  ``assign`` -> ``survivors``;
- ``surv/p<part>``: each removed document's survivor (id, payload), by the removed
  document's partition; ``survivors`` -> ``write``.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from curator.corpus.formats import shard_name
from curator.dedup.docs import PAYLOAD, Rules, lines, payloads, read_docs, similarity
from curator.dedup.labels import hash_hex, nodes_of, parts_of, read_part, write_by_part
from curator.dedup.minhash import band_keys, signatures
from curator.exchange import BucketTask, Exchange
from curator.io import shared
from curator.io.writers import write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

BAND_SCHEMA: dict[str, Any] = {"band": pl.UInt64, "label": pl.Binary}
PAIR_SCHEMA: dict[str, Any] = {"a": pl.Binary, "b": pl.Binary}
VERIFY_SCHEMA: dict[str, Any] = {"a": pl.Binary, "b": pl.Binary, "b_id": pl.String,
                                  "b_pay": PAYLOAD}
NBR_SCHEMA: dict[str, Any] = {"node": pl.Binary, "other": pl.Binary, "other_id": pl.String,
                              "sim": pl.Float64}
ASSIGN_SCHEMA: dict[str, Any] = {"u": pl.Binary, "s": pl.Binary}
SURV_SCHEMA: dict[str, Any] = {"u": pl.Binary, "s": pl.Binary, "s_id": pl.String,
                               "s_pay": PAYLOAD}
EDGE_SCHEMA: dict[str, Any] = {"u": pl.Binary, "v": pl.Binary}
#: the fields a removed record gets
FIELDS = ("dedup_component", "dedup_survivor", "dedup_similarity", "dedup_neighbor",
          "dedup_neighbor_similarity")


def written_file(work: str | Path, sid: str) -> Path:
    """Where a partition's writer leaves its counts for the report."""
    return Path(work) / "written" / f"{sid}.json"


@dataclass
class _PartitionStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """A stage over input partitions: the rules, files' order and partitions' numbers."""

    rules: Rules
    file_index: dict[str, int]
    index: dict[str, int]
    work_dir: str

    def part(self, task: FileGroupTask) -> tuple[str, int]:
        sid = task.source_id or "part"
        return sid, self.index[sid]

    def folder(self, name: str) -> Path:
        return Path(self.work_dir) / name


@dataclass
class SignatureStage(_PartitionStage):
    """Map: each document's band keys into the ``bands`` exchange."""

    bands: Exchange | None = None
    name: str = "dedup_signatures"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid, part = self.part(task)
        docs = read_docs(task, self.rules, self.file_index, part)
        frame = docs.frame
        p = self.rules.params
        sig, present = signatures(frame["text"], self.rules.shingling, p)
        keys = band_keys(sig, p.bands, p.rows)[present]
        labels = frame["label"].filter(pl.Series(present))
        rows = pl.DataFrame({"band": pl.Series(keys.ravel(), dtype=pl.UInt64),
                             "label": labels.gather(np.repeat(np.arange(len(labels)),
                                                              p.bands))})
        assert self.bands is not None
        self.bands.write(sid, rows, "band")
        seen = frame.height + sum(docs.skipped.values())
        self.stat_update("documents", seen)
        self.stat_update("compared", int(present.sum()))
        for reason, n in docs.skipped.items():
            self.stat_update(f"skipped.{reason}", n)
        return FileGroupTask(data=[sid], _metadata={"rows": seen})


@dataclass
class CandidateStage(ProcessingStage[BucketTask, FileGroupTask]):
    """Reduce a band bucket: in each band group, every member linked to the group's
    smallest label (edges linear in the group's size)."""

    bands: Exchange
    work_dir: str
    name: str = "dedup_candidates"

    def process(self, task: BucketTask) -> FileGroupTask:
        bucket = task.data
        rows = self.bands.read(bucket, BAND_SCHEMA).unique()
        groups = rows.group_by("band").agg(a=pl.col("label").min(), n=pl.len()) \
            .filter(pl.col("n") > 1)
        pairs = rows.join(groups, on="band").filter(pl.col("label") != pl.col("a")) \
            .select("a", b=pl.col("label")).unique().sort("a", "b")
        write_by_part(Path(self.work_dir) / "cand", pairs, parts_of(pairs["b"]),
                      f"b{bucket:05d}")
        self.stat_update("band_rows", rows.height)
        self.stat_update("pairs", pairs.height)
        return FileGroupTask(data=[str(bucket)], _metadata={"rows": rows.height})


@dataclass
class SendStage(_PartitionStage):
    """For each candidate pair whose ``b`` is here: ``b``'s id and payload, to ``a``'s
    partition."""

    name: str = "dedup_send"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid, part = self.part(task)
        pairs = read_part(self.folder("cand"), part, PAIR_SCHEMA).unique().sort("a", "b")
        if not pairs.is_empty():
            want = pl.Series(nodes_of(pairs["b"]))
            docs = read_docs(task, self.rules, self.file_index, part,
                             want=set(want.to_list())).frame
            sent = docs.select(b="label", b_id="id",
                               b_pay=payloads(docs["text"], self.rules))
            out = pairs.join(sent, on="b").sort("a", "b")
            write_by_part(self.folder("verify"), out, parts_of(out["a"]), f"p{part:07d}")
        self.stat_update("pairs", pairs.height)
        return FileGroupTask(data=[sid], _metadata={"rows": pairs.height})


@dataclass
class VerifyStage(_PartitionStage):
    """Each pair whose ``a`` is here, compared; the pairs at or above the threshold are
    the graph's edges (both directions, into the first components exchange) and each
    end's neighbour record."""

    edges: Exchange | None = None
    name: str = "dedup_verify"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid, part = self.part(task)
        got = read_part(self.folder("verify"), part, VERIFY_SCHEMA).sort("a", "b")
        kept = 0
        if not got.is_empty():
            want = set(nodes_of(got["a"]).tolist())
            docs = read_docs(task, self.rules, self.file_index, part, want=want).frame
            mine = docs.select(a="label", a_id="id", a_pay=payloads(docs["text"], self.rules))
            both = got.join(mine, on="a").sort("a", "b")
            sims = similarity(both["a_pay"], both["b_pay"], self.rules)
            edges = both.select("a", "a_id", "b", "b_id").with_columns(
                sim=pl.Series(sims, dtype=pl.Float64)).filter(
                pl.col("sim") >= self.rules.threshold)
            kept = edges.height
            assert self.edges is not None
            self.edges.write(sid, pl.concat([
                edges.select(u="a", v="b"), edges.select(u="b", v="a")]), "u")
            seen = pl.concat([
                edges.select(node="a", other="b", other_id="b_id", sim="sim"),
                edges.select(node="b", other="a", other_id="a_id", sim="sim")])
            write_by_part(self.folder("nbr"), seen, parts_of(seen["node"]), f"p{part:07d}")
        self.stat_update("pairs", got.height)
        self.stat_update("verified", kept)
        return FileGroupTask(data=[sid], _metadata={"rows": got.height})


@dataclass
class SurvivorStage(_PartitionStage):
    """For each removed document whose survivor is here: the survivor's id and payload,
    to the removed document's partition."""

    name: str = "dedup_survivors"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid, part = self.part(task)
        got = read_part(self.folder("assign"), part, ASSIGN_SCHEMA).unique().sort("u")
        if not got.is_empty():
            want = set(nodes_of(got["s"]).tolist())
            docs = read_docs(task, self.rules, self.file_index, part, want=want).frame
            sent = docs.select(s="label", s_id="id", s_pay=payloads(docs["text"], self.rules))
            out = got.join(sent, on="s").sort("u")
            write_by_part(self.folder("surv"), out, parts_of(out["u"]), f"p{part:07d}")
        self.stat_update("removed", got.height)
        return FileGroupTask(data=[sid], _metadata={"rows": got.height})


@dataclass
class WriteStage(_PartitionStage):
    """The partition's shards: kept lines as they are, removed records with their
    survivor, similarity and neighbour; its counts for the report."""

    output_dir: str = ""
    name: str = "dedup_write"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid, part = self.part(task)
        surv = read_part(self.folder("surv"), part, SURV_SCHEMA).unique("u").sort("u")
        removed: dict[int, dict[str, Any]] = {}
        if not surv.is_empty():
            want = set(nodes_of(surv["u"]).tolist())
            docs = read_docs(task, self.rules, self.file_index, part, want=want).frame
            mine = docs.select(u="label", u_pay=payloads(docs["text"], self.rules))
            both = surv.join(mine, on="u").sort("u")
            sims = similarity(both["u_pay"], both["s_pay"], self.rules)
            nbr = read_part(self.folder("nbr"), part, NBR_SCHEMA).unique() \
                .sort(["node", "sim", "other"], descending=[False, True, False]) \
                .unique("node", keep="first", maintain_order=True)
            best = both.select("u").join(nbr.select(u="node", n_id="other_id", n_sim="sim"),
                                         on="u", how="left", maintain_order="left")
            for node, s, s_id, sim, n_id, n_sim in zip(
                    nodes_of(both["u"]).tolist(), both["s"].to_list(), both["s_id"].to_list(),
                    sims.tolist(), best["n_id"].to_list(), best["n_sim"].to_list(),
                    strict=True):
                removed[node] = {"dedup_component": hash_hex(s), "dedup_survivor": s_id,
                                 "dedup_similarity": sim, "dedup_neighbor": n_id,
                                 "dedup_neighbor_similarity": n_sim}
        counts = self._write(task, part, removed)
        write_atomic(written_file(self.work_dir, sid), json.dumps(counts, sort_keys=True))
        self.stat_update("documents", counts["documents"])
        self.stat_update("removed", counts["removed"])
        return FileGroupTask(data=[sid], _metadata={"rows": counts["documents"]})

    def _write(self, task: FileGroupTask, part: int, removed: dict[int, dict[str, Any]]
               ) -> dict[str, Any]:
        kept, gone = io.BytesIO(), io.BytesIO()
        n_in = n_kept = n_gone = 0
        by_source: dict[str, int] = {}
        sf = self.rules.source_field
        for node, line in lines(task, self.file_index):
            n_in += 1
            extra = removed.get(node)
            if extra is None:
                kept.write(line)
                kept.write(b"\n")
                n_kept += 1
                continue
            record = dict(orjson.loads(line))
            src = "__missing__" if sf is None or record.get(sf) is None else str(record[sf])
            by_source[src] = by_source.get(src, 0) + 1
            record.update(extra)
            gone.write(orjson.dumps(record))
            gone.write(b"\n")
            n_gone += 1
        name = shard_name(part)
        out = Path(self.output_dir) / name
        rem = Path(self.output_dir) / "removed" / name
        shards = {}
        for path, buf, rows, key in ((out, kept, n_kept, "shard"),
                                     (rem, gone, n_gone, "removed_shard")):
            data = buf.getvalue()
            if rows:
                write_atomic(path, data)
                shards[key] = {"name": name, "rows": rows,
                               "sha256": "sha256:" + hashlib.sha256(data).hexdigest()}
            else:
                shared.remove(path)
        return {"documents": n_in, "kept": n_kept, "removed": n_gone,
                "removed_by_source": dict(sorted(by_source.items())), **shards}
