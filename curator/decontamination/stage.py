"""The scan: one training partition against the holdout index.

For every document of the partition: its identity key (matched against the holdout's
keys), its candidate holdout documents (from the index), the exact Jaccard and
containment of every candidate pair on string shingles, and the verdict. Kept
documents go to ``part_<i>.jsonl`` (their input bytes, unchanged); removed ones to
``removed/part_<i>.jsonl`` with the holdout id matched, the similarity, the containment
and the rule. What the report needs is written to ``<work>/scan/<source id>.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from curator.corpus.formats import CountingSink, shard_name, summary_path
from curator.corpus.reading import iter_records
from curator.corpus.records import MISSING_ID, RecordSpec, Rejection
from curator.decontamination.holdout import HoldoutDocuments, key_hashes
from curator.decontamination.ids import id_frame
from curator.decontamination.index import HoldoutIndex, MinHashParams, load_index, signatures
from curator.decontamination.kernel import CandidateWindows, shared_counts
from curator.decontamination.text import (
    Normalization,
    Shingling,
    char_units,
    identity_key,
    normalize,
    normalize_many,
    shingle_hashes,
    shingle_set,
    window_hashes,
)
from curator.errors import CuratorError
from curator.exchange import Exchange
from curator.io import shared
from curator.io.writers import atomic_file, write_atomic
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

#: documents (or characters) per vectorised batch
BATCH_DOCS = 2048
BATCH_CHARS = 1_000_000
#: the rules, in the order a removal names them
IDENTITY, JACCARD, CONTAINMENT = "identity", "jaccard", "containment"


def scan_work_file(work_dir: str | Path, sid: str) -> Path:
    return Path(work_dir) / "scan" / f"{sid}.json"


@dataclass(frozen=True)
class Rules:
    """What removes a training document."""

    threshold: float = 0.8
    containment: bool = True
    containment_threshold: float = 0.8
    containment_min_shingles: int = 25
    candidates: str = "exact"
    skip_similarity: bool = False
    prefer_id_field: bool = False
    shared_id_space: bool = True
    minhash: MinHashParams = field(default_factory=MinHashParams)

    @property
    def min_fraction(self) -> float:
        """The smallest share of a holdout document's shingles a candidate must hold."""
        return min(self.threshold, self.containment_threshold) if self.containment \
            else self.threshold


def verify(a: set[str], b: set[str]) -> tuple[float, float] | None:
    """``(jaccard, containment of b in a)``, or ``None`` (unverifiable: a side has no
    shingle)."""
    if not a or not b:
        return None
    inter = len(a & b) if len(a) > len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter), inter / len(b)


@dataclass
class ScanStage(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Decontaminate one source partition (see the module docstring)."""

    records: RecordSpec
    shingling: Shingling
    rules: Rules
    index_dir: str
    index_meta: dict[str, Any]
    work_dir: str
    output_dir: str
    removed_dir: str
    index: dict[str, int]
    ids: Exchange | None = None  # where each document's id goes (curator.decontamination.ids)
    name: str = "scan"
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    # -- what every partition shares, loaded once per worker ------------------------
    def _index(self) -> HoldoutIndex:
        if "index" not in self._cache:
            index = load_index(Path(self.index_dir), self.index_meta)
            self._cache["index"] = index
            self._cache["docs"] = HoldoutDocuments(self.work_dir, index)
            self._cache["hosts"] = frozenset(index.meta.get("hosts", ()))
            self._cache["sets"] = {}
        return self._cache["index"]

    def _docs(self) -> HoldoutDocuments:
        self._index()
        return self._cache["docs"]

    def _holdout_set(self, h: int) -> set[str]:
        self._index()
        sets = self._cache["sets"]
        if h not in sets:
            sets[h] = shingle_set(self._docs().norm(h), self.shingling)
        return sets[h]

    # -- the partition -----------------------------------------------------------------
    def process(self, task: FileGroupTask) -> FileGroupTask:
        sid = task.source_id or "part"
        name = shard_name(self.index[sid])
        out = Path(self.output_dir) / name
        rem = Path(self.removed_dir) / name
        st = _Scan()
        read = 0
        with atomic_file(out) as kept_file, atomic_file(rem) as removed:
            kept = CountingSink(kept_file)
            batch: list[tuple[str, int, bytes, dict[str, Any], str]] = []
            chars = 0
            for path in task.data:
                for offset, line, record in iter_records(path, task.byte_range, self.records):
                    read += 1
                    if type(record) is Rejection:
                        if record.reason == MISSING_ID:
                            raise CuratorError(
                                "id_field_missing_or_duplicated",
                                f"{path} at byte {offset}: a training record has no "
                                f"{self.records.id_field!r} (id_field is required, unique "
                                "per split)")
                        st.counts[f"rejected.{record.reason}"] += 1
                        continue
                    doc_id = str(record[self.records.id_field])
                    batch.append((path, offset, line, record, doc_id))
                    chars += len(record[self.records.text_field])
                    if len(batch) >= BATCH_DOCS or chars >= BATCH_CHARS:
                        self._flush(batch, kept, removed, st)
                        batch, chars = [], 0
            self._flush(batch, kept, removed, st)
        st.counts["read"] += read
        if st.counts["kept"] == 0:
            shared.remove(out)
        else:  # its rows and digest, so the report never reads the shard back
            write_atomic(summary_path(self.work_dir, name),
                         json.dumps(kept.summary(name), sort_keys=True))
        if st.counts["removed"] == 0:
            shared.remove(rem)
        if self.ids is not None:
            self.ids.write(sid, id_frame(st.ids), "id")
        write_atomic(scan_work_file(self.work_dir, sid), json.dumps(st.to_json(), sort_keys=True))
        for key in ("read", "documents", "kept", "removed"):
            self.stat_update(key, st.counts[key])
        return FileGroupTask(data=[str(out)] if st.counts["kept"] else [],
                             _metadata={"rows": st.counts["kept"], "shard": name})

    def _flush(self, batch: list, kept: Any, removed: Any, st: _Scan) -> None:
        if not batch:
            return
        r = self.rules
        index, docs = self._index(), self._docs()
        text_field = self.records.text_field
        matches: dict[int, dict[int, set[str]]] = {}  # only the batch's matched documents
        fields: Counter[str] = Counter()
        keys: list[str] = []
        for _, _, _, record, doc_id in batch:
            field_name, key = identity_key(record, doc_id, record[text_field], "train",
                                           r.prefer_id_field, r.shared_id_space,
                                           self._cache["hosts"])
            fields[field_name] += 1
            keys.append(key)
        for i, found in sorted(index.identity(key_hashes(keys)).items()):
            for h in found:
                if docs.key(h) != keys[i]:  # another key of the same hash
                    continue
                matches.setdefault(i, {}).setdefault(h, set()).add(IDENTITY)
                st.group(keys[i], batch[i][4], docs.id(h))
        st.key_fields.update(fields)
        norm = _Norms([rec[self.records.text_field] for _, _, _, rec, _ in batch],
                      self.shingling.normalization)
        if not r.skip_similarity:
            pairs_found = self._candidates(norm)
            for i, h in pairs_found:
                matches.setdefault(i, {}).setdefault(h, set())
            st.counts["candidate_pairs"] += len(pairs_found)
        st.counts["documents"] += len(batch)
        st.ids.extend(doc_id for *_, doc_id in batch)
        lines: list[bytes] = []  # the kept lines, written at once
        for i, (path, offset, line, record, doc_id) in enumerate(batch):
            found = matches.get(i)
            if not found:
                lines.append(line)
                continue
            mine = set() if r.skip_similarity else shingle_set(norm[i], self.shingling)
            pairs = []
            for h in sorted(found):
                rules = set(found[h])
                measured = None if r.skip_similarity else verify(mine, self._holdout_set(h))
                if measured is None:
                    if not r.skip_similarity:
                        st.unverifiable(doc_id, docs.id(h))
                    jac = cont = None
                else:
                    jac, cont = measured
                    if jac >= r.threshold:
                        rules.add(JACCARD)
                    if r.containment and cont >= r.containment_threshold and \
                            len(self._holdout_set(h)) >= r.containment_min_shingles:
                        rules.add(CONTAINMENT)
                    if rules - {IDENTITY}:
                        st.counts["verified_duplicates"] += 1
                if rules:
                    pairs.append(_pair(doc_id, docs.id(h), jac, cont, rules,
                                       measured is not None))
            if not pairs:
                lines.append(line)
                continue
            pairs.sort(key=_strength, reverse=True)
            best = pairs[0]
            fired = {rule for p in pairs for rule in p["rules"]}
            by = "both" if IDENTITY in fired and fired - {IDENTITY} else \
                ("identity_only" if fired == {IDENTITY} else "similarity_only")
            st.counts[f"removed_by.{by}"] += 1
            for rule in fired:
                st.counts[f"rule.{rule}"] += 1
            st.counts["removed"] += 1
            st.removed.append(best)
            row = {"id": doc_id, "holdout_id": best["holdout_id"], "rule": best["rule"],
                   "rules": best["rules"], "similarity": best["similarity"],
                   "containment": best["containment"], "verifiable": best["verifiable"],
                   "matches": pairs[:10], "input": {"path": path, "offset": offset},
                   "document": record}
            removed.write(orjson.dumps(row) + b"\n")
        if lines:
            lines.append(b"")
            kept.write(b"\n".join(lines))
            st.counts["kept"] += len(lines) - 1

    def _kernel(self) -> CandidateWindows:
        if "kernel" not in self._cache:
            self._cache["kernel"] = CandidateWindows(self.shingling.normalization,
                                                     self.shingling.size, self._index().bitmap)
        return self._cache["kernel"]

    def _candidates(self, norm: _Norms) -> list[tuple[int, int]]:
        """``(batch index, holdout doc)`` of every candidate pair of the batch."""
        index = self._index()
        n_h = len(index.sizes)
        if self.rules.candidates == "exact" and self.shingling.kind == "char":
            # one compiled pass over the raw texts: normalised, every window hashed and
            # tested against the filter; the few survivors are then searched in the keys.
            # A candidate's own windows are hashed again, from its normalised text.
            if not len(index.keys):
                return []
            doc, hashes = self._kernel()(norm.texts)
            which, kidx = index.search(hashes)
            k = self.shingling.size
            return self._exact(index, doc[which], kidx,
                               lambda d: window_hashes(char_units([norm[d]])[0], k))
        norms = norm.all()
        hashes, doc = shingle_hashes(norms, self.shingling)
        if not len(hashes):
            return []
        if self.rules.candidates == "minhash":
            band_keys, present = signatures(hashes, doc, len(norms), self.rules.minhash)
            docs = np.repeat(np.arange(len(norms)), band_keys.shape[1])
            flat = band_keys.reshape(-1)
            keep = np.repeat(present, band_keys.shape[1])
            which, kidx = index.lookup(flat[keep])
            rep, hdoc = index.expand(kidx)
            pairs = np.unique(docs[keep][which][rep].astype(np.int64) * n_h + hdoc)
            return [(int(p // n_h), int(p % n_h)) for p in pairs]
        which, kidx = index.lookup(hashes)
        bounds = np.searchsorted(doc, np.arange(len(norms) + 1))
        return self._exact(index, doc[which], kidx,
                           lambda d: hashes[bounds[d]:bounds[d + 1]])

    def _exact(self, index: HoldoutIndex, doc: np.ndarray, kidx: np.ndarray,
               windows: Any) -> list[tuple[int, int]]:
        """The pairs that share a prefix shingle (``doc`` holds key ``kidx``) and, counted
        exactly on hashes, at least ``min_fraction`` of the holdout document's shingles."""
        if not len(doc):
            return []
        n_h, n_k = len(index.sizes), len(index.keys)
        dk = np.unique(doc.astype(np.int64) * n_k + kidx)  # a repeated shingle counts once
        rep, hdoc = index.expand(dk % n_k)
        pairs, shared = np.unique((dk // n_k)[rep] * n_h + hdoc, return_counts=True)
        pairs = pairs[shared >= np.asarray(index.required)[pairs % n_h]]
        if not len(pairs):
            return []
        pd, ph = pairs // n_h, pairs % n_h
        out: list[tuple[int, int]] = []
        groups = np.flatnonzero(np.r_[True, pd[1:] != pd[:-1]])
        for g0, g1 in zip(groups, np.r_[groups[1:], len(pairs)], strict=True):
            mine = np.sort(windows(int(pd[g0])))
            hs = ph[g0:g1]
            n = index.doc_offsets[hs + 1] - index.doc_offsets[hs]
            shared = shared_counts(mine, index.doc_hashes, index.doc_offsets, hs)
            ok = shared >= self.rules.min_fraction * n - 1e-9
            out += [(int(pd[g0]), int(h)) for h in hs[ok]]
        return out


class _Norms:
    """A batch's normalised texts, each made when first asked for (the compiled scan
    needs only the candidates')."""

    def __init__(self, texts: list[str], n: Normalization) -> None:
        self.texts = texts
        self.n = n
        self._made: dict[int, str] = {}

    def __getitem__(self, i: int) -> str:
        if i not in self._made:
            self._made[i] = normalize(self.texts[i], self.n)
        return self._made[i]

    def all(self) -> list[str]:
        made = normalize_many(self.texts, self.n)
        self._made = dict(enumerate(made))
        return made


def _pair(train_id: str, holdout_id: str, jac: float | None, cont: float | None,
          rules: set[str], verifiable: bool) -> dict[str, Any]:
    ordered = [x for x in (IDENTITY, JACCARD, CONTAINMENT) if x in rules]
    return {"train_id": train_id, "holdout_id": holdout_id, "rule": ordered[0],
            "rules": ordered, "similarity": None if jac is None else round(jac, 6),
            "containment": None if cont is None else round(cont, 6),
            "verifiable": verifiable, "reason": "+".join(ordered)}


def _strength(p: dict[str, Any]) -> tuple[float, float, str]:
    return (p["similarity"] or 0.0, p["containment"] or 0.0, p["holdout_id"])


class _Scan:
    """What one partition found."""

    GROUPS = 50
    UNVERIFIABLE = 50

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.key_fields: Counter[str] = Counter()
        self.ids: list[str] = []
        self.removed: list[dict[str, Any]] = []
        self.groups: dict[str, dict[str, Any]] = {}
        self.unverifiable_pairs: list[dict[str, str]] = []

    def group(self, key: str, train_id: str, holdout_id: str) -> None:
        g = self.groups.setdefault(key, {"key": key, "train_ids": [], "holdout_ids": [],
                                         "train_documents": 0})
        g["train_documents"] += 1
        if len(g["train_ids"]) < 5:
            g["train_ids"].append(train_id)
        if holdout_id not in g["holdout_ids"] and len(g["holdout_ids"]) < 5:
            g["holdout_ids"].append(holdout_id)

    def unverifiable(self, train_id: str, holdout_id: str) -> None:
        self.counts["unverifiable_pairs"] += 1
        if len(self.unverifiable_pairs) < self.UNVERIFIABLE:
            self.unverifiable_pairs.append({"train_id": train_id, "holdout_id": holdout_id})

    def to_json(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "key_fields": dict(self.key_fields),
                "removed": self.removed,
                "groups": [self.groups[k] for k in sorted(self.groups)],
                "unverifiable": self.unverifiable_pairs}
