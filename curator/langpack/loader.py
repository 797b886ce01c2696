"""Load and validate a language pack: ``<langpack_dir>/<tag>/pack.toml`` plus text files.

Every refusal is a :class:`~curator.errors.CuratorError` with one of the ids
``missing_langpack_dir``, ``language_pack_not_found``, ``langpack_tag_mismatch`` or
``language_pack_invalid``. The rules are listed in ``docs/langpacks.md``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tomllib
import unicodedata
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from curator.errors import CuratorError
from curator.langpack.model import DATA_CAPABILITIES, KNOWN_CAPABILITIES, LangPack

MANIFEST = "pack.toml"
SCHEMA_VERSION = 1
SOURCE_NAMES: tuple[str, ...] = ("stopwords", "charset", "boilerplate")
DEFAULT_TERMINATORS: tuple[str, ...] = (".", "!", "?")
#: values of ``langpack_dir`` that mean "use a default" -- there is none
_NO_DIR = frozenset({"", "bundled"})
#: a bare directory name usable as a BCP-47-style tag (``en``, ``pt-BR``, ``zh_Hant``)
_TAG_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_TOP_LEVEL = frozenset({"pack", "sources", "fold_map", "orthography", "capabilities", "notes"})
_PACK_KEYS = frozenset({"pack_id", "language_tag", "version", "schema"})


def _invalid(where: Path | str, message: str, **details: object) -> CuratorError:
    return CuratorError("language_pack_invalid", f"{where}: {message}", path=str(where), **details)


# ---------------------------------------------------------------------------
# content hash


def compute_content_hash(files: Mapping[str, bytes]) -> str:
    """The spec recipe over ``{relpath: bytes}`` (relpaths with forward slashes).

    ``"sha256:" + sha256("\\n".join(sorted(f"{relpath}\\t{sha256hex(bytes)}")))``.
    """
    lines = sorted(f"{rel}\t{hashlib.sha256(data).hexdigest()}" for rel, data in files.items())
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def content_hash_of(pack_dir: str | Path) -> str:
    """The ``content_hash`` of the pack in ``pack_dir`` (``pack.toml`` + its source files).

    Validates only what the hash depends on (the manifest parses, the source files
    exist inside the pack); use :func:`load_langpack` for full validation.
    """
    pack_dir = Path(pack_dir)
    manifest_path = pack_dir / MANIFEST
    if not manifest_path.is_file():
        raise CuratorError(
            "language_pack_not_found",
            f"no {MANIFEST} in {pack_dir}",
            path=str(pack_dir),
        )
    raw = _read_bytes(manifest_path)
    manifest = _parse_manifest(manifest_path, raw)
    files = {MANIFEST: raw}
    for name, spec in _source_specs(manifest_path, manifest).items():
        rel, data = _read_source_file(pack_dir, manifest_path, name, spec["file"])
        files[rel] = data
    return compute_content_hash(files)


# ---------------------------------------------------------------------------
# loading


def load_langpack(langpack_dir: str | Path | None, language_tag: str) -> LangPack:
    """Load and validate ``<langpack_dir>/<language_tag>/``.

    There is no default pack root: ``None``, ``""`` and ``"bundled"`` are refused
    (``missing_langpack_dir``). The directory is looked up by exact name first,
    then case-insensitively (BCP-47 tags are case-insensitive).
    """
    root = _check_root(langpack_dir)
    tag = _check_tag(language_tag)
    pack_dir = _find_pack_dir(root, tag)
    manifest_path = pack_dir / MANIFEST
    if not manifest_path.is_file():
        raise CuratorError(
            "language_pack_not_found",
            f"language pack {tag!r} has no {MANIFEST} in {pack_dir}",
            language=tag,
            path=str(pack_dir),
        )
    raw = _read_bytes(manifest_path)
    manifest = _parse_manifest(manifest_path, raw)
    header = _check_header(manifest_path, manifest)
    if header["language_tag"].casefold() != pack_dir.name.casefold():
        raise CuratorError(
            "langpack_tag_mismatch",
            f"{manifest_path}: language_tag {header['language_tag']!r} does not match "
            f"the pack directory name {pack_dir.name!r}",
            path=str(manifest_path),
            language_tag=header["language_tag"],
            directory=pack_dir.name,
        )

    files: dict[str, bytes] = {MANIFEST: raw}
    lines: dict[str, list[tuple[int, str]]] = {}
    paths: dict[str, Path] = {}
    sources = _source_specs(manifest_path, manifest)
    for name, spec in sources.items():
        rel, data = _read_source_file(pack_dir, manifest_path, name, spec["file"])
        files[rel] = data
        paths[name] = pack_dir / rel
        lines[name] = _text_lines(paths[name], data)

    stopwords = _stopwords(paths["stopwords"], lines["stopwords"])
    charset = frozenset(ch for _, line in lines["charset"] for ch in line)
    boilerplate = _boilerplate(paths["boilerplate"], lines["boilerplate"])
    fold_map = _fold_map(manifest_path, manifest.get("fold_map", {}))
    terminators = _terminators(manifest_path, manifest.get("orthography", {}))
    capabilities = _capabilities(manifest_path, manifest.get("capabilities"))
    notes = _notes(manifest_path, manifest.get("notes", {}))

    data_present = {
        "charset": bool(charset),
        "fold_map": bool(fold_map),
        "stopwords": bool(stopwords),
        "boilerplate": bool(boilerplate),
        "terminators": bool(terminators),
    }
    for capability in sorted(capabilities & DATA_CAPABILITIES.keys()):
        missing = [need for need in DATA_CAPABILITIES[capability] if not data_present[need]]
        if missing:
            raise _invalid(
                manifest_path,
                f"capability {capability!r} needs {' + '.join(DATA_CAPABILITIES[capability])}, "
                f"but the pack has no {', '.join(missing)}",
                capability=capability,
                missing=missing,
            )

    return LangPack(
        pack_id=header["pack_id"],
        language_tag=header["language_tag"],
        version=header["version"],
        root=str(pack_dir.resolve()),
        content_hash=compute_content_hash(files),
        capabilities=capabilities,
        stopwords=stopwords,
        charset=charset,
        boilerplate=boilerplate,
        fold_map=fold_map,
        sentence_terminators=terminators,
        notes=notes,
        sources={name: dict(spec) for name, spec in sources.items()},
    )


# ---------------------------------------------------------------------------
# locating the pack


def _check_root(langpack_dir: str | Path | None) -> Path:
    if langpack_dir is None or (
        isinstance(langpack_dir, str) and langpack_dir.strip().casefold() in _NO_DIR
    ):
        raise CuratorError(
            "missing_langpack_dir",
            f"langpack_dir is {langpack_dir!r}: there is no default or bundled pack root; "
            "set langpack_dir to a directory holding <tag>/pack.toml (e.g. the repo's langpacks/)",
            langpack_dir=langpack_dir,
        )
    root = Path(langpack_dir)
    if not root.is_dir():
        raise CuratorError(
            "language_pack_not_found",
            f"langpack_dir {str(root)!r} is not a directory",
            langpack_dir=str(root),
        )
    return root


def _check_tag(language_tag: object) -> str:
    if not isinstance(language_tag, str) or not _TAG_RE.fullmatch(language_tag):
        raise CuratorError(
            "language_pack_invalid",
            f"language tag {language_tag!r} is not a bare directory name "
            "(letters, digits, '-' and '_'; no path separators or dots)",
            language=language_tag,
        )
    return language_tag


def _find_pack_dir(root: Path, tag: str) -> Path:
    exact = root / tag
    if exact.is_dir():
        return exact
    folded = [p for p in root.iterdir() if p.is_dir() and p.name.casefold() == tag.casefold()]
    if len(folded) == 1:
        return folded[0]
    available = sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file())
    raise CuratorError(
        "language_pack_not_found",
        f"no language pack {tag!r} in {root}"
        + (" (several directories match case-insensitively)" if folded else "")
        + f"; available: {', '.join(available) or 'none'}",
        language=tag,
        langpack_dir=str(root),
        available=available,
    )


# ---------------------------------------------------------------------------
# the manifest


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _invalid(path, f"cannot be read: {exc}") from exc


def _parse_manifest(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        manifest = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _invalid(path, f"is not UTF-8: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise _invalid(path, f"is not valid TOML: {exc}") from exc
    except RecursionError as exc:  # arrays or tables nested thousands deep
        raise _invalid(path, "is not valid TOML: nested past the parser's recursion "
                       "limit") from exc
    unknown = sorted(set(manifest) - _TOP_LEVEL)
    if unknown:
        raise _invalid(
            path, f"unknown top-level keys {unknown}; allowed: {sorted(_TOP_LEVEL)}", keys=unknown
        )
    for table in _TOP_LEVEL & manifest.keys():
        if not isinstance(manifest[table], dict):
            raise _invalid(path, f"[{table}] must be a table")
    return manifest


def _nonempty_str(path: Path, table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _invalid(path, f"{where}.{key} must be a non-empty string, got {value!r}", key=key)
    return value


def _check_header(path: Path, manifest: Mapping[str, Any]) -> dict[str, str]:
    if "pack" not in manifest:
        raise _invalid(path, "missing the [pack] table")
    pack = manifest["pack"]
    unknown = sorted(set(pack) - _PACK_KEYS)
    if unknown:
        raise _invalid(path, f"unknown keys in [pack]: {unknown}", keys=unknown)
    schema = pack.get("schema")
    if type(schema) is not int or schema != SCHEMA_VERSION:
        raise _invalid(
            path, f"[pack] schema must be {SCHEMA_VERSION}, got {schema!r}", schema=schema
        )
    return {
        key: _nonempty_str(path, pack, key, "pack")
        for key in ("pack_id", "language_tag", "version")
    }


def _source_specs(path: Path, manifest: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    sources = manifest.get("sources")
    if not isinstance(sources, dict):
        raise _invalid(path, "missing the [sources] table")
    unknown = sorted(set(sources) - set(SOURCE_NAMES))
    if unknown:
        raise _invalid(path, f"unknown [sources] entries {unknown}", keys=unknown)
    specs: dict[str, dict[str, str]] = {}
    for name in SOURCE_NAMES:
        entry = sources.get(name)
        if not isinstance(entry, dict):
            raise _invalid(path, f"missing [sources.{name}] with file, origin and license")
        spec = {
            k: _nonempty_str(path, entry, k, f"sources.{name}")
            for k in ("file", "origin", "license")
        }
        extra = {k: v for k, v in entry.items() if k not in spec}
        bad = [k for k, v in extra.items() if not isinstance(v, str)]
        if bad:
            raise _invalid(path, f"[sources.{name}] keys {bad} must be strings", keys=bad)
        specs[name] = {**spec, **extra}
    return specs


def _read_source_file(
    pack_dir: Path, manifest_path: Path, name: str, file: str
) -> tuple[str, bytes]:
    """Resolve ``[sources.<name>] file`` inside the pack; return (relpath, bytes)."""
    what = f"[sources.{name}] file {file!r}"
    if (
        PurePosixPath(file).is_absolute()
        or PureWindowsPath(file).is_absolute()
        or PureWindowsPath(file).drive
        or "\\" in file
        or "\0" in file
        or ".." in PurePosixPath(file).parts
    ):
        raise _invalid(
            manifest_path,
            f"{what} must be a relative path with '/' inside the pack directory",
            file=file,
        )
    rel = PurePosixPath(os.path.normpath(file)).as_posix()
    target = pack_dir / rel
    try:
        resolved = target.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise _invalid(manifest_path, f"{what} does not exist", file=file) from exc
    if not resolved.is_relative_to(pack_dir.resolve()):
        raise _invalid(
            manifest_path,
            f"{what} resolves outside the pack directory (to {resolved})",
            file=file,
        )
    if not resolved.is_file():
        raise _invalid(manifest_path, f"{what} is not a regular file", file=file)
    return rel, _read_bytes(target)


# ---------------------------------------------------------------------------
# text files and tables


def _text_lines(path: Path, data: bytes) -> list[tuple[int, str]]:
    """(line number, line) for each kept line: stripped, NFC, no blanks or ``#`` lines."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _invalid(path, f"is not UTF-8: {exc}") from exc
    kept: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = unicodedata.normalize("NFC", line.strip())
        if line and not line.startswith("#"):
            kept.append((number, line))
    return kept


def _stopwords(path: Path, lines: list[tuple[int, str]]) -> frozenset[str]:
    for number, line in lines:
        if any(ch.isspace() for ch in line):
            raise _invalid(
                f"{path}:{number}",
                f"a stopword line holds one word, got {line!r}",
                file=str(path),
                line=number,
            )
    return frozenset(line for _, line in lines)


def _boilerplate(path: Path, lines: list[tuple[int, str]]) -> tuple[str, ...]:
    patterns: dict[str, None] = {}
    for number, line in lines:
        where = f"{path}:{number}"
        try:
            compiled = re.compile(line)
        except re.error as exc:
            raise _invalid(
                where, f"invalid regular expression {line!r}: {exc}", file=str(path), line=number
            ) from exc
        if compiled.search("") is not None:
            raise _invalid(
                where,
                f"pattern {line!r} matches the empty string (it would match everything)",
                file=str(path),
                line=number,
            )
        patterns.setdefault(line, None)
    return tuple(patterns)


def _fold_map(path: Path, table: Mapping[str, Any]) -> dict[str, str]:
    fold: dict[str, str] = {}
    for key, value in table.items():
        src = unicodedata.normalize("NFC", key)
        if not isinstance(value, str):
            raise _invalid(path, f"[fold_map] {key!r} must map to a string, got {value!r}")
        dst = unicodedata.normalize("NFC", value)
        if len(src) != 1:
            raise _invalid(path, f"[fold_map] key {key!r} must be exactly one character")
        if dst == src:
            raise _invalid(path, f"[fold_map] {key!r} maps to itself")
        if src in fold:
            raise _invalid(path, f"[fold_map] {key!r} is given twice (after NFC)")
        fold[src] = dst
    return fold


def _terminators(path: Path, orthography: Mapping[str, Any]) -> tuple[str, ...]:
    unknown = sorted(set(orthography) - {"sentence_terminators"})
    if unknown:
        raise _invalid(path, f"unknown keys in [orthography]: {unknown}", keys=unknown)
    value = orthography.get("sentence_terminators", list(DEFAULT_TERMINATORS))
    if not isinstance(value, list) or not all(
        isinstance(t, str) and t and not any(ch.isspace() for ch in t) for t in value
    ):
        raise _invalid(
            path,
            "[orthography] sentence_terminators must be a list of non-empty strings "
            f"without whitespace, got {value!r}",
        )
    return tuple(dict.fromkeys(unicodedata.normalize("NFC", t) for t in value))


def _capabilities(path: Path, table: Any) -> frozenset[str]:
    if not isinstance(table, dict) or "supports" not in table:
        raise _invalid(path, "missing [capabilities] supports")
    unknown_keys = sorted(set(table) - {"supports"})
    if unknown_keys:
        raise _invalid(path, f"unknown keys in [capabilities]: {unknown_keys}", keys=unknown_keys)
    supports = table["supports"]
    if not isinstance(supports, list) or not all(isinstance(s, str) for s in supports):
        raise _invalid(path, f"[capabilities] supports must be a list of names, got {supports!r}")
    if not supports:
        raise _invalid(path, "[capabilities] supports is empty")
    unknown = sorted(set(supports) - KNOWN_CAPABILITIES)
    if unknown:
        raise _invalid(
            path,
            f"unknown capabilities {unknown}; known: {sorted(KNOWN_CAPABILITIES)}",
            capabilities=unknown,
        )
    return frozenset(supports)


def _json_like(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str | int | bool):
        return True
    if isinstance(value, list):
        return all(_json_like(v) for v in value)
    if isinstance(value, dict):
        return all(_json_like(v) for v in value.values())
    return False


def _notes(path: Path, notes: Mapping[str, Any]) -> dict[str, Any]:
    if not _json_like(dict(notes)):
        raise _invalid(
            path,
            "[notes] may hold only strings, numbers, booleans, arrays and tables "
            "(reports are JSON; no dates or non-finite numbers)",
        )
    return dict(notes)
