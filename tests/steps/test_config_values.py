"""Every size and count in a step config is checked by its model (issue #29, items 1, 4,
5 and 6): a size that is negative, zero, past 1 TiB or not a size, and a count that is a
boolean, a float or past 64 bits, is ``config_error`` (exit 2) on the command line,
before anything is read or written. Never a traceback, never a run over nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from curator.config import validate_config
from curator.errors import CuratorError
from curator.io.partitioning import parse_size
from curator.steps.decontamination import DecontaminationConfig
from curator.steps.filter import FilterConfig
from curator.steps.profile import ProfileConfig
from curator.steps.subset import SubsetConfig
from flows.cli import app

TEXT = "the quick brown fox jumps over the lazy dog while the cat sleeps on the mat"


def _jsonl(path: Path, n: int, prefix: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "text": f"{i} {TEXT}"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return str(path)


def _curate(tmp_path: Path, command: str, config: dict[str, Any], *sets: str) -> Any:
    path = tmp_path / f"{command}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    argv = [command, "--config", str(path)]
    for s in sets:
        argv += ["--set", s]
    return CliRunner().invoke(app, argv, env={"CURATE_PREFECT": "never", "NO_COLOR": "1"})


def _refused(result: Any, out: Path, *words: str) -> None:
    """Exit 2 with ``config_error`` naming ``words``; no traceback; nothing written."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "error: [config_error]" in result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, (word, result.output)
    assert not out.exists(), "a refused config writes nothing"


def _decontaminate(tmp_path: Path) -> dict[str, Any]:
    return {"train_glob": _jsonl(tmp_path / "train" / "t.jsonl", 5, "t"),
            "holdout_glob": _jsonl(tmp_path / "holdout" / "h.jsonl", 2, "h"),
            "id_field": "id", "output_dir": str(tmp_path / "out"),
            "execution": {"executor": "inline"}}


def _subset(tmp_path: Path) -> dict[str, Any]:
    return {"input_glob": _jsonl(tmp_path / "in" / "c.jsonl", 5, "d"), "id_field": "id",
            "output_dir": str(tmp_path / "out"), "token_budgets": [20, 40],
            "execution": {"executor": "inline"}}


@pytest.mark.parametrize("size", ["-5MB", "-1", "0"])
def test_a_negative_or_zero_partition_size_is_refused_not_read_as_nothing(
        tmp_path: Path, size: str) -> None:
    # item 1: exit 0 and "0 of 0 training documents removed" before
    result = _curate(tmp_path, "decontaminate", _decontaminate(tmp_path),
                     f"partition_size={size}")
    _refused(result, tmp_path / "out", "partition_size", "1 byte to 1 TiB"
             if size != "-5MB" else "a size such as 64MB")


@pytest.mark.parametrize("command", ["decontaminate", "subset"])
def test_a_partition_size_that_is_not_a_size_is_refused(tmp_path: Path, command: str) -> None:
    # item 5: a ValueError traceback before
    config = (_decontaminate if command == "decontaminate" else _subset)(tmp_path)
    result = _curate(tmp_path, command, {**config, "partition_size": "lots"})
    _refused(result, tmp_path / "out", "partition_size", "'lots'")


def test_a_boolean_budget_is_refused_not_made_a_tier(tmp_path: Path) -> None:
    # item 4: [true, 2000] made a tier budget_1 before
    result = _curate(tmp_path, "subset", {**_subset(tmp_path), "token_budgets": [True, 2000]})
    _refused(result, tmp_path / "out", "token_budgets.0", "should be an integer, not true")


@pytest.mark.parametrize("key", ["token_budgets", "length_bands"])
def test_a_budget_or_band_past_64_bits_is_refused(tmp_path: Path, key: str) -> None:
    # item 6: TypeError "Integer exceeds 64-bit range" / OverflowError before
    value = [20, 10**30] if key == "token_budgets" else [128, 10**30]
    result = _curate(tmp_path, "subset", {**_subset(tmp_path), key: value})
    _refused(result, tmp_path / "out", f"{key}.1", "9223372036854775807")


@pytest.mark.parametrize("value", [1e8, 100000000.5, float("nan"), "1e8", True])
def test_a_count_is_an_integer_as_written(value: Any) -> None:
    with pytest.raises(CuratorError) as info:
        validate_config(SubsetConfig, {"input_glob": "x", "token_budgets": [value]})
    assert info.value.error_id == "config_error" and "token_budgets.0" in info.value.message
    with pytest.raises(CuratorError):
        validate_config(DecontaminationConfig, {"train_glob": "x",
                                                "minhash": {"num_bands": value}})


@pytest.mark.parametrize(("model", "keys"), [
    (FilterConfig, {"input_glob": "x", "quality_filters": {"min_langid_score": "{v}"}}),
    (DecontaminationConfig, {"train_glob": "x", "containment": {"threshold": "{v}"}}),
    (ProfileConfig, {"input_glob": "x", "band_search": {"min_keep_rate": "{v}"}}),
])
@pytest.mark.parametrize("value", [True, float("nan"), float("inf"), float("-inf")])
def test_a_threshold_is_a_finite_number_not_a_boolean(model: Any, keys: dict[str, Any],
                                                      value: Any) -> None:
    # NaN or -inf as min_langid_score used to read the whole corpus and keep or drop all
    data = json.loads(json.dumps(keys).replace('"{v}"', json.dumps(value)))
    with pytest.raises(CuratorError) as info:
        validate_config(model, data)
    assert info.value.error_id == "config_error"
    assert validate_config(model, json.loads(json.dumps(keys).replace('"{v}"', "0.5")))


def test_a_float_that_is_a_whole_number_is_refused_with_its_integer_spelling() -> None:
    with pytest.raises(CuratorError) as info:
        validate_config(SubsetConfig, {"input_glob": "x", "token_budgets": [1e8]})
    assert "not 100000000.0 (write 100000000)" in info.value.message


def test_integers_and_numeric_strings_are_accepted() -> None:
    cfg = validate_config(SubsetConfig, {"input_glob": "x", "seed": "7",  # CURATE_SEED=7
                                         "token_budgets": [100_000_000, 2**63 - 1]})
    assert cfg.token_budgets == [100_000_000, 2**63 - 1] and cfg.seed == 7


@pytest.mark.parametrize(("written", "size"), [
    ("64MB", 64_000_000), ("256MiB", 256 << 20), ("1GiB", 1 << 30), ("512 KiB", 512 << 10),
    ("1.5MB", 1_500_000), ("64mb", 64_000_000), ("100", 100), (1234, 1234),
    ("64M", 64 << 20), ("2k", 2048), ("1TiB", 1 << 40),  # a bare K/M/G: powers of 2
])
def test_the_documented_size_spellings_keep_their_meaning(written: Any, size: int) -> None:
    assert parse_size(written) == size
    cfg = validate_config(SubsetConfig, {"input_glob": "x", "partition_size": written})
    assert cfg.partition_size == written  # kept as written: the run's config hash with it


@pytest.mark.parametrize("written", ["-5MB", -1, 0, "0KB", "lots", "64MB of text", "2TiB",
                                     1 << 41, "3 parsecs", True, 1.5, None, ["64MB"]])
def test_a_size_outside_1_byte_to_1_tib_or_not_a_size_is_config_error(written: Any) -> None:
    with pytest.raises(CuratorError) as info:
        validate_config(DecontaminationConfig, {"train_glob": "x", "partition_size": written})
    assert info.value.error_id == "config_error" and "partition_size" in info.value.message


def test_docs_subset_defaults_are_what_the_model_accepts() -> None:
    """docs/subset.md's table spells each default as a config would (``[1e8, ...]`` was
    refused as not integers)."""
    docs = (Path(__file__).parents[2] / "docs" / "subset.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2].strip(" `")
            for line in docs.splitlines() if line.startswith("| `")}
    for key in ("token_budgets", "length_bands", "partition_size"):
        value = yaml.safe_load(rows[key])
        cfg = validate_config(SubsetConfig, {"input_glob": "x", key: value})
        assert getattr(cfg, key) == SubsetConfig.model_fields[key].get_default(
            call_default_factory=True), key
