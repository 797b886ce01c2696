"""Language packs: loading, every validation rule, the content hash, the shipped packs."""

# ruff: noqa: RUF001  (Russian text is Cyrillic on purpose)

from __future__ import annotations

import hashlib
import itertools
import json
import pickle
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.langpack import (
    DATA_CAPABILITIES,
    PACKAGED_LANGPACK_DIR,
    WRITING_SYSTEM,
    LangPack,
    compute_content_hash,
    content_hash_of,
    load_langpack,
    resolve_langpack_dir,
)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "curator" / "langpacks"
LOADED_FILES = ("pack.toml", "stopwords.txt", "charset.txt", "boilerplate.txt")

MANIFEST = """\
[pack]
pack_id = "test-xx"
language_tag = "xx"
version = "0.1"
schema = 1

[sources.stopwords]
file = "stopwords.txt"
origin = "hand-written for the test"
license = "CC0-1.0"

[sources.charset]
file = "charset.txt"
origin = "hand-written for the test"
license = "CC0-1.0"

[sources.boilerplate]
file = "boilerplate.txt"
origin = "hand-written for the test"
license = "CC0-1.0"

[fold_map]
"ä" = "ae"

[orthography]
sentence_terminators = [".", "!"]

[capabilities]
supports = ["script_ratio", "diacritic_ratio", "stopword_ratio", "stopword_ratio_folded",
            "boilerplate_hits", "sentence_end_ratio", "word_segmentation"]

[notes]
purpose = "tests"
"""


def _recipe(pack_dir: Path, relpaths: list[str]) -> str:
    """The spec recipe, written out independently of the loader."""
    lines = [
        rel + "\t" + hashlib.sha256((pack_dir / rel).read_bytes()).hexdigest() for rel in relpaths
    ]
    digest = hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()
    return "sha256:" + digest


def _write_pack(root: Path, tag: str = "xx") -> Path:
    pack = root / tag
    pack.mkdir(parents=True)
    (pack / "pack.toml").write_text(MANIFEST.replace('"xx"', f'"{tag}"'), encoding="utf-8")
    (pack / "stopwords.txt").write_text("# stopwords\nthe\n\nand\n", encoding="utf-8")
    (pack / "charset.txt").write_text("abc\nä\n", encoding="utf-8")
    (pack / "boilerplate.txt").write_text(
        "# patterns\n(?i)\\bclick here\\b\n(?i)all rights reserved\n", encoding="utf-8"
    )
    return pack


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return _write_pack(tmp_path / "packs")


def _edit(name: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(pack: Path) -> None:
        text = (pack / name).read_text(encoding="utf-8")
        assert old in text, f"test bug: {old!r} not in {name}"
        (pack / name).write_text(text.replace(old, new, 1), encoding="utf-8")

    return apply


def _write(name: str, content: str | bytes) -> Callable[[Path], None]:
    def apply(pack: Path) -> None:
        data = content.encode() if isinstance(content, str) else content
        (pack / name).write_bytes(data)

    return apply


def _manifest(old: str, new: str) -> Callable[[Path], None]:
    return _edit("pack.toml", old, new)


def _supports(*caps: str) -> Callable[[Path], None]:
    listed = ", ".join(f'"{c}"' for c in caps)
    start = 'supports = ["script_ratio"'
    end = '"word_segmentation"]'

    def apply(pack: Path) -> None:
        text = (pack / "pack.toml").read_text(encoding="utf-8")
        i, j = text.index(start), text.index(end) + len(end)
        (pack / "pack.toml").write_text(
            text[:i] + f"supports = [{listed}]" + text[j:], encoding="utf-8"
        )

    return apply


def _cut(start: str, end: str) -> Callable[[Path], None]:
    """Remove the manifest text from ``start`` up to (not including) ``end``."""

    def apply(pack: Path) -> None:
        text = (pack / "pack.toml").read_text(encoding="utf-8")
        i, j = text.index(start), text.index(end)
        (pack / "pack.toml").write_text(text[:i] + text[j:], encoding="utf-8")

    return apply


def _then(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def apply(pack: Path) -> None:
        for step in steps:
            step(pack)

    return apply


def _file_is_a_directory(pack: Path) -> None:
    (pack / "d").mkdir()
    _manifest('file = "charset.txt"', 'file = "d"')(pack)


def _symlink_out(pack: Path) -> None:
    outside = pack.parent.parent / "outside.txt"
    outside.write_text("the\n", encoding="utf-8")
    (pack / "stopwords.txt").unlink()
    (pack / "stopwords.txt").symlink_to(outside)


# ---------------------------------------------------------------------------
# shipped packs


@pytest.mark.parametrize("tag", ["en", "ru"])
def test_shipped_pack_loads_and_describes(tag: str) -> None:
    lp = load_langpack(SHIPPED, tag)
    assert lp.language_tag == tag and lp.pack_id == f"curator-{tag}"
    expected = set(DATA_CAPABILITIES) | {"word_segmentation", "ascii_digits", "ascii_punctuation"}
    if tag == "en":
        expected.add("ascii_alphabet")
    assert lp.capabilities == expected
    d = lp.describe()
    assert set(d) == {
        "pack_id", "language_tag", "version", "content_hash", "capabilities", "stopwords",
        "charset", "boilerplate_patterns", "fold_map_entries", "sentence_terminators", "notes",
    }  # fmt: skip
    assert d["stopwords"] == len(lp.stopwords) > 300
    assert d["charset"] == len(lp.charset)
    assert 15 <= d["boilerplate_patterns"] == len(lp.boilerplate) <= 26
    assert d["fold_map_entries"] == len(lp.fold_map) > 0
    assert d["capabilities"] == sorted(expected)
    assert d["content_hash"] == _recipe(SHIPPED / tag, list(LOADED_FILES))
    assert d["notes"] and all(isinstance(v, str) for v in d["notes"].values())
    json.dumps(d)  # reports are JSON
    for source in ("stopwords", "charset", "boilerplate"):
        assert lp.sources[source]["origin"] and lp.sources[source]["license"]
    assert lp.sources["stopwords"]["license"] == "MIT"
    assert "spaCy 3." in lp.sources["stopwords"]["origin"]
    assert lp.sources["charset"]["license"] == lp.sources["boilerplate"]["license"] == "Apache-2.0"
    assert all(not ch.isspace() for ch in lp.charset)
    assert all(w == unicodedata.normalize("NFC", w) for w in lp.stopwords)


def test_shipped_en_contents() -> None:
    lp = load_langpack(SHIPPED, "en")
    assert {"the", "and", "of", "because"} <= lp.stopwords
    assert set("abcxyzABCXYZéïñæœ") <= lp.charset
    assert "-" not in lp.charset and "#" not in lp.charset
    assert (
        lp.fold("Encyclopædia ﬁnal naïve “quoted” straße")
        == 'Encyclopaedia final naive "quoted" strasse'
    )
    assert lp.sentence_terminators == (".", "!", "?")


def test_shipped_ru_contents() -> None:
    lp = load_langpack(SHIPPED, "ru")
    assert {"и", "в", "не", "что", "всё"} <= lp.stopwords
    alphabet = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
    assert lp.charset == frozenset(alphabet + alphabet.upper())
    assert not lp.supports("ascii_alphabet") and lp.supports("ascii_digits")
    assert lp.fold("Ёлка, йогурт, «всё»") == 'Елка, иогурт, "все"'


@pytest.mark.parametrize("tag", ["en", "ru"])
def test_shipped_boilerplate_matches_its_examples(tag: str) -> None:
    """Each pattern is preceded by an ``# e.g.:`` line that it must match."""
    lines = (SHIPPED / tag / "boilerplate.txt").read_text(encoding="utf-8").splitlines()
    lp = load_langpack(SHIPPED, tag)
    checked = 0
    for prev, line in itertools.pairwise(lines):
        if line.strip() and not line.startswith("#"):
            assert prev.startswith("# e.g.: "), f"no example before {line!r}"
            assert re.search(line.strip(), prev.removeprefix("# e.g.: ")), (line, prev)
            checked += 1
    assert checked == len(lp.boilerplate)


PROSE = {
    "en": (
        "The committee met on Tuesday to review the proposal. After a long discussion, "
        "members agreed that the bridge needed repairs before winter. She said she would "
        "read more about the history of the river and write to the council about the costs, "
        "the schedule and the rights of the people who live along its banks. Cookies were "
        "served afterwards, and nobody clicked on anything.\nHe followed us to the station."
    ),
    "ru": (
        "Комитет собрался во вторник, чтобы рассмотреть предложение. После долгого обсуждения "
        "все согласились, что мост нужно отремонтировать до зимы. Она сказала, что хочет "
        "подробнее узнать об истории реки и написать в совет о расходах и о правах людей, "
        "которые живут на её берегах. Он не мог читать дальше.\nПотом все поднялись наверх и "
        "долго смотрели на город."
    ),
}


@pytest.mark.parametrize("tag", ["en", "ru"])
def test_shipped_boilerplate_is_quiet_on_ordinary_prose(tag: str) -> None:
    lp = load_langpack(SHIPPED, tag)
    text = unicodedata.normalize("NFC", PROSE[tag])
    assert [p.pattern for p in lp.boilerplate_regexes if p.search(text)] == []


@pytest.mark.parametrize("tag", ["en", "ru"])
def test_shipped_stopwords_are_the_spacy_list_verbatim(tag: str) -> None:
    """Every non-comment line of the file is a word; the file is sorted and duplicate-free."""
    raw = (SHIPPED / tag / "stopwords.txt").read_text(encoding="utf-8").splitlines()
    words = [w for w in raw if w and not w.startswith("#")]
    assert words == sorted(set(words))
    assert set(words) == load_langpack(SHIPPED, tag).stopwords


# ---------------------------------------------------------------------------
# loading a crafted pack


def test_crafted_pack_loads(pack: Path) -> None:
    lp = load_langpack(pack.parent, "xx")
    assert lp.stopwords == {"the", "and"}
    assert lp.charset == set("abcä")
    assert lp.boilerplate == ("(?i)\\bclick here\\b", "(?i)all rights reserved")
    assert lp.boilerplate_regexes[0].search("Please CLICK HERE now")
    assert lp.fold_map == {"ä": "ae"}
    assert lp.sentence_terminators == (".", "!")
    assert lp.notes == {"purpose": "tests"}
    assert lp.root == str(pack.resolve())
    assert pickle.loads(pickle.dumps(lp)) == lp
    assert pickle.loads(pickle.dumps(lp)).boilerplate_regexes[1].search("ALL RIGHTS RESERVED")


def test_tag_lookup_and_match_are_case_insensitive(pack: Path) -> None:
    assert load_langpack(pack.parent, "XX").language_tag == "xx"
    _manifest('language_tag = "xx"', 'language_tag = "XX"')(pack)
    assert load_langpack(str(pack.parent), "xx").language_tag == "XX"


def test_default_terminators_and_optional_tables(pack: Path) -> None:
    _manifest('[orthography]\nsentence_terminators = [".", "!"]\n', "")(pack)
    _manifest('[notes]\npurpose = "tests"\n', "")(pack)
    lp = load_langpack(pack.parent, "xx")
    assert lp.sentence_terminators == (".", "!", "?")
    assert lp.notes == {}


def test_text_files_nfc_comments_blanks_and_no_ranges(pack: Path) -> None:
    decomposed = unicodedata.normalize("NFD", "café")
    assert len(decomposed) == 5
    _write(
        "stopwords.txt",
        f"# a comment\n\n   \n  {decomposed}  \n\t# indented comment\r\nthe\r\n",
    )(pack)
    _write("charset.txt", f"a-z\n{unicodedata.normalize('NFD', 'é')}\n# xyz\nq#r\n")(pack)
    lp = load_langpack(pack.parent, "xx")
    assert lp.stopwords == {"café", "the"}
    assert "café" in lp.stopwords and decomposed not in lp.stopwords
    assert lp.charset == {"a", "-", "z", "é", "q", "#", "r"}  # no range, no combining mark
    assert "b" not in lp.charset


def test_duplicate_boilerplate_patterns_count_once(pack: Path) -> None:
    _write("boilerplate.txt", "(?i)click here\n(?i)click here\nlorem ipsum\n")(pack)
    assert load_langpack(pack.parent, "xx").boilerplate == ("(?i)click here", "lorem ipsum")


def test_extra_source_keys_are_kept(pack: Path) -> None:
    _manifest('license = "CC0-1.0"\n', 'license = "CC0-1.0"\nurl = "https://example.org"\n')(pack)
    assert load_langpack(pack.parent, "xx").sources["stopwords"]["url"] == "https://example.org"


def test_notes_keep_every_json_like_value_as_toml_gives_it(pack: Path) -> None:
    _manifest('purpose = "tests"', 'on = true\nn = 3\nx = 1.5\nl = [1, "a", {t = false}]')(pack)
    notes = load_langpack(pack.parent, "xx").notes
    assert notes == {"on": True, "n": 3, "x": 1.5, "l": [1, "a", {"t": False}]}
    assert [type(v) for v in notes.values()] == [bool, int, float, list]  # no coercion
    assert type(notes["l"][2]["t"]) is bool


def test_one_file_for_two_sources_is_hashed_once(pack: Path) -> None:
    _manifest('file = "charset.txt"', 'file = "./stopwords.txt"')(pack)
    lp = load_langpack(pack.parent, "xx")
    assert lp.charset == set("theand")
    assert lp.content_hash == _recipe(pack, ["pack.toml", "stopwords.txt", "boilerplate.txt"])


# ---------------------------------------------------------------------------
# content hash


def test_content_hash_is_the_recipe(pack: Path) -> None:
    lp = load_langpack(pack.parent, "xx")
    assert lp.content_hash == _recipe(pack, list(LOADED_FILES))
    assert content_hash_of(pack) == lp.content_hash
    assert compute_content_hash({}) == "sha256:" + hashlib.sha256(b"").hexdigest()


def test_content_hash_uses_forward_slash_relpaths(pack: Path) -> None:
    (pack / "lists").mkdir()
    (pack / "stopwords.txt").rename(pack / "lists" / "stopwords.txt")
    _manifest('file = "stopwords.txt"', 'file = "lists/stopwords.txt"')(pack)
    lp = load_langpack(pack.parent, "xx")
    assert lp.content_hash == _recipe(
        pack, ["pack.toml", "lists/stopwords.txt", "charset.txt", "boilerplate.txt"]
    )


@pytest.mark.parametrize("name", LOADED_FILES)
def test_content_hash_changes_with_one_byte_of_a_loaded_file(pack: Path, name: str) -> None:
    before = load_langpack(pack.parent, "xx")
    with (pack / name).open("ab") as fh:
        fh.write(b"\n")  # one byte; the loaded data stays the same
    after = load_langpack(pack.parent, "xx")
    assert after.content_hash != before.content_hash
    assert after.content_hash == _recipe(pack, list(LOADED_FILES))
    assert (after.stopwords, after.charset, after.boilerplate) == (
        before.stopwords, before.charset, before.boilerplate,
    )  # fmt: skip


def test_content_hash_ignores_unrelated_files(pack: Path) -> None:
    before = load_langpack(pack.parent, "xx").content_hash
    (pack / "README.md").write_text("about this pack\n")
    (pack / "LICENSE-stopwords.txt").write_text("MIT ...\n")
    assert load_langpack(pack.parent, "xx").content_hash == before
    (pack / "README.md").write_text("about this pack, changed\n")
    assert load_langpack(pack.parent, "xx").content_hash == before == content_hash_of(pack)


@pytest.mark.parametrize("tag", ["en", "ru"])
def test_shipped_hash_ignores_the_licence_copy(tag: str) -> None:
    assert (SHIPPED / tag / "LICENSE-spacy-stopwords.txt").is_file()
    assert content_hash_of(SHIPPED / tag) == _recipe(SHIPPED / tag, list(LOADED_FILES))


# ---------------------------------------------------------------------------
# refusals


@pytest.mark.parametrize("value", ["", "  "])
def test_missing_langpack_dir(value: str) -> None:
    with pytest.raises(CuratorError) as err:
        load_langpack(value, "en")
    assert err.value.error_id == "missing_langpack_dir"
    assert err.value.exit_code == 2


@pytest.mark.parametrize("value", [None, "bundled", "BUNDLED", " bundled "])
@pytest.mark.parametrize("tag", ["en", "ru"])
def test_unset_langpack_dir_is_the_packaged_packs(value: str | None, tag: str) -> None:
    """No ``langpack_dir`` (or ``bundled``) loads the packs inside the package, wherever
    the process runs: here the checkout's ``curator/langpacks`` (an installed wheel's in
    tests/packaging)."""
    assert resolve_langpack_dir(value) == PACKAGED_LANGPACK_DIR == SHIPPED.resolve()
    pack = load_langpack(value, tag)
    assert pack.root == str((SHIPPED / tag).resolve())
    assert pack.content_hash == load_langpack(SHIPPED, tag).content_hash


def test_not_found(tmp_path: Path, pack: Path) -> None:
    cases: list[tuple[Path, str]] = [
        (pack.parent, "zz"),  # no such pack
        (tmp_path / "nowhere", "xx"),  # root does not exist
        (pack / "pack.toml", "xx"),  # root is a file
    ]
    (pack.parent / "empty").mkdir()
    cases.append((pack.parent, "empty"))  # a directory without pack.toml
    for root, tag in cases:
        with pytest.raises(CuratorError) as err:
            load_langpack(root, tag)
        assert err.value.error_id == "language_pack_not_found", (root, tag)
    with pytest.raises(CuratorError) as err:
        load_langpack(pack.parent, "zz")
    assert err.value.details["available"] == ["xx"]
    with pytest.raises(CuratorError) as err:
        content_hash_of(pack.parent / "empty")
    assert err.value.error_id == "language_pack_not_found"


def test_tag_mismatch(pack: Path) -> None:
    _manifest('language_tag = "xx"', 'language_tag = "yy"')(pack)
    with pytest.raises(CuratorError) as err:
        load_langpack(pack.parent, "xx")
    assert err.value.error_id == "langpack_tag_mismatch"
    assert err.value.details["directory"] == "xx"


@pytest.mark.parametrize("tag", ["", "../xx", "xx/", "a/b", ".", "..", "x x", ".xx", None, 3])
def test_tag_must_be_a_bare_directory_name(pack: Path, tag: object) -> None:
    with pytest.raises(CuratorError) as err:
        load_langpack(pack.parent, tag)  # type: ignore[arg-type]
    assert err.value.error_id == "language_pack_invalid"


INVALID: dict[str, Callable[[Path], None]] = {
    # manifest syntax and header
    "bad_toml": _manifest("[pack]", "[pack"),
    "manifest_not_utf8": _write("pack.toml", b"\xff\xfe[pack]\n"),
    "unknown_top_level_table": _manifest("[notes]", "[notez]"),
    "pack_table_missing": _cut("[pack]", "[sources.stopwords]"),
    "unknown_pack_key": _manifest('version = "0.1"', 'version = "0.1"\nname = "x"'),
    "schema_2": _manifest("schema = 1", "schema = 2"),
    "schema_missing": _manifest("schema = 1", ""),
    "schema_string": _manifest("schema = 1", 'schema = "1"'),
    "schema_bool": _manifest("schema = 1", "schema = true"),
    "pack_id_missing": _manifest('pack_id = "test-xx"', ""),
    "pack_id_empty": _manifest('pack_id = "test-xx"', 'pack_id = " "'),
    "version_not_string": _manifest('version = "0.1"', "version = 1"),
    "language_tag_missing": _manifest('language_tag = "xx"', ""),
    # sources
    "sources_missing": _cut("[sources.stopwords]", "[fold_map]"),
    "source_entry_missing": _cut("[sources.charset]", "[sources.boilerplate]"),
    "unknown_source_entry": _manifest("[sources.charset]", "[sources.charsets]"),
    "file_missing_key": _manifest('file = "charset.txt"', ""),
    "origin_empty": _manifest('origin = "hand-written for the test"', 'origin = ""'),
    "license_missing": _manifest('license = "CC0-1.0"', ""),
    "extra_source_key_not_string": _manifest('license = "CC0-1.0"', 'license = "CC0-1.0"\nn = 1'),
    "file_does_not_exist": _manifest('file = "charset.txt"', 'file = "nope.txt"'),
    "file_is_a_directory": _file_is_a_directory,
    "text_not_utf8": _write("stopwords.txt", b"the\n\xff\n"),
    # capabilities
    "capabilities_missing": _manifest("[capabilities]", "[capabilities.x]"),
    "supports_empty": _supports(),
    "supports_not_list": _then(_supports(), _manifest("supports = []", 'supports = "x"')),
    "unknown_capability": _supports("word_segmentation", "shouting_ratio"),
    "script_ratio_without_charset": _then(
        _supports("script_ratio"), _write("charset.txt", "# nothing\n\n")
    ),
    "stopword_ratio_without_stopwords": _write("stopwords.txt", "# nothing\n"),
    "boilerplate_hits_without_patterns": _write("boilerplate.txt", ""),
    "diacritic_ratio_without_fold_map": _manifest('"ä" = "ae"', ""),
    "sentence_end_ratio_without_terminators": _manifest('[".", "!"]', "[]"),
    # fold map, orthography, notes, text contents
    "fold_key_two_chars": _manifest('"ä" = "ae"', '"ae" = "e"'),
    "fold_key_empty": _manifest('"ä" = "ae"', '"" = "e"'),
    "fold_to_itself": _manifest('"ä" = "ae"', '"ä" = "ä"'),
    "fold_to_itself_after_nfc": _manifest(
        '"ä" = "ae"', f'"ä" = "{unicodedata.normalize("NFD", "ä")}"'
    ),
    "fold_value_not_string": _manifest('"ä" = "ae"', '"ä" = 1'),
    "fold_key_twice_after_nfc": _manifest(
        '"ä" = "ae"', f'"ä" = "ae"\n"{unicodedata.normalize("NFD", "ä")}" = "a"'
    ),
    "terminator_with_space": _manifest('[".", "!"]', '[". "]'),
    "terminators_not_list": _manifest('[".", "!"]', '"."'),
    "unknown_orthography_key": _manifest("[orthography]", "[orthography]\nquotes = 1"),
    "notes_with_a_date": _manifest('purpose = "tests"', "when = 2024-01-01"),
    "notes_not_a_table": _then(
        _cut("[notes]", 'purpose = "tests"'),
        _manifest('purpose = "tests"', ""),
        _manifest("[pack]", 'notes = "x"\n[pack]'),
    ),
    "stopword_line_with_space": _write("stopwords.txt", "the\nof the\n"),
    "regex_invalid": _write("boilerplate.txt", "(?i)fine\n[unclosed\n"),
    "regex_matches_empty": _write("boilerplate.txt", "(?i)(?:click here)?\n"),
    # a value of the wrong type where a table, number, string or list goes (strict: no coercion)
    "pack_not_a_table": _then(
        _cut("[pack]", "[sources.stopwords]"),
        _manifest("[sources.stopwords]", "pack = 1\n[sources.stopwords]"),
    ),
    "sources_not_a_table": _then(
        _cut("[sources.stopwords]", "[fold_map]"), _manifest("[pack]", "sources = 1\n[pack]")
    ),
    "source_entry_not_a_table": _then(
        _cut("[sources.charset]", "[sources.boilerplate]"),
        _manifest("[sources.boilerplate]", 'charset = "charset.txt"\n[sources.boilerplate]'),
    ),
    "schema_float": _manifest("schema = 1", "schema = 1.0"),
    "pack_id_number": _manifest('pack_id = "test-xx"', "pack_id = 5"),
    "file_number": _manifest('file = "charset.txt"', "file = 3"),
    "fold_map_not_a_table": _then(
        _cut("[fold_map]", "[orthography]"), _manifest("[pack]", "fold_map = 1\n[pack]")
    ),
    "fold_value_a_table": _manifest('[fold_map]\n"ä" = "ae"', "[fold_map.x]"),
    "terminator_number": _manifest('[".", "!"]', '[".", 1]'),
    "terminator_empty": _manifest('[".", "!"]', '[""]'),
    "supports_item_not_a_string": _then(
        _supports("script_ratio"), _manifest('["script_ratio"]', '["script_ratio", 1]')
    ),
    "notes_infinite": _manifest('purpose = "tests"', "x = inf"),
    "notes_nested_date": _manifest('purpose = "tests"', "x = [1, {at = 1979-05-27T07:32:00Z}]"),
    "notes_nested_too_deep": _manifest('purpose = "tests"', "x = " + "[" * 300 + "]" * 300),
    # several faults: the typo is reported, not the key it misspells
    "typo_before_missing": _manifest("schema = 1", "shema = 1"),
}


#: what each refusal's message must say (so a case cannot pass for an unrelated reason)
REASON = {
    "bad_toml": "not valid TOML",
    "manifest_not_utf8": "not UTF-8",
    "unknown_top_level_table": "unknown top-level keys ['notez']",
    "pack_table_missing": "missing the [pack] table",
    "unknown_pack_key": "unknown keys in [pack]: ['name']",
    "schema_2": "schema must be 1",
    "schema_missing": "schema must be 1",
    "schema_string": "schema must be 1",
    "schema_bool": "schema must be 1",
    "pack_id_missing": "pack.pack_id must be a non-empty string",
    "pack_id_empty": "pack.pack_id must be a non-empty string",
    "version_not_string": "pack.version must be a non-empty string",
    "language_tag_missing": "pack.language_tag must be a non-empty string",
    "sources_missing": "missing the [sources] table",
    "source_entry_missing": "missing [sources.charset]",
    "unknown_source_entry": "unknown [sources] entries ['charsets']",
    "file_missing_key": "sources.charset.file must be a non-empty string",
    "origin_empty": "sources.stopwords.origin must be a non-empty string",
    "license_missing": "sources.stopwords.license must be a non-empty string",
    "extra_source_key_not_string": "must be strings",
    "file_does_not_exist": "'nope.txt' does not exist",
    "file_is_a_directory": "is not a regular file",
    "text_not_utf8": "stopwords.txt: is not UTF-8",
    "capabilities_missing": "missing [capabilities] supports",
    "supports_empty": "supports is empty",
    "supports_not_list": "supports must be a list",
    "unknown_capability": "unknown capabilities ['shouting_ratio']",
    "script_ratio_without_charset": "'script_ratio' needs charset",
    "stopword_ratio_without_stopwords": "'stopword_ratio' needs stopwords",
    "boilerplate_hits_without_patterns": "'boilerplate_hits' needs boilerplate",
    "diacritic_ratio_without_fold_map": "but the pack has no fold_map",
    "sentence_end_ratio_without_terminators": "but the pack has no terminators",
    "fold_key_two_chars": "must be exactly one character",
    "fold_key_empty": "must be exactly one character",
    "fold_to_itself": "maps to itself",
    "fold_to_itself_after_nfc": "maps to itself",
    "fold_value_not_string": "must map to a string",
    "fold_key_twice_after_nfc": "given twice",
    "terminator_with_space": "sentence_terminators must be a list",
    "terminators_not_list": "sentence_terminators must be a list",
    "unknown_orthography_key": "unknown keys in [orthography]",
    "notes_with_a_date": "[notes] may hold only",
    "notes_not_a_table": "[notes] must be a table",
    "stopword_line_with_space": "stopwords.txt:2: a stopword line holds one word",
    "regex_invalid": "boilerplate.txt:2: invalid regular expression",
    "regex_matches_empty": "boilerplate.txt:1: pattern",
    "pack_not_a_table": "[pack] must be a table",
    "sources_not_a_table": "[sources] must be a table",
    "source_entry_not_a_table": "missing [sources.charset] with file, origin and license",
    "schema_float": "[pack] schema must be 1, got 1.0",
    "pack_id_number": "pack.pack_id must be a non-empty string, got 5",
    "file_number": "sources.charset.file must be a non-empty string, got 3",
    "fold_map_not_a_table": "[fold_map] must be a table",
    "fold_value_a_table": "[fold_map] 'x' must map to a string, got {}",
    "terminator_number": "sentence_terminators must be a list of non-empty strings without "
    "whitespace, got ['.', 1]",
    "terminator_empty": "sentence_terminators must be a list",
    "supports_item_not_a_string": "supports must be a list of names, got ['script_ratio', 1]",
    "notes_infinite": "[notes] may hold only",
    "notes_nested_date": "[notes] may hold only",
    "notes_nested_too_deep": "[notes] is nested too deeply",
    "typo_before_missing": "unknown keys in [pack]: ['shema']",
}


def test_every_invalid_case_has_a_reason() -> None:
    assert set(REASON) == set(INVALID)


@pytest.mark.parametrize("case", sorted(INVALID))
def test_language_pack_invalid(pack: Path, case: str) -> None:
    lp = load_langpack(pack.parent, "xx")  # valid before the edit
    assert lp.pack_id == "test-xx"
    INVALID[case](pack)
    with pytest.raises(CuratorError) as err:
        load_langpack(pack.parent, "xx")
    assert err.value.error_id == "language_pack_invalid", err.value.message
    assert str(pack) in err.value.message
    assert REASON[case] in err.value.message


TRAVERSAL: dict[str, Callable[[Path], None]] = {
    "dotdot": _manifest('file = "stopwords.txt"', 'file = "../outside.txt"'),
    "dotdot_inside_path": _manifest('file = "stopwords.txt"', 'file = "sub/../../outside.txt"'),
    "absolute": lambda p: _manifest(
        'file = "stopwords.txt"', f'file = "{(p.parent.parent / "outside.txt").as_posix()}"'
    )(p),
    "windows_drive": _manifest('file = "stopwords.txt"', 'file = "C:/outside.txt"'),
    "backslash": _manifest('file = "stopwords.txt"', 'file = "..\\\\outside.txt"'),
    "symlink_out": _symlink_out,
}


@pytest.mark.parametrize("case", sorted(TRAVERSAL))
def test_source_file_must_stay_inside_the_pack(pack: Path, case: str) -> None:
    (pack.parent.parent / "outside.txt").write_text("the\n", encoding="utf-8")
    TRAVERSAL[case](pack)
    for call in (lambda: load_langpack(pack.parent, "xx"), lambda: content_hash_of(pack)):
        with pytest.raises(CuratorError) as err:
            call()
        assert err.value.error_id == "language_pack_invalid"
        assert "[sources.stopwords] file" in err.value.message


def test_symlink_inside_the_pack_is_allowed(pack: Path) -> None:
    (pack / "stopwords.txt").rename(pack / "real.txt")
    (pack / "stopwords.txt").symlink_to(pack / "real.txt")
    assert load_langpack(pack.parent, "xx").stopwords == {"the", "and"}


def test_invalid_regex_names_file_and_line(pack: Path) -> None:
    _write("boilerplate.txt", "# header\n\n(?i)fine\n(?i)click (here\n")(pack)
    with pytest.raises(CuratorError) as err:
        load_langpack(pack.parent, "xx")
    assert err.value.error_id == "language_pack_invalid"
    assert f"{pack / 'boilerplate.txt'}:4" in err.value.message
    assert err.value.details["line"] == 4


def test_data_capability_refusal_names_what_is_missing(pack: Path) -> None:
    _write("stopwords.txt", "# only comments\n")(pack)
    with pytest.raises(CuratorError) as err:
        load_langpack(pack.parent, "xx")
    assert err.value.details["capability"] == "stopword_ratio"
    assert err.value.details["missing"] == ["stopwords"]


def test_writing_system_only_pack_needs_no_data(pack: Path) -> None:
    for name in ("stopwords.txt", "charset.txt", "boilerplate.txt"):
        _write(name, "")(pack)
    _manifest('"ä" = "ae"', "")(pack)
    _supports(*sorted(WRITING_SYSTEM))(pack)
    lp = load_langpack(pack.parent, "xx")
    assert lp.capabilities == WRITING_SYSTEM
    assert not lp.supports("stopword_ratio")
    assert isinstance(lp, LangPack) and lp.describe()["stopwords"] == 0
