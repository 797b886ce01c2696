"""Property-based fuzzing (hypothesis) of every loader a user's file goes through: each
registered step's config loader (file and ``--set``), the flow config loader, the
policy loader and the language-pack loader. Properties: a value or a
:class:`CuratorError` with an id (never another exception, never ``internal_error``);
no loader writes a file (the flow's planner only ``flow_plan.json`` under its
``output_root``).

Example counts: tests/fuzz/conftest.py (``CURATE_FUZZ_FULL=1`` for thousands).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from curator.config import load_config
from curator.errors import CuratorError
from curator.flow.run import start_flow
from curator.langpack.loader import content_hash_of, load_langpack
from curator.policy import load_policy
from curator.steps.registry import STEPS
from tests.fuzz.conftest import examples, files_under, sandbox

pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[2]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                    st.text(max_size=20), st.dates())
values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=6), kids, max_size=3)),
    max_leaves=10)


def yaml_text(doc: Any) -> bytes:
    try:
        return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, ValueError):
        return b"{}"


@st.composite
def mutated_text(draw: st.DrawFn, base: bytes) -> bytes:
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(data)))
        if draw(st.booleans()) and data:
            del data[min(pos, len(data) - 1):min(pos, len(data) - 1) + draw(st.integers(1, 8))]
        else:
            data[pos:pos] = draw(st.sampled_from(
                [b"\x00", b"\xff", b"\t", b"\n", b": ", b"- ", b"&a ", b"*a", b"[", b"{",
                 b"!!python/name:os.system ", b'"', b"'", b"\xef\xbb\xbf", b"=", b"]]", b"#"])
                | st.binary(min_size=1, max_size=4))
    return bytes(data)


def documents(keys: list[str], base: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """YAML bytes: a mapping over the known keys (and a few unknown), a valid document
    with values swapped, its text mutated, or anything at all."""
    known = st.dictionaries(st.sampled_from(keys) | st.text(max_size=8), values, max_size=6)
    swapped = st.dictionaries(st.sampled_from(sorted(base)), values, max_size=3).map(
        lambda changes: {**base, **changes})
    return st.one_of(known.map(yaml_text), swapped.map(yaml_text),
                     mutated_text(yaml_text(base)), st.binary(max_size=200),
                     st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")))


#: named nasties every YAML loader is given besides what hypothesis draws
DEEP = b"x: " + b"[" * 1200 + b"]" * 1200 + b"\n"  # past the parser's recursion limit
LAUGHS = (b"a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + b"".join(
    b"a%d: &a%d [%s]\n" % (i, i, b", ".join(b"*a%d" % (i - 1) for _ in range(9)))
    for i in range(1, 10)))
NOT_UTF8 = b"output_dir: caf\xe9\xff\n"
PYTHON_TAG = b"x: !!python/object/apply:os.system ['touch /tmp/pwned']\n"


def refused_with_an_id(exc: CuratorError) -> None:
    assert exc.error_id and exc.error_id != "internal_error", exc
    assert isinstance(exc.message, str) and len(exc.message) < 100_000


# -- every registered step's config --------------------------------------------------------

def step_documents(spec: Any) -> st.SearchStrategy[bytes]:
    keys = sorted(spec.config.model_fields)
    base = {"output_dir": "out", "execution": {"executor": "inline", "workers": 1}}
    if spec.input_key:
        base[spec.input_key] = "in"
    return documents([*keys, "execution.workers"], base) | st.sampled_from(
        [DEEP, LAUGHS, NOT_UTF8, PYTHON_TAG,
         b"?", b"1: x\n", b"output_dir: out\n? [a]\n"])  # keys that are not strings


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.key) for s in STEPS])
@examples(12)
@given(data=st.data())
def test_any_step_config_file_loads_or_is_refused_with_an_id(spec: Any, data: Any) -> None:
    text = data.draw(step_documents(spec))
    with sandbox() as root:
        (root / "config.yaml").write_bytes(text)
        before = files_under(root)
        try:
            load_config(spec.config, root / "config.yaml")
        except CuratorError as exc:
            refused_with_an_id(exc)
        assert files_under(root) == before


overrides = st.lists(st.one_of(
    st.text(max_size=30),
    st.tuples(st.sampled_from(["output_dir", "execution", "execution.workers", "a.b", "",
                               ".", "a..b", "execution.executor.x"]) | st.text(max_size=10),
              st.text(max_size=15)).map(lambda kv: f"{kv[0]}={kv[1]}")), max_size=4)


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.key) for s in STEPS[:2]])
@examples(25)
@given(sets=overrides)
@example(sets=["=\x1b"]).via("was a yaml ReaderError traceback")
@example(sets=["execution=1", "execution.workers=2"]).via("was a TypeError traceback")
@example(sets=["a=" + "[" * 1200])
def test_any_set_overrides_load_or_are_refused_with_an_id(spec: Any, sets: list[str]) -> None:
    try:
        load_config(spec.config, None, ["output_dir=out", *sets])
    except CuratorError as exc:
        refused_with_an_id(exc)


# -- the flow config -------------------------------------------------------------------------

FLOW_BASE: dict[str, Any] = {
    "corpus": {"input": "raw", "text_field": "text", "language": "en",
               "langpack_dir": str(REPO / "curator" / "langpacks")},
    "output_root": "root",
    "steps": {s.key: {"enabled": True} for s in STEPS},
    "execution": {"executor": "inline"},
}


@st.composite
def flow_documents(draw: st.DrawFn) -> bytes:
    doc = dict(FLOW_BASE)
    doc["output_root"] = draw(st.sampled_from(["root", "a/b", "root/../root", "."]))
    for _ in range(draw(st.integers(0, 3))):
        block = draw(st.sampled_from(["corpus", "steps", "approve", "execution", "top"]))
        key = draw(st.text(max_size=8) | st.sampled_from(
            ["input", "text_field", "id_field", "language", "from", "thresholds",
             "approver", "executor", "workers", "timeout_seconds", "enabled"]
            + [s.key for s in STEPS]))
        value = draw(values)
        if block == "top":
            doc[key] = value
        elif block == "steps" and draw(st.booleans()):
            step = draw(st.sampled_from([s.key for s in STEPS]))
            doc["steps"] = {**doc["steps"], step: {**doc["steps"][step], key: value}}
        else:
            current = doc.get(block)
            doc[block] = {**(current if isinstance(current, dict) else {}), key: value}
    text = yaml_text(doc)
    return draw(st.one_of(st.just(text), mutated_text(text)))


@examples(30)
@given(text=flow_documents() | st.binary(max_size=200))
@example(text=b"\x80").via("was a UnicodeDecodeError traceback")
@example(text=DEEP).via("was a RecursionError traceback")
@example(text=LAUGHS)
@example(text=PYTHON_TAG)
def test_any_flow_config_plans_or_is_refused_with_an_id(text: bytes) -> None:
    with sandbox() as root:
        (root / "raw").mkdir()
        (root / "raw" / "a.jsonl").write_bytes(b'{"text": "hello"}\n')
        (root / "flow.yaml").write_bytes(text)
        before = files_under(root)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            start_flow(str(root / "flow.yaml"), True, logging.getLogger("fuzz"))
        except CuratorError as exc:
            refused_with_an_id(exc)
        finally:
            os.chdir(cwd)
        new = files_under(root) - before
        # only the plan, under the output root the config names
        assert all(Path(p).name == "flow_plan.json" or not Path(p).suffix for p in new), new


# -- the policy --------------------------------------------------------------------------

POLICY: dict[str, Any] = {
    "schema_version": 1,
    "approved": True,
    "corpus": {"document_count": 3, "fingerprint": "sha256:" + "a" * 64},
    "langpack": {"id": "curator-en", "language_tag": "en", "version": "1.0.0",
                 "content_hash": "sha256:" + "b" * 64},
    "signals_impl_version": "corpus-curator-signals-1.0",
    "profile_digest": "sha256:" + "c" * 64,
    "approval": {"approver": "me", "date": "2026-12-03", "method": "manual",
                 "evidence": "profile"},
    "thresholds": [{"signal": "boilerplate_hits", "max": 3},
                   {"signal": "stopword_ratio", "min": 0.1}],
}

threshold_entries = st.lists(st.dictionaries(
    st.sampled_from(["signal", "min", "max", "x"]),
    st.sampled_from(["boilerplate_hits", "stopword_ratio", "nope", ""]) | values,
    max_size=4), max_size=4)


@examples(30)
@given(text=documents(sorted(POLICY), POLICY) | threshold_entries.map(
    lambda t: yaml_text({**POLICY, "thresholds": t})),
    allow=st.booleans())
@example(text=DEEP, allow=True)
@example(text=NOT_UTF8, allow=False)
@example(text=LAUGHS, allow=True)
@example(text=PYTHON_TAG, allow=True)
def test_any_policy_file_loads_or_is_refused_with_an_id(text: bytes, allow: bool) -> None:
    with sandbox() as root:
        (root / "policy.yaml").write_bytes(text)
        before = files_under(root)
        try:
            loaded = load_policy(root / "policy.yaml", allow_unvalidated=allow)
        except CuratorError as exc:
            refused_with_an_id(exc)
            assert exc.details.get("status") in {"unresolved", "unapproved"}, exc
        else:
            assert loaded.status in {"approved", "override_unvalidated"}
            loaded.resolved()
        assert files_under(root) == before


# -- the language pack -----------------------------------------------------------------------

PACK = REPO / "curator" / "langpacks" / "en"
PACK_FILES = sorted(p.name for p in PACK.iterdir())
TOML_NASTIES = [b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",  # past tomllib's recursion
                b"[pack]\n" + b"x = " + b"{a = " * 3000 + b"1" + b"}" * 3000 + b"\n",
                (PACK / "pack.toml").read_bytes().replace(b'"stopwords.txt"', b'"../../x"'),
                (PACK / "pack.toml").read_bytes().replace(b'"stopwords.txt"', b'"/etc/passwd"'),
                (PACK / "pack.toml").read_bytes().replace(b'"stopwords.txt"', b'"."'),
                b"\xef\xbb\xbf" + (PACK / "pack.toml").read_bytes(), b"\x00" * 10]


@given(target=st.sampled_from(PACK_FILES), how=st.sampled_from(["mutate", "replace", "delete"]),
       data=st.data())
def test_any_language_pack_loads_or_is_refused_with_an_id(target: str, how: str,
                                                         data: Any) -> None:
    with sandbox() as root:
        shutil.copytree(PACK, root / "en")
        path = root / "en" / target
        if how == "delete":
            path.unlink()
        elif how == "replace":
            path.write_bytes(data.draw(st.binary(max_size=300) | st.text(max_size=300).map(
                lambda t: t.encode("utf-8", "surrogatepass")) | st.sampled_from(TOML_NASTIES)))
        else:
            path.write_bytes(data.draw(mutated_text(path.read_bytes())))
        before = files_under(root)
        for load in (lambda: load_langpack(root, "en"), lambda: content_hash_of(root / "en")):
            try:
                load()
            except CuratorError as exc:
                refused_with_an_id(exc)
        assert files_under(root) == before
