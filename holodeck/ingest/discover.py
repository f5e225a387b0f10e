"""Find the files a vectorstore tool ingests, and say why every other file is left out.

Discovery only lists: one ``scandir`` per folder and one ``stat`` per file, never a read, so a
large folder is listed quickly and the ingest plan (new / changed / unchanged / deleted) can
be made before any conversion is paid for.

Rules users rely on:

- ``source`` may be one file or a folder, walked recursively; results sorted by ``rel_path``.
- Only the tool's file types are ingested (by default the five of the tool contract,
  docs/contract.md: ``.txt .md .pdf .csv .json``, any letter case; ``file_types`` adds
  ``.docx .pptx .xlsx .html .htm .adoc``); every other file, empty files, unreadable files and
  other skipped entries are listed in ``Discovery.skipped`` with their reason (the pipeline
  warns about them, once per run).
- Hidden files and folders (name starting with ``.``: ``.git``, ``.holodeck``) are left out
  silently: they are tooling, not documents.
- Files and folders matched by the tool's ``exclude`` patterns or by a ``.holodeckignore``
  file in the source folder (both gitignore syntax, via pathspec) are left out silently
  too: the user asked for it. An excluded folder is not walked at all.
- Nothing outside ``source`` is read: a symlink (to a file or a folder) whose resolved target
  lies outside the resolved ``source`` is skipped.
- Symlinked folders are never followed, even when they point inside ``source``: following
  them could loop and would ingest the same files twice under two names. Their target, being
  inside ``source``, is discovered at its real path. Symlinked files inside ``source`` are
  ingested under the link's own path.
- Names are stored and shown as ``path_text`` writes them (docs/ingestion.md): a name that
  is not UTF-8 or holds a control character is escaped (the Latin-1 ``café.md`` is
  ``caf\\xe9.md``), the same on every run and never the text of another name.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from holodeck.config.file_types import ALL_FILE_TYPES, DEFAULT_FILE_TYPES, ignore_spec
from holodeck.errors import ValidationError

if TYPE_CHECKING:
    import pathspec

#: The ignore file read from the top of a source folder.
IGNORE_FILE = ".holodeckignore"

REASON_EMPTY = "empty file"
REASON_OUTSIDE = "symlink leads outside source"
REASON_LINKED_DIR = "symlinked folder not followed (its target inside source is read directly)"
REASON_BROKEN_LINK = "broken symlink"
REASON_UNREADABLE = "permission denied"
REASON_NOT_REGULAR = "not a regular file"

#: What ``path_text`` escapes: a backslash, control characters (C0, DEL, C1) and surrogates
#: (a byte that is not UTF-8 as Python decodes a name, or half a UTF-16 pair on Windows).
_UNPRINTABLE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_NAMED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
#: The escapes ``path_text`` writes, read back by ``text_path``.
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[\\tnr])")
_UNNAMED = {b"\\": b"\\", b"t": b"\t", b"n": b"\n", b"r": b"\r"}


def path_text(path: str) -> str:
    """``path`` (a name as the OS gives it to Python) as text any store, JSON, report and
    terminal can hold, showing the name faithfully: the one rule for paths shown or stored.

    Printable UTF-8 is kept; a backslash becomes ``\\\\``, tab, newline and carriage return
    ``\\t \\n \\r``, and every other byte of a control character, or byte that is not UTF-8,
    ``\\xNN`` (the escapes of a Python bytes literal). ``text_path`` reads the name back, so
    two names never share one text.
    """
    if _UNPRINTABLE.search(path) is None:
        return path
    return _UNPRINTABLE.sub(_escaped, path)


def _escaped(match: re.Match[str]) -> str:
    """The escape of one character ``path_text`` does not keep."""
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    try:
        raw = os.fsencode(char)  # a not-UTF-8 byte: itself; on Windows, a lone surrogate
    except UnicodeEncodeError:  # a lone surrogate where names are bytes (never from the OS)
        raw = char.encode("utf-8", "surrogatepass")
    return "".join(f"\\x{byte:02x}" for byte in raw)


def text_path(text: str) -> str:
    """The name ``path_text`` wrote as ``text``, as the OS knows it (its inverse): the file
    that a name holodeck showed, copied into a test case, stands for. Other backslashes
    are kept as they are."""
    raw = _ESCAPE.sub(_unescaped, text.encode("utf-8", "surrogateescape"))
    return os.fsdecode(raw)


def _unescaped(match: re.Match[bytes]) -> bytes:
    """The byte one escape of ``path_text`` stands for."""
    code = match.group(1)
    return _UNNAMED.get(code) or bytes([int(code[1:], 16)])


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest; ``rel_path`` (posix, relative to source, as ``path_text`` writes it)
    is its document id, ``path`` the name the OS knows."""

    path: Path
    rel_path: str
    mtime: float
    size: int
    #: The resolved source folder (or file): reading is refused outside it.
    root: str = ""


@dataclass(frozen=True)
class Skipped:
    """A file or folder left out, with the reason shown to the user."""

    path: Path
    rel_path: str
    reason: str


@dataclass
class Discovery:
    """What ``discover`` found: files to ingest and entries skipped, both sorted by path.

    The files are kept as plain values (path, rel_path, mtime, size) and become
    ``SourceFile`` objects only when asked for: a ``Path`` costs more to make than the
    ``stat`` behind it, and a check of unchanged files needs neither.
    """

    found: list[tuple[str, str, float, int]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    root: str = ""

    @cached_property
    def files(self) -> list[SourceFile]:
        """The files to ingest, sorted by ``rel_path``."""
        return [SourceFile(Path(p), rel, m, s, self.root) for p, rel, m, s in self.found]

    def stats(self) -> dict[str, tuple[float, int]]:
        """``rel_path`` -> (mtime, size) of every file to ingest (no ``Path`` made)."""
        return {rel: (m, s) for _, rel, m, s in self.found}


def discover(
    source: Path,
    file_types: Iterable[str] = DEFAULT_FILE_TYPES,
    exclude: Iterable[str] = (),
) -> Discovery:
    """List the files of ``file_types`` under ``source`` (a file or a folder) without reading them.

    ``exclude`` holds gitignore-style patterns relative to ``source``, added to those of its
    ``.holodeckignore``. Raises FileNotFoundError when ``source`` does not exist, as the
    tool contract says (docs/contract.md; the user must fix the tool's ``source``), and
    ValidationError for a
    pattern of ``.holodeckignore`` that is not valid gitignore syntax.
    """
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(
            f"Source path does not exist: {source} (check the tool's 'source' in agent.yaml)"
        )
    scan = _Scan(os.path.realpath(source), frozenset(t.lower() for t in file_types))
    if source.is_dir():
        scan.ignored = ignore_spec(list(exclude) + _ignore_file_lines(source))
        scan.walk(source)
    else:
        # The user named this very file (even a hidden one or a link): its target is the source.
        scan.check_file(os.fspath(source), source.name, os.path.islink(source))
    result = scan.result
    result.root = scan.root
    result.found.sort(key=lambda f: f[1])
    result.skipped.sort(key=lambda s: s.rel_path)
    return result


def _ignore_file_lines(source: Path) -> list[str]:
    """The patterns of ``source/.holodeckignore``; an invalid one names its line."""
    path = source / IGNORE_FILE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        ignore_spec(lines)
    except ValueError:  # find the line to name (only then: one compile per line)
        for number, line in enumerate(lines, start=1):
            try:
                ignore_spec([line])
            except ValueError as exc:
                why = f" ({exc})" if str(exc) else ""
                raise ValidationError(
                    f"{path}:{number}: {line.strip()!r} is not a valid gitignore pattern{why}; "
                    "fix or remove that line"
                ) from None
        raise ValidationError(f"{path}: not a valid gitignore file") from None
    return lines


@dataclass
class _Scan:
    """One discovery: the rules it applies and what it has found so far."""

    root: str  # the resolved source
    file_types: frozenset[str]
    ignored: pathspec.PathSpec | None = None
    result: Discovery = field(default_factory=Discovery)

    def walk(self, source: Path) -> None:
        """Walk the folder with scandir; symlinked folders are judged, never entered."""
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            dir_path = os.path.join(source, rel_dir)
            try:
                with os.scandir(dir_path) as entries:
                    listing = list(entries)
            except PermissionError:
                if not rel_dir:
                    raise
                self.skip(dir_path, rel_dir, REASON_UNREADABLE)
                continue
            for entry in listing:
                if entry.name.startswith("."):
                    continue
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
                linked_dir = is_link and os.path.isdir(entry.path)
                if self.excluded(rel, is_dir or linked_dir):
                    continue
                if is_dir:
                    stack.append(rel)
                elif linked_dir:
                    inner = inside(entry.path, self.root)
                    self.skip(entry.path, rel, REASON_LINKED_DIR if inner else REASON_OUTSIDE)
                else:
                    self.check_file(entry.path, rel, is_link, entry.stat, _suffix(entry.name))

    def check_file(
        self,
        path: str,
        rel: str,
        is_link: bool,
        stat_of: Callable[[], os.stat_result] | None = None,
        suffix: str | None = None,
    ) -> None:
        """Add one file to ``files`` or to ``skipped``: one stat (the DirEntry's), no read.
        ``suffix``: the name's, lower-case, when the caller has it."""
        if is_link and not inside(path, self.root):
            self.skip(path, rel, REASON_OUTSIDE)
            return
        if suffix is None:
            suffix = os.path.splitext(rel)[1].lower()
        if suffix not in self.file_types:
            self.skip(path, rel, _type_reason(suffix))
            return
        try:
            st = stat_of() if stat_of is not None else os.stat(path)
        except FileNotFoundError:
            self.skip(path, rel, REASON_BROKEN_LINK if is_link else "file vanished")
            return
        except PermissionError:
            self.skip(path, rel, REASON_UNREADABLE)
            return
        if not stat.S_ISREG(st.st_mode):
            self.skip(path, rel, REASON_NOT_REGULAR)
        elif st.st_size == 0:
            self.skip(path, rel, REASON_EMPTY)
        elif not st.st_mode & stat.S_IROTH and not os.access(path, os.R_OK):
            # World-readable files need no second system call; others are asked about.
            self.skip(path, rel, REASON_UNREADABLE)
        else:
            self.result.found.append((path, path_text(rel), st.st_mtime, st.st_size))

    def excluded(self, rel: str, is_dir: bool) -> bool:
        """Whether the user's patterns leave this entry out (a folder is matched as ``dir/``)."""
        return self.ignored is not None and self.ignored.match_file(rel + "/" if is_dir else rel)

    def skip(self, path: str, rel: str, reason: str) -> None:
        """Record a skip with the reason the user is shown."""
        self.result.skipped.append(Skipped(path=Path(path), rel_path=path_text(rel), reason=reason))


def _suffix(name: str) -> str:
    """``os.path.splitext(name)[1].lower()`` for a file name, without its general path
    handling, which took much of discovery's own time in a check of unchanged files."""
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 and name[:dot].strip(".") else ""


def _type_reason(suffix: str) -> str:
    """Why a file type is left out, and how to take it in when holodeck can."""
    if suffix in ALL_FILE_TYPES:
        return f"file type {suffix} not enabled (add it to the tool's file_types)"
    return f"unsupported file type {suffix or '(no extension)'}"


def inside(path: str, root: str) -> bool:
    """Whether the fully resolved ``path`` lies within ``root`` (itself resolved)."""
    return within(os.path.realpath(path), root)


def within(real_path: str, root: str) -> bool:
    """Whether ``real_path`` (already resolved: no link, no ``..``) lies within ``root``."""
    return real_path == root or real_path.startswith(root.rstrip(os.sep) + os.sep)
