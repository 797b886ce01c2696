"""profile_summary.md and the plots, rendered from a small synthetic report."""

from __future__ import annotations

import json
import re
import shlex

import numpy as np
import pytest
import yaml

from curator import models
from curator.artifacts import dump_json
from curator.errors import CuratorError
from curator.models import ProfileReport
from curator.profile import stats
from curator.profile.plots import write_plots
from curator.profile.summary import render_summary, sparkline
from curator.signals.registry import IMPL_VERSION, REGISTRY

SOURCES = ["news", "forum", "wiki"]
PNG = b"\x89PNG\r\n\x1a\n"


def _report() -> dict:
    rng = np.random.default_rng(0)
    n = 1500
    src = rng.integers(0, 3, n)
    w = np.array([40.0, 10.0, 25.0])[src]
    base = rng.random(n)
    scores = {
        "bullet_ratio": np.clip(rng.beta(1, 12, n) + 0.05 * base, 0, 1),
        "words_with_alphabets": np.clip(1 - rng.beta(1, 40, n), 0, 1),
        "max_word_length": np.where(base < 0.995, 12.0, 4000.0),  # concentrated in 1 bin
        "word_count": rng.integers(5, 3000, n).astype(float),
        "sentence_end_ratio": np.where(base < 0.7, np.nan, base),  # 30% scored: suppressed
    }
    specs = {name: REGISTRY[name] for name in scores}
    blocks = [
        stats.signal_block(specs[name], scores[name], w, src, SOURCES,
                           scoring_failures=int(np.isnan(scores[name]).sum()))
        for name in scores
    ]
    return {
        "step_id": "profile",
        "schema_version": 1,
        "signals_impl_version": IMPL_VERSION,
        "langpack": {"pack_id": "eng", "language_tag": "en", "version": "1.0.0",
                     "content_hash": "sha256:" + "ab" * 32, "capabilities": []},
        "corpus": {"glob": "raw/*.jsonl", "file_count": 3, "document_count": 75000,
                   "records_read": 75010, "records_without_text": 4, "unparsable_lines": 6,
                   "damaged_shards": 0, "source_count": 3, "source_field": "source",
                   "fingerprint": "sha256:" + "cd" * 32},
        "sampling": {"seed": 0, "max_total_docs": 1500, "sampled": n,
                     "method": "hash_bottom_k_per_source"},
        "notes": ["tokenizer not configured: token_count skipped"],
        "signals": blocks,
        "language_composition": {
            "scored": n, "model": "lid.176.ftz",
            "languages": [
                {"language": "en", "documents": 1400, "share": 0.933333,
                 "confidence_p50": 0.97, "confidence_p10": 0.81},
                {"language": "ru", "documents": 100, "share": 0.066667,
                 "confidence_p50": 0.93, "confidence_p10": 0.7},
            ],
            "confidence": {"p1": 0.4}, "note": "fastText language id on the sample",
        },
        "cooccurrence": stats.cooccurrence(specs, scores, w),
        "policy_simulation": stats.policy_simulation(specs, scores, w),
        "profile_digest": "sha256:" + "ef" * 32,
    }


@pytest.fixture(scope="module")
def report() -> dict:
    return _report()


def _section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start:] if end < 0 else text[start:end]


def _uncomment(block_text: str) -> dict:
    body = block_text.split("```yaml\n", 1)[1].split("```", 1)[0]
    lines = body.splitlines()
    assert lines and all(line.startswith("# ") for line in lines)
    assert yaml.safe_load(body) is None  # commented out: nothing is active as written
    return yaml.safe_load("\n".join(line[2:] for line in lines))


def test_summary_sections(report):
    text = render_summary(report)
    for heading in ("# Profile summary", "## Corpus", "## Language composition", "## Signals",
                    "## Co-occurrence at Curator defaults", "## Policy simulation",
                    "## Approve block"):
        assert re.search(rf"^{re.escape(heading)}$", text, re.M), heading
    assert "raw/*.jsonl" in text and report["corpus"]["fingerprint"] in text
    assert "> **NOTE:** tokenizer not configured" in text
    langs = _section(text, "## Language composition")
    assert "| en | 1,400 | 93.33% | 0.97 | 0.81 |" in langs
    for block in report["signals"]:
        assert f"### `{block['signal']}`" in text
    no_lang = render_summary({**report, "language_composition": None})
    assert "## Language composition" not in no_lang


def test_signal_sections_quantiles_sparkline_and_gates(report):
    text = render_summary(report)
    bullet = _section(text, "### `bullet_ratio`").split("\n### ")[0]
    micro = report["signals"][0]["views"]["micro"]
    assert "| p1 | p5 | p10 | p25 | p50 | p75 | p90 | p95 | p99 |" in bullet
    assert f"{micro['p50']:.4g}" in bullet
    hist = report["signals"][0]["histogram"]["counts"]
    assert f"`{sparkline(hist)}`" in bullet and len(sparkline(hist)) == 32
    for row in stats.gate_table(report["signals"][0]):
        assert f"| {row['target']:.0%} | max | {row['threshold']:.6g} |" in bullet
    assert "Curator default: max 0.9 keeps" in bullet
    concentrated = _section(text, "### `max_word_length`").split("\n### ")[0]
    assert "heavily concentrated" in concentrated and "`▁" not in concentrated
    suppressed = _section(text, "### `sentence_end_ratio`").split("\n### ")[0]
    assert "retention_suppressed" in suppressed and "no gate table" in suppressed
    interval = _section(text, "### `word_count`").split("\n### ")[0]
    assert "| 99% | min |" in interval and "| 99% | max |" in interval


def test_sparkline_scale():
    assert sparkline([0, 1, 2, 4, 8]) == "▁▂▃▅█"
    assert sparkline([0, 0]) == "▁▁"


def test_policy_simulation_section(report):
    sim = _section(render_summary(report), "## Policy simulation")
    assert f"retention {report['policy_simulation']['retention']:.2%}" in sim
    for gate in report["policy_simulation"]["per_gate"]:
        assert f"| `{gate['signal']}` |" in sim
    assert "Not computed" in render_summary({**report, "policy_simulation": None})


def test_approve_block_uncomments_to_the_99_percent_thresholds(report):
    block = _section(render_summary(report), "## Approve block")
    parsed = _uncomment(block)
    assert parsed["approval"] == {"approver": "", "date": "", "method": "manual",
                                  "evidence": ""}
    expected = []
    for sig in report["signals"]:
        row = stats.gate_table(sig)[:1]
        if sig["direction"] != "interval" and row and row[0]["threshold"] is not None:
            expected.append({"signal": sig["signal"], sig["direction"]: row[0]["threshold"]})
    assert parsed["thresholds"] == expected  # exact grid values, bit for bit
    assert {t["signal"] for t in expected} == {"bullet_ratio", "words_with_alphabets",
                                               "max_word_length"}
    for sig in expected:
        row = stats.gate_table(next(b for b in report["signals"]
                                    if b["signal"] == sig["signal"]))[0]
        assert f"# keeps {row['retained']:.2%}" in block
    assert "word_count (interval" in block and "sentence_end_ratio (no swept point" in block
    # the same choices as a `curate approve` command line, value for value
    command = block.split("```bash\n", 1)[1].split("```", 1)[0]
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[:2] == ["curate", "approve"]
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    assert [s.split("=")[0] for s in sets] == [t["signal"] for t in expected]
    for item, sig in zip(sets, expected, strict=True):
        bound = "max" if "max" in sig else "min"
        assert float(item.split("=")[1]) == sig[bound]


def test_the_summary_of_the_run_is_the_one_rebuilt_from_its_written_report(report):
    """The step renders its in-memory report; the Prefect artifact and any later reader
    render the written file (sorted keys): the same bytes, the interval default's bounds
    lower first either way, an integral threshold still an integer."""
    written = dump_json(report)
    assert '"max": 100000,\n' in written.split('"curator_default"')[-1]  # sorted: max first
    texts = {render_summary(report), render_summary(json.loads(written)),
             render_summary(models.load(ProfileReport, written, "profile_report.json"))}
    assert len(texts) == 1
    text = texts.pop()
    interval = _section(text, "### `word_count`").split("\n### ")[0]
    assert "Curator default: min 50, max 100,000 keeps" in interval
    sim = report["policy_simulation"]["per_gate"]
    gate = next(g for g in sim if g["signal"] == "max_word_length")
    assert isinstance(gate["thresholds"]["max"], int)
    assert f"| `max_word_length` | max {gate['thresholds']['max']} |" in text
    assert f"    max: {gate['thresholds']['max']}  # keeps" in text  # YAML int, no ".0"


def test_a_nan_or_numpy_number_in_memory_renders_as_the_written_report_does(report):
    sim = report["policy_simulation"]
    langs = report["language_composition"]
    odd = {**report,
           "policy_simulation": {**sim, "retention": float("nan")},
           "language_composition": {**langs, "languages": [
               {**x, "share": np.float64(x["share"])} for x in langs["languages"]]}}
    null = {**report, "policy_simulation": {**sim, "retention": None}}
    text = render_summary(odd)
    assert text == render_summary(null)  # written as null (curator.artifacts.dump_json)
    assert "retention n/a" in text and "nan%" not in text
    assert "| en | 1,400 | 93.33% |" in text


def test_a_malformed_report_is_refused_naming_the_field(report):
    bad = json.loads(dump_json(report))
    bad["signals"][1]["histogram"]["counts"][0] = "7"
    with pytest.raises(CuratorError) as caught:
        models.load(ProfileReport, json.dumps(bad), "profile_report.json")
    assert caught.value.error_id == "artifact_invalid"
    assert "signals[1].histogram.counts[0]" in str(caught.value)


def test_plots_are_deterministic_pngs_and_linked(report, tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    plots = write_plots(report, first)
    assert write_plots(report, second) == plots
    assert plots["bullet_ratio"] == {"histogram": "plots/bullet_ratio_histogram.png",
                                     "retention": "plots/bullet_ratio_retention.png"}
    assert "retention" not in plots["sentence_end_ratio"]  # suppressed: nothing to draw
    assert set(plots["word_count"]) == {"histogram", "retention"}
    for kinds in plots.values():
        for rel in kinds.values():
            data = (first / rel).read_bytes()
            assert data.startswith(PNG) and len(data) > 2000
            assert data == (second / rel).read_bytes()
            assert b"Software" not in data
    assert not list((first / "plots").glob("*.tmp"))
    text = render_summary(report, plots)
    assert "[histogram](plots/bullet_ratio_histogram.png)" in text
    assert "[retention](plots/word_count_retention.png)" in text


def test_plots_refuse_a_non_identifier_signal(report, tmp_path):
    bad = {"signals": [{**report["signals"][0], "signal": "../escape"}]}
    with pytest.raises(ValueError):
        write_plots(bad, tmp_path)
