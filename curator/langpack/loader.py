"""Load and validate a language pack: ``<langpack_dir>/<tag>/pack.toml`` plus text files.

Every refusal is a :class:`~curator.errors.CuratorError` with one of the ids
``missing_langpack_dir``, ``language_pack_not_found``, ``langpack_tag_mismatch`` or
``language_pack_invalid``. The rules are listed in ``docs/langpacks.md``; the
manifest's shape is the pydantic model :class:`~curator.langpack.manifest.Manifest`.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath

from curator.errors import CuratorError
from curator.langpack.manifest import Manifest, ManifestTables, invalid, parse_manifest
from curator.langpack.model import DATA_CAPABILITIES, LangPack

MANIFEST = "pack.toml"
#: the packs shipped inside the package (``curator/langpacks``, package data): the pack
#: root when ``langpack_dir`` is unset, so an installed wheel finds them on every node
PACKAGED_LANGPACK_DIR = Path(__file__).resolve().parents[1] / "langpacks"
#: a ``langpack_dir`` spelling that names the packaged packs (any case), like unset
_PACKAGED = "bundled"
#: a bare directory name usable as a BCP-47-style tag (``en``, ``pt-BR``, ``zh_Hant``)
_TAG_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


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
    tables = parse_manifest(manifest_path, raw, ManifestTables)
    files = {MANIFEST: raw}
    for name, spec in tables.sources.specs().items():
        rel, data = _read_source_file(pack_dir, manifest_path, name, spec["file"])
        files[rel] = data
    return compute_content_hash(files)


# ---------------------------------------------------------------------------
# loading


def load_langpack(langpack_dir: str | Path | None, language_tag: str) -> LangPack:
    """Load and validate ``<langpack_dir>/<language_tag>/``.

    ``langpack_dir`` ``None`` (or ``"bundled"``) is the packaged packs
    (:data:`PACKAGED_LANGPACK_DIR`); a blank string is refused (``missing_langpack_dir``).
    There is no default language. The directory is looked up by exact name first,
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
    manifest = parse_manifest(manifest_path, raw, Manifest)
    header = manifest.pack
    if header.language_tag.casefold() != pack_dir.name.casefold():
        raise CuratorError(
            "langpack_tag_mismatch",
            f"{manifest_path}: language_tag {header.language_tag!r} does not match "
            f"the pack directory name {pack_dir.name!r}",
            path=str(manifest_path),
            language_tag=header.language_tag,
            directory=pack_dir.name,
        )

    files: dict[str, bytes] = {MANIFEST: raw}
    lines: dict[str, list[tuple[int, str]]] = {}
    paths: dict[str, Path] = {}
    sources = manifest.sources.specs()
    for name, spec in sources.items():
        rel, data = _read_source_file(pack_dir, manifest_path, name, spec["file"])
        files[rel] = data
        paths[name] = pack_dir / rel
        lines[name] = _text_lines(paths[name], data)

    stopwords = _stopwords(paths["stopwords"], lines["stopwords"])
    charset = frozenset(ch for _, line in lines["charset"] for ch in line)
    boilerplate = _boilerplate(paths["boilerplate"], lines["boilerplate"])
    terminators = tuple(manifest.orthography.sentence_terminators)
    capabilities = frozenset(manifest.capabilities.supports)

    data_present = {
        "charset": bool(charset),
        "fold_map": bool(manifest.fold_map),
        "stopwords": bool(stopwords),
        "boilerplate": bool(boilerplate),
        "terminators": bool(terminators),
    }
    for capability in sorted(capabilities & DATA_CAPABILITIES.keys()):
        missing = [need for need in DATA_CAPABILITIES[capability] if not data_present[need]]
        if missing:
            raise invalid(  # a rule across files: the manifest's model cannot see the data
                manifest_path,
                f"capability {capability!r} needs {' + '.join(DATA_CAPABILITIES[capability])}, "
                f"but the pack has no {', '.join(missing)}",
                capability=capability,
                missing=missing,
            )

    return LangPack(
        pack_id=header.pack_id,
        language_tag=header.language_tag,
        version=header.version,
        root=str(pack_dir.resolve()),
        content_hash=compute_content_hash(files),
        capabilities=capabilities,
        stopwords=stopwords,
        charset=charset,
        boilerplate=boilerplate,
        fold_map=dict(manifest.fold_map),
        sentence_terminators=terminators,
        notes=dict(manifest.notes),
        sources=sources,
    )


# ---------------------------------------------------------------------------
# locating the pack


def blank_langpack_dir(langpack_dir: str | Path | None) -> bool:
    """Whether ``langpack_dir`` is a blank string (refused: ``missing_langpack_dir``).

    Unset (``None``) is not blank: it means the packaged packs."""
    return isinstance(langpack_dir, str) and not langpack_dir.strip()


def resolve_langpack_dir(langpack_dir: str | Path | None) -> Path:
    """The pack root that ``langpack_dir`` names.

    ``None`` and ``"bundled"`` (any case) name :data:`PACKAGED_LANGPACK_DIR`; any other
    value is a directory path. A blank string is refused (``missing_langpack_dir``).
    """
    if langpack_dir is None or (
        isinstance(langpack_dir, str) and langpack_dir.strip().casefold() == _PACKAGED
    ):
        return PACKAGED_LANGPACK_DIR
    if blank_langpack_dir(langpack_dir):
        raise CuratorError(
            "missing_langpack_dir",
            f"langpack_dir is {langpack_dir!r}, which names no directory: leave it unset for "
            "the packs installed with curator, or name a directory holding <tag>/pack.toml",
            langpack_dir=langpack_dir,
        )
    return Path(langpack_dir)


def _check_root(langpack_dir: str | Path | None) -> Path:
    root = resolve_langpack_dir(langpack_dir)
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
# reading files (the manifest's shape: curator/langpack/manifest.py)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise invalid(path, f"cannot be read: {exc}") from exc


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
        raise invalid(
            manifest_path,
            f"{what} must be a relative path with '/' inside the pack directory",
            file=file,
        )
    rel = PurePosixPath(os.path.normpath(file)).as_posix()
    target = pack_dir / rel
    try:
        resolved = target.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise invalid(manifest_path, f"{what} does not exist", file=file) from exc
    if not resolved.is_relative_to(pack_dir.resolve()):
        raise invalid(
            manifest_path,
            f"{what} resolves outside the pack directory (to {resolved})",
            file=file,
        )
    if not resolved.is_file():
        raise invalid(manifest_path, f"{what} is not a regular file", file=file)
    return rel, _read_bytes(target)


# ---------------------------------------------------------------------------
# text files


def _text_lines(path: Path, data: bytes) -> list[tuple[int, str]]:
    """(line number, line) for each kept line: stripped, NFC, no blanks or ``#`` lines."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise invalid(path, f"is not UTF-8: {exc}") from exc
    kept: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = unicodedata.normalize("NFC", line.strip())
        if line and not line.startswith("#"):
            kept.append((number, line))
    return kept


def _stopwords(path: Path, lines: list[tuple[int, str]]) -> frozenset[str]:
    for number, line in lines:
        if any(ch.isspace() for ch in line):
            raise invalid(
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
            raise invalid(
                where, f"invalid regular expression {line!r}: {exc}", file=str(path), line=number
            ) from exc
        if compiled.search("") is not None:
            raise invalid(
                where,
                f"pattern {line!r} matches the empty string (it would match everything)",
                file=str(path),
                line=number,
            )
        patterns.setdefault(line, None)
    return tuple(patterns)
