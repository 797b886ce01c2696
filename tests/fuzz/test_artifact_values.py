"""Property-based fuzzing (hypothesis) of every artifact ``curate status``, ``curate
report`` and the whole-root ``curate audit --set output_root=...`` read (issue #29): a
real output root (a small flow through all six steps, built once) is copied for each
example, one artifact of the copy is damaged (a field deleted; a value made NaN,
infinite, 10**30, negative, a string, null, a boolean; a list where a mapping is or a
mapping where a list is; the file emptied, truncated, not JSON, deleted or made a
directory), and the three commands run on the copy. Properties: exit 0, 1, 2 or 3; a
non-zero exit prints ``error: [<id>]`` (never ``internal_error``), and
``artifact_invalid`` names the damaged file; no traceback, no exception escapes.

Example counts: ``CURATE_FUZZ_ARTIFACT_EXAMPLES`` per artifact (default 2 in ``make
test``, 60 with ``CURATE_FUZZ_FULL=1``); docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz._cli import assert_refused_or_ran, invoke
from tests.fuzz.conftest import FULL, sandbox

pytestmark = pytest.mark.timeout(900)

PER_ARTIFACT = int(os.environ.get("CURATE_FUZZ_ARTIFACT_EXAMPLES") or (60 if FULL else 2))

#: every JSON and YAML artifact a flow through all six steps writes (checkpoints aside)
STRUCTURED = [
    "flow_plan.json", "flow_report.json",
    "ingested/ingest_report.json", "ingested/.curate_flow_step.json",
    "profile/profile_report.json", "profile/sample_manifest.json",
    "profile/candidate_policies.yaml", "profile/.curate_flow_step.json",
    "policy/approved_policy.yaml",
    "filtered_jsonl/run_manifest.json", "filtered_jsonl/curation_ledger.json",
    "filtered_jsonl/.curate_flow_step.json",
    "audit/audit_report.json", "audit/.curate_flow_step.json",
    "decontaminated/decontamination_report.json", "decontaminated/.curate_flow_step.json",
    "subset/plan.json", "subset/subset_report.json", "subset/.curate_flow_step.json",
]
#: one shard of each corpus the audit reads, and the page ``curate report`` rewrites
CORPORA = [
    "ingested/part_0.jsonl", "filtered_jsonl/part_0.jsonl",
    "filtered_jsonl/rejected/part_0.jsonl", "decontaminated/part_0.jsonl",
    "decontaminated/removed/part_0.jsonl", "subset/budget_4000_words/part_0.jsonl",
]
ARTIFACTS = [*STRUCTURED, *CORPORA, "report.html"]


@pytest.fixture(scope="module")
def flow_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ingest and profile, then approve, filter, audit, decontaminate and subset: the
    output root of tests/report (60 documents)."""
    from tests.report._support import full_run

    root = full_run(tmp_path_factory.mktemp("artifact-root"), docs=60)
    from flows.cli import app  # noqa: F401  (imported once, outside the examples' timing)

    assert invoke(["report", str(root)], root).exit_code == 0  # report.html, as a user has
    return root


def test_every_artifact_of_a_flow_root_is_fuzzed(flow_root: Path) -> None:
    """A new JSON or YAML artifact a step writes joins :data:`STRUCTURED`."""
    found = {str(p.relative_to(flow_root)) for p in flow_root.rglob("*")
             if p.is_file() and p.suffix in (".json", ".yaml")
             and "checkpoints" not in p.relative_to(flow_root).parts}
    assert found == set(STRUCTURED)
    assert all((flow_root / p).is_file() for p in ARTIFACTS)


# -- damage ----------------------------------------------------------------------------------

#: what a value is replaced with
REPLACEMENTS: list[Any] = [
    float("nan"), 10**30, None, "abc", -1, True, [], {}, float("inf"), 3000.9, "3000",
    float("-inf"), 0, -(10**30), 2**64, "", [1], {"a": 1}, [None], "../../../etc/passwd",
]
#: whole-file damage
JSON_VALUES = {"a_number", "a_list", "a_string", "null"}
FILES = ["empty", "truncated", "not_json", "a_number", "a_list", "a_string", "null",
         "deleted", "a_directory", "bytes"]


@st.composite
def damaged_tree(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one node deleted, replaced, or wrapped in a list or a mapping."""
    doc = json.loads(json.dumps(doc))
    parent: Any = None
    key: Any = None
    node = doc
    while isinstance(node, dict | list) and node and draw(st.integers(0, 4)) < 4:
        keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, draw(st.sampled_from(keys))
        node = parent[key]
    how = draw(st.sampled_from(["replace", "delete", "as_list", "as_mapping"]))
    if how == "delete" and isinstance(parent, dict):
        del parent[key]
        return doc
    if how == "delete" and isinstance(parent, list):
        parent.pop(key)
        return doc
    if how == "as_list":
        new: Any = [node]
    elif how == "as_mapping":
        new = {"value": node}
    else:  # replaced (or, for the document itself, deleted: replaced too)
        new = draw(st.sampled_from(REPLACEMENTS))
    if parent is None:
        return new
    parent[key] = new
    return doc


def dump(doc: Any, yaml_file: bool) -> bytes:
    if yaml_file:
        return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8")
    return json.dumps(doc, allow_nan=True).encode("utf-8")


@st.composite
def damage(draw: st.DrawFn, path: Path) -> str:
    """Damage the file at ``path`` in place; return what was done (for the message)."""
    data = path.read_bytes()
    yaml_file = path.suffix == ".yaml"
    if draw(st.integers(0, 3)) == 3 or path.suffix == ".html":
        how = draw(st.sampled_from(FILES))
        if how == "deleted":
            path.unlink()
        elif how == "a_directory":
            path.unlink()
            path.mkdir()
            (path / "x.json").write_text("{}", encoding="utf-8")
        else:
            new = {"empty": b"", "truncated": data[:len(data) // 2],
                   "not_json": b"{not json", "a_number": b"5", "a_list": b"[]",
                   "a_string": b'"x"', "null": b"null", "bytes": b"\xff\xfe\x00{"}[how]
            path.write_bytes(new)
        return how
    if path.suffix == ".jsonl":
        lines = data.decode("utf-8").splitlines()
        i = draw(st.integers(0, len(lines) - 1))
        line = draw(damaged_tree(json.loads(lines[i])))
        lines[i] = dump(line, False).decode("utf-8")
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return f"line {i + 1}: {lines[i][:300]}"
    doc = draw(damaged_tree(yaml.safe_load(data) if yaml_file else json.loads(data)))
    text = dump(doc, yaml_file)
    path.write_bytes(text)
    return text.decode("utf-8")[:600]


#: damage these properties found turned into a traceback (#29, fixed since): drawn like
#: any other, and test_damage_that_was_a_traceback pins each case
FOUND: dict[str, str] = {
    "policy/approved_policy.yaml": "thresholds a number (thresholds: 5): curate report "
    "TypeError: 'int' object is not iterable (View.thresholds, curator/report/page.py)",
    "decontaminated/removed/part_0.jsonl": "a line of removed/ that is not an object "
    "(5, [], null, a string): the whole-root curate audit TypeError: 'int' object is not "
    "subscriptable (json.loads(line)[\"id\"] in check_decontamination, "
    "curator/audit/decontamination.py; TypeError is not among the exceptions caught)",
    "subset/budget_4000_words/part_0.jsonl": "a tier record whose text is not a string "
    "(5, null, a list): the whole-root curate audit AttributeError: 'int' object has no "
    "attribute 'split' (the words counter of _counter, curator/audit/subset.py); a record "
    "without text: ValueError: zip() argument 2 is shorter than argument 1 (check_subset)",
}


def commands(root: Path, audit_out: Path) -> list[list[str]]:
    """status, the whole-root audit (README's command), then report."""
    return [["status", str(root)],
            ["audit", "--set", f"output_root={root}", "--set", f"output_dir={audit_out}",
             "--set", "mode=all", "--set", "comparison_fields=[id, text]",
             "--set", "execution.executor=inline"],
            ["report", str(root)]]


@pytest.mark.parametrize("artifact", ARTIFACTS)
def test_any_damaged_artifact_is_read_or_refused_with_an_id(artifact: str,
                                                            flow_root: Path) -> None:
    @settings(max_examples=PER_ARTIFACT)
    @given(data=st.data())
    def check(data: Any) -> None:
        with sandbox() as box:
            root = box / "root"
            shutil.copytree(flow_root, root, symlinks=True)
            done = data.draw(damage(root / artifact), label="damage")
            for argv in commands(root, box / "audit-out"):
                outcome = invoke(argv, box)
                what = f"curate {' '.join(argv)} with {artifact} damaged: {done}"
                assert_refused_or_ran(outcome, what)
                if "artifact_invalid" in outcome.error_ids:
                    assert Path(artifact).name in outcome.output, (what, outcome.output)

    check()


def _thresholds_a_number(path: Path) -> None:
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "thresholds": 5}),
                    encoding="utf-8")


def _a_line_not_an_object(path: Path) -> None:
    path.write_text("5\n" + path.read_text(encoding="utf-8"), encoding="utf-8")


def _a_text_not_a_string(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "text": 5})
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.mark.parametrize(("artifact", "how", "command"), [
    pytest.param(artifact, how, command, id=artifact)
    for artifact, how, command in [
        ("policy/approved_policy.yaml", _thresholds_a_number, "report"),
        ("decontaminated/removed/part_0.jsonl", _a_line_not_an_object, "audit"),
        ("subset/budget_4000_words/part_0.jsonl", _a_text_not_a_string, "audit")]])
def test_damage_that_was_a_traceback(artifact: str, how: Any, command: str,
                                     flow_root: Path) -> None:
    """Each was a traceback (:data:`FOUND`); now refused with an id, or read."""
    with sandbox() as box:
        root = box / "root"
        shutil.copytree(flow_root, root, symlinks=True)
        how(root / artifact)
        argv = next(a for a in commands(root, box / "audit-out") if a[0] == command)
        assert_refused_or_ran(invoke(argv, box), f"{artifact}: {how.__name__}")
