"""curate subset on hand-built corpora with known answers (docs/subset.md)."""

from __future__ import annotations

import contextlib
import itertools
import json
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from curator.audit.subset import check_subset
from curator.corpus.sampling import stable_uint64
from curator.errors import CuratorError
from curator.steps.subset import SubsetConfig, run_subset
from curator.subset.planning import dhondt
from tests.subset._oracle import verify_nesting

CL100K = "sha256:223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
O200K = "sha256:446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def write(path: Path, docs: list[dict[str, Any]], extra: list[str] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs) + "".join(
        e + "\n" for e in extra))
    return path


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i % 7}" for i in range(n))


def corpus(folder: Path, n: int = 200, seed: int = 0, files: int = 2) -> Path:
    rng = random.Random(seed)
    for f in range(files):
        write(folder / f"part_{f}.jsonl", [
            {"id": f"f{f}-{i}", "text": words(rng.randint(3, 700)),
             "source": rng.choice(["news", "wiki", "forum"]), "q": rng.random()}
            for i in range(n // files)])
    return folder


def run(inp: Path, out: Path, **keys: Any) -> dict[str, Any]:
    cfg = {"input_glob": str(inp), "output_dir": str(out), "id_field": "id",
           "execution": {"executor": "inline"}, **keys}
    return run_subset(SubsetConfig(**cfg))


def tier_ids(report: dict[str, Any]) -> list[set[str]]:
    out = []
    for tier in report["tiers"]:
        ids: set[str] = set()
        for shard in sorted(Path(tier["output"]).glob("*.jsonl")):
            ids |= {json.loads(line)["id"] for line in shard.read_text().splitlines()}
        out.append(ids)
    return out


# -- quotas ----------------------------------------------------------------------------
def sequential_dhondt(weights: list[int], seats: int) -> list[int]:
    q = [0] * len(weights)
    for _ in range(seats):
        best = max(range(len(weights)), key=lambda i: (Fraction(weights[i], q[i] + 1), -i))
        q[best] += 1
    return q


def test_dhondt_known_answer_and_equal_to_the_sequential_method() -> None:
    assert dhondt([6, 3, 1], 5) == [4, 1, 0]
    rng = random.Random(3)
    for _ in range(200):
        w = [rng.randint(0, 50) for _ in range(rng.randint(1, 6))]
        s = rng.randint(0, sum(w))
        assert dhondt(w, s) == sequential_dhondt(w, s), (w, s)


def test_quotas_are_house_monotone() -> None:
    rng = random.Random(5)
    for _ in range(100):
        w = [rng.randint(1, 10_000) for _ in range(rng.randint(1, 12))]
        previous = [0] * len(w)
        for s in sorted(rng.sample(range(sum(w) + 1), 5)):
            q = dhondt(w, s)
            assert sum(q) == s
            assert all(a >= b for a, b in zip(q, previous, strict=True))
            previous = q


# -- nesting, shortfalls, no refill ------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiers_always_nest_and_are_verified(tmp_path: Path, seed: int) -> None:
    inp = corpus(tmp_path / "in", seed=seed)
    report = run(inp, tmp_path / "out", source_field="source", quality_score_field="q",
                 token_budgets=[20_000, 3_000, 9_000, 60_000], seed=seed)
    assert report["nesting_verified"] is True
    ids = tier_ids(report)
    assert [len(s) for s in ids] == [t["document_count"] for t in report["tiers"]]
    assert [t["budget"] for t in report["tiers"]] == [3_000, 9_000, 20_000, 60_000]
    for small, large in itertools.pairwise(ids):
        assert small <= large
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    for tier in report["tiers"]:  # achieved never exceeds the budget, no refill
        assert tier["achieved_tokens"] <= tier["budget"]
        assert tier["documents_refilled"] == 0
        quotas = plan["quotas"][str(tier["budget"])]
        assert sum(quotas.values()) == min(tier["budget"], plan["total_tokens"])
        assert all(v <= 0 for v in tier["per_stratum_deviation"].values())
    block, findings = check_subset(tmp_path / "out" / "subset_report.json")
    assert findings == [] and block["recounted"]


def test_a_budget_larger_than_the_corpus_takes_it_all_and_reports_the_shortfall(
        tmp_path: Path) -> None:
    inp = write(tmp_path / "in" / "a.jsonl", [
        {"id": "a", "text": words(10), "source": "x"},
        {"id": "b", "text": words(20), "source": "x"},
        {"id": "c", "text": words(30), "source": "y"}])
    report = run(inp, tmp_path / "out", source_field="source", token_budgets=[1000])
    (tier,) = report["tiers"]
    assert tier["achieved_tokens"] == 60 and tier["document_count"] == 3
    assert tier["token_shortfall"] == 940
    assert sorted(tier["strata_exhausted"]) == ["x|0-128", "y|0-128"]
    ids = {w["id"] for w in report["warnings"]}
    assert {"budget_exceeds_corpus", "token_shortfall"} <= ids


def test_a_stratum_stops_at_the_first_document_over_its_quota_and_is_not_refilled(
        tmp_path: Path) -> None:
    # one huge document alone in its stratum, and a stratum of small documents
    docs = [{"id": "huge", "text": words(1000), "source": "big"}]
    docs += [{"id": f"s{i}", "text": words(10), "source": "small"} for i in range(100)]
    inp = write(tmp_path / "in" / "a.jsonl", docs)
    report = run(inp, tmp_path / "out", source_field="source", token_budgets=[1000, 2000],
                 length_bands=[128])
    first, second = report["tiers"]
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    # D'Hondt of 1000 over {big: 1000, small: 1000}: 500 each; of 2000: 1000 each
    assert plan["quotas"]["1000"] == {"big|128+": 500, "small|0-128": 500}
    assert plan["quotas"]["2000"] == {"big|128+": 1000, "small|0-128": 1000}
    # the huge document does not fit 500: its stratum gives nothing, and the small
    # stratum does not make up for it
    assert first["per_stratum_deviation"] == {"big|128+": -500, "small|0-128": 0}
    assert first["achieved_tokens"] == 500 and first["token_shortfall"] == 500
    assert first["document_count"] == 50
    assert "huge" not in tier_ids(report)[0]
    starved = [w for w in report["warnings"] if w["id"] == "starved_strata"]
    assert starved and starved[0]["strata"] == ["big|128+"]
    assert second["achieved_tokens"] == 2000 and second["token_shortfall"] == 0
    assert "huge" in tier_ids(report)[1]


def test_a_stratum_smaller_than_its_quota_contributes_what_it_has(tmp_path: Path) -> None:
    docs = [{"id": f"x{i}", "text": words(40), "source": "x"} for i in range(3)]
    docs += [{"id": f"y{i}", "text": words(7), "source": "y"} for i in range(50)]
    inp = write(tmp_path / "in" / "a.jsonl", docs)
    report = run(inp, tmp_path / "out", source_field="source", token_budgets=[100, 200])
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    for tier in report["tiers"]:
        quotas = plan["quotas"][str(tier["budget"])]
        dev = tier["per_stratum_deviation"]
        # a stratum takes whole documents: it never exceeds its quota
        assert all(-40 < dev[k] <= 0 for k in quotas if k.startswith("x"))
        assert all(-7 < dev[k] <= 0 for k in quotas if k.startswith("y"))
        assert tier["token_shortfall"] == tier["budget"] - tier["achieved_tokens"]


def test_each_stratum_is_taken_in_the_kernels_rank_order(tmp_path: Path) -> None:
    """The global order is ``(stable_uint64(seed, id), id)``, the profile's sampling rank,
    and every tier takes a prefix of each stratum in that order."""
    inp = corpus(tmp_path / "in", n=120)
    report = run(inp, tmp_path / "out", source_field="source", token_budgets=[3_000, 9_000],
                 seed=7)
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["schema_version"] == 3 and plan["seed"] == 7
    strata = planned_strata(tmp_path / "out")
    assert {k: len(v) for k, v in strata.items()} == plan["stratum_documents"]
    for ids in strata.values():
        assert ids == sorted(ids, key=lambda i: (stable_uint64(7, i), i))
    for tier in tier_ids(report):
        for ids in strata.values():
            taken = [i for i in ids if i in tier]
            assert taken == ids[:len(taken)]
        assert 0 < len(tier) < 120


def planned_strata(out: Path) -> dict[str, list[str]]:
    """Every stratum's ids in the global order, from ``plan.json``'s per-range files."""
    import pyarrow.parquet as pq

    plan = json.loads((out / "plan.json").read_text())
    strata: dict[str, list[str]] = {}
    for r in plan["ranges"]:
        table = pq.read_table(out / r["file"])
        assert table.num_rows == r["documents"]
        for i, key in zip(table["id"].to_pylist(), table["stratum"].to_pylist(), strict=True):
            strata.setdefault(key, []).append(i)
    return strata


# -- determinism -----------------------------------------------------------------------
def summary(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(t["budget"], t["document_count"], t["achieved_tokens"],
             json.dumps(t["per_stratum_deviation"], sort_keys=True)) for t in report["tiers"]]


def tier_bytes(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.glob("budget_*/*"))}


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_the_same_tiers_for_any_executor_workers_and_partitioning(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    from executors import make_executor

    if backend == "ray":
        request.getfixturevalue("ray_local")
    inp = corpus(tmp_path / "in", n=300, files=3)
    keys = {"source_field": "source", "token_budgets": [5_000, 20_000], "seed": 4,
            "quality_score_field": "q",
            "tokenizer": {"name": "cl100k_base", "revision": CL100K}}
    a = run(inp, tmp_path / "a", **keys)
    with make_executor(backend, 2, None) as executor:
        b = run_subset(SubsetConfig(input_glob=str(inp), output_dir=str(tmp_path / "b"),
                                    id_field="id", execution={"executor": backend,
                                                              "workers": 2}, **keys),
                       executor)
        c = run_subset(SubsetConfig(input_glob=str(inp), output_dir=str(tmp_path / "c"),
                                    id_field="id", partition_size="8KB",
                                    execution={"executor": backend, "workers": 2}, **keys),
                       executor)
    assert b["producer"]["execution"]["executor"] == backend
    assert tier_bytes(tmp_path / "b") == tier_bytes(tmp_path / "a")  # same bytes
    assert c["producer"]["execution"]["partitions"] > a["producer"]["execution"]["partitions"]
    assert summary(a) == summary(b) == summary(c)
    assert tier_ids(a) == tier_ids(c)  # another partitioning: the same tiers
    d = run(inp, tmp_path / "d", **{**keys, "seed": 5})
    assert tier_ids(d) != tier_ids(a)


# -- tokenizers and the cache ----------------------------------------------------------
def test_token_counts_equal_the_librarys_own(tmp_path: Path) -> None:
    import bpe_openai
    import tiktoken

    from curator.subset.counting import count, identify, load

    texts = ["Smoke tests keep releases honest.", "naïve café — 東京 2024!!",
             "<|endoftext|> is text here", "  spaces\n\nand\tlines  " * 30]
    huge = "Naïve tokens, 123 — again. " * 40_000  # over bpe-openai's 1M characters
    for name, rev in (("cl100k_base", CL100K), ("o200k_base", O200K)):
        tok = identify(name, rev)
        ref = bpe_openai.get_encoding(name)
        counts = count(tok, texts)
        assert counts == [len(ref.encode_ordinary(t)) for t in texts]
        reference = load(tok, reference=True)
        assert isinstance(reference, tiktoken.Encoding)
        assert counts == [len(reference.encode_ordinary(t)) for t in texts]
        with pytest.raises(ValueError):
            ref.encode_ordinary(huge)
        assert count(tok, [huge]) == [len(reference.encode_ordinary(huge))]
    path, tk = small_tokenizer_json(tmp_path)
    tok = identify(str(path), "sha256:" + __import__("hashlib").sha256(
        path.read_bytes()).hexdigest())
    assert count(tok, texts) == [len(tk.encode(t, add_special_tokens=False).ids)
                                 for t in texts]


def small_tokenizer_json(tmp_path: Path) -> tuple[Path, Any]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE(unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.train_from_iterator([words(50, t) for t in "abcdefgh"],
                           trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]"]))
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    return path, tk


def test_the_cache_hits_on_a_rerun_and_misses_after_a_tokenizer_change(
        tmp_path: Path) -> None:
    import bpe_openai

    inp = corpus(tmp_path / "in", n=60)
    cache = tmp_path / "cache"
    keys = {"token_budgets": [2_000, 8_000], "token_cache": str(cache)}
    first = run(inp, tmp_path / "out", tokenizer={"name": "cl100k_base", "revision": CL100K},
                **keys)
    assert first["token_cache"] == {"hits": 0, "misses": 60, "dir": str(cache)}
    assert first["unit"] == "tokens" and first["tokenizer"]["revision"] == CL100K
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["tokenizer"]["revision"] == CL100K
    enc = bpe_openai.get_encoding("cl100k_base")
    texts = [json.loads(x)["text"] for f in sorted(inp.glob("*.jsonl"))
             for x in f.read_text().splitlines()]
    assert first["corpus"]["total_tokens"] == sum(len(enc.encode_ordinary(t)) for t in texts)
    again = run(inp, tmp_path / "out", tokenizer={"name": "cl100k_base",
                                                  "revision": CL100K}, **keys)
    assert again["token_cache"]["hits"] == 60 and again["token_cache"]["misses"] == 0
    assert summary(again) == summary(first)
    other = run(inp, tmp_path / "out", tokenizer={"name": "o200k_base", "revision": O200K},
                **keys)
    assert other["token_cache"] == {"hits": 0, "misses": 60, "dir": str(cache)}
    assert check_subset(tmp_path / "out" / "subset_report.json")[1] == []


# -- every error id ----------------------------------------------------------------------
def refused(tmp_path: Path, inp: Path, error_id: str, **keys: Any) -> CuratorError:
    with pytest.raises(CuratorError) as info:
        run(inp, tmp_path / "out", **keys)
    assert info.value.error_id == error_id, info.value
    return info.value


def test_config_errors(tmp_path: Path) -> None:
    inp = corpus(tmp_path / "in", n=10)
    refused(tmp_path, inp, "id_field_missing", id_field=None)
    refused(tmp_path, inp, "invalid_budget_or_length_band", token_budgets=[0, 10])
    refused(tmp_path, inp, "invalid_budget_or_length_band", token_budgets=[10, 10])
    refused(tmp_path, inp, "invalid_budget_or_length_band", length_bands=[512, 128])
    err = refused(tmp_path, inp, "tokenizer_revision_missing",
                  tokenizer={"name": "cl100k_base"})
    assert CL100K in err.message
    refused(tmp_path, inp, "tokenizer_revision_mismatch",
            tokenizer={"name": "cl100k_base", "revision": O200K})
    refused(tmp_path, inp, "tokenizer_not_found",
            tokenizer={"name": "no_such_vocab", "revision": CL100K})
    refused(tmp_path, tmp_path / "nothing" / "*.jsonl", "input_glob_no_matches")
    assert not (tmp_path / "out").exists(), "a refusal writes nothing"


def test_data_errors(tmp_path: Path) -> None:
    docs = [{"id": f"d{i}", "text": words(5), "q": 0.5} for i in range(6)]
    dup = write(tmp_path / "dup" / "a.jsonl", docs + [dict(d) for d in docs[:4]])
    err = refused(tmp_path, dup, "id_field_not_unique")
    assert err.details["examples"] == ["d0", "d1", "d2"]
    absent = write(tmp_path / "absent" / "a.jsonl", [*docs, {"id": "x", "text": "a b"}])
    refused(tmp_path, absent, "quality_score_field_absent", quality_score_field="q")
    nan = tmp_path / "nan" / "a.jsonl"
    write(nan, docs, ['{"id": "n", "text": "a b", "q": "NaN"}'])
    refused(tmp_path, nan.parent, "quality_score_non_finite", quality_score_field="q")
    # a tokenizer whose normaliser removes every letter counts no token in "abc"
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tk = Tokenizer(models.WordLevel({"[UNK]": 0, "1": 1}, unk_token="[UNK]"))
    tk.normalizer = normalizers.Replace(Regex("[a-z]"), "")
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "empty-tokenizer.json"
    tk.save(str(path))
    rev = "sha256:" + __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    letters = write(tmp_path / "letters" / "a.jsonl", [{"id": "a", "text": "abc"}])
    refused(tmp_path, letters, "token_count_non_positive",
            tokenizer={"name": str(path), "revision": rev})
    err = refused(tmp_path, letters, "tokenizer_revision_missing",
                  tokenizer={"name": str(path)})
    assert rev in err.message


def test_a_corpus_without_documents_is_refused(tmp_path: Path) -> None:
    inp = write(tmp_path / "in" / "a.jsonl", [{"url": "a", "text": words(5)}])
    err = refused(tmp_path, inp, "no_documents")
    assert "1 records have no 'id'" in err.message


def test_skipped_records_are_counted(tmp_path: Path) -> None:
    inp = write(tmp_path / "in" / "a.jsonl",
                [{"id": "a", "text": words(5)}, {"id": "b"}, {"text": words(3)},
                 {"id": "c", "text": "   "}], ["{not json"])
    report = run(inp, tmp_path / "out", token_budgets=[3])
    c = report["corpus"]
    assert (c["documents"], c["skipped_missing_text"], c["skipped_missing_id"],
            c["unparsable_lines"]) == (1, 2, 1, 1)


def test_nesting_and_write_verification_errors(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CuratorError) as info:
        verify_nesting([{"a", "b"}, {"a"}])
    assert info.value.error_id == "tiers_do_not_nest"
    from curator.subset import stages

    original = stages.atomic_file

    class Lossy:  # a writer that loses the first line it is given
        def __init__(self, f: Any) -> None:
            self.f, self.lost = f, False

        def write(self, data: bytes) -> int:
            if not self.lost:
                self.lost = True
                return len(data)
            return int(self.f.write(data))

    @contextlib.contextmanager
    def lossy(path: Any) -> Any:  # the larger tier's first shard loses a line
        with original(path) as f:
            yield Lossy(f) if Path(path).parent.name.startswith("budget_5000") else f

    monkeypatch.setattr(stages, "atomic_file", lossy)
    inp = corpus(tmp_path / "in", n=40, files=1)
    refused(tmp_path, inp, "tier_write_mismatch", token_budgets=[500, 5000])
    assert not list((tmp_path / "out").glob("budget_*")), "every tier is removed"
    report = json.loads((tmp_path / "out" / "subset_report.json").read_text())
    assert report["error"]["error_id"] == "tier_write_mismatch"
    assert "completed_at" not in report["producer"]


def test_quotas_that_shrink_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    from curator.subset import planning

    calls: list[int] = []

    def shrinking(weights: list[int], seats: int) -> list[int]:
        calls.append(seats)
        q = dhondt(weights, seats)
        return [0] * len(q) if len(calls) > 1 else q

    monkeypatch.setattr(planning, "dhondt", shrinking)
    inp = corpus(tmp_path / "in", n=20, files=1)
    refused(tmp_path, inp, "quotas_not_house_monotone", token_budgets=[100, 1000])


def test_the_audit_checker_finds_tampered_tiers(tmp_path: Path) -> None:
    inp = corpus(tmp_path / "in", n=80, files=1)
    run(inp, tmp_path / "out", source_field="source", token_budgets=[2_000, 10_000])
    report_path = tmp_path / "out" / "subset_report.json"
    assert check_subset(report_path)[1] == []
    report = json.loads(report_path.read_text())
    shard = next(Path(report["tiers"][1]["output"]).glob("*.jsonl"))
    small = tier_ids(report)[0]
    lines = shard.read_text().splitlines(True)  # drop one document of the smaller tier
    kept = [x for x in lines if json.loads(x)["id"] != sorted(small)[0]]
    shard.write_text("".join(kept))
    names = {f["name"] for f in check_subset(report_path)[1]}
    assert {"subset_tiers_do_not_nest", "subset_token_count_mismatch",
            "subset_document_count_mismatch", "subset_deviation_mismatch"} <= names


def test_the_flow_hands_subset_the_filtered_corpus(tmp_path: Path) -> None:
    from curator.flow.plan import load_flow_config, plan_flow

    inp = corpus(tmp_path / "in", n=10)
    plan = plan_flow(load_flow_config({
        "corpus": {"input": str(inp), "id_field": "id", "source_field": "source"},
        "output_root": str(tmp_path / "root"),
        "steps": {"filter": {"enabled": True}, "subset": {"enabled": True}}}))
    cfg = plan.step("subset").config
    assert cfg["input_glob"] == f"{tmp_path / 'root' / 'filtered_jsonl'}/part_*.jsonl"
    assert cfg["output_dir"] == str(tmp_path / "root" / "subset")
    assert cfg["id_field"] == "id" and cfg["source_field"] == "source"


def test_the_flow_hands_subset_the_decontaminated_corpus_and_warns_of_a_stale_one(
        tmp_path: Path) -> None:
    from curator.flow.plan import load_flow_config, plan_flow

    inp = corpus(tmp_path / "in", n=10)
    holdout = write(tmp_path / "holdout.jsonl", [{"id": "h", "text": words(30)}])
    root = tmp_path / "root"
    base = {"corpus": {"input": str(inp), "id_field": "id"}, "output_root": str(root)}
    plan = plan_flow(load_flow_config({**base, "steps": {
        "filter": {"enabled": True}, "decontamination": {"enabled": True,
                                                         "holdout": str(holdout)},
        "subset": {"enabled": True}}}))
    assert plan.step("subset").config["input_glob"] == f"{root / 'decontaminated'}/part_*.jsonl"
    write(root / "decontaminated" / "part_0.jsonl", [{"id": "a", "text": "a b"}])
    plan = plan_flow(load_flow_config({**base, "steps": {"filter": {"enabled": True},
                                                         "subset": {"enabled": True}}}))
    assert any("decontaminat" in w and "off" in w for w in plan.warnings), plan.warnings


def test_a_score_field_the_flows_filter_never_writes_is_refused(tmp_path: Path) -> None:
    """``score_column_never_written``: the filter writes ``__<signal>`` only in annotate
    or both mode, with a policy that thresholds the signal (spec section 12)."""
    from curator.flow.plan import load_flow_config, plan_flow

    inp = corpus(tmp_path / "in", n=10)

    def problems(filt: dict[str, Any], approve: dict[str, Any] | None,
                 field: str = "__stopword_ratio") -> list[str]:
        plan = plan_flow(load_flow_config({
            "corpus": {"input": str(inp), "id_field": "id"},
            "output_root": str(tmp_path / "root"), "approve": approve,
            "steps": {"filter": {"enabled": True, **filt},
                      "subset": {"enabled": True, "quality_score_field": field}}}))
        return [msg for key, msg in plan.problems if key == "score_column_never_written"]

    approve = {"thresholds": {"stopword_ratio": 0.1}, "approver": "a", "evidence": "e"}
    found = problems({}, approve)  # mode filter: no score columns
    assert len(found) == 1 and "mode filter" in found[0]
    found = problems({"mode": "annotate"}, None)  # no policy at all
    assert len(found) == 1 and "no policy" in found[0]
    found = problems({"mode": "both"}, approve, field="__boilerplate_hits")
    assert len(found) == 1 and "no threshold for 'boilerplate_hits'" in found[0]
    # a policy file the filter names, read for its signals
    policy = tmp_path / "approved_policy.yaml"
    policy.write_text("thresholds:\n- signal: boilerplate_hits\n  max: 3\n")
    filt = {"mode": "annotate", "heuristic_filters": {"approved_policy": str(policy)}}
    assert problems(filt, None, field="__boilerplate_hits") == []
    assert problems(filt, None, field="__stopword_ratio") != []
    # written: annotate with the signal thresholded; a field not of the filter: no check
    assert problems({"mode": "annotate"}, approve) == []
    assert problems({}, approve, field="quality") == []
