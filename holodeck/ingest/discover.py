"""Find the files a vectorstore tool ingests, and say why every other file is left out.

Discovery only lists: one ``scandir`` per folder and one ``stat`` per file, never a read, so a
folder of thousands of files is listed in milliseconds and the ingest plan (new / changed /
unchanged / deleted) can be made before any conversion is paid for.

Rules users rely on:

- ``source`` may be one file or a folder, walked recursively; results sorted by ``rel_path``.
- Only ``.txt .md .pdf .csv .json`` (any letter case) are ingested; every other file, empty
  files, unreadable files and other skipped entries are listed in ``Discovery.skipped`` and
  logged as one WARNING line ``Skipped <rel_path>: <reason>`` on logger ``holodeck.ingest``.
- Hidden files and folders (name starting with ``.``: ``.git``, ``.holodeck``) are left out
  silently: they are tooling, not documents.
- Nothing outside ``source`` is read: a symlink (to a file or a folder) whose resolved target
  lies outside the resolved ``source`` is skipped.
- Symlinked folders are never followed, even when they point inside ``source``: following
  them could loop and would ingest the same files twice under two names. Their target, being
  inside ``source``, is discovered at its real path. Symlinked files inside ``source`` are
  ingested under the link's own path.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger("holodeck.ingest")

SUPPORTED_EXTENSIONS = frozenset({".txt", ".md", ".pdf", ".csv", ".json"})

REASON_EMPTY = "empty file"
REASON_OUTSIDE = "symlink leads outside source"
REASON_LINKED_DIR = "symlinked folder not followed (its target inside source is read directly)"
REASON_BROKEN_LINK = "broken symlink"
REASON_UNREADABLE = "permission denied"
REASON_NOT_REGULAR = "not a regular file"


@dataclass(frozen=True)
class SourceFile:
    """A file to ingest; ``rel_path`` (posix, relative to source) is its document id."""

    path: Path
    rel_path: str
    mtime: float
    size: int


@dataclass(frozen=True)
class Skipped:
    """A file or folder left out, with the reason shown to the user."""

    path: Path
    rel_path: str
    reason: str


@dataclass
class Discovery:
    """What ``discover`` found: files to ingest and entries skipped, both sorted by path."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def discover(source: Path) -> Discovery:
    """List the supported files under ``source`` (a file or a folder) without reading them.

    Raises FileNotFoundError when ``source`` does not exist, as the contract says: the user
    must fix the tool's ``source`` in agent.yaml.
    """
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(
            f"Source path does not exist: {source} (check the tool's 'source' in agent.yaml)"
        )
    result = Discovery()
    if source.is_dir():
        root = os.path.realpath(source)
        _walk(source, root, result)
    else:
        # The user named this very file (even a hidden one or a link): its target is the source.
        root = os.path.realpath(source)
        _check_file(os.fspath(source), source.name, root, os.path.islink(source), result)
    result.files.sort(key=lambda f: f.rel_path)
    result.skipped.sort(key=lambda s: s.rel_path)
    return result


def _walk(source: Path, root: str, result: Discovery) -> None:
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
            _skip(result, dir_path, rel_dir, REASON_UNREADABLE)
            continue
        for entry in listing:
            if entry.name.startswith("."):
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            is_link = entry.is_symlink()
            if entry.is_dir(follow_symlinks=False):
                stack.append(rel)
            elif is_link and os.path.isdir(entry.path):
                reason = REASON_LINKED_DIR if _inside(entry.path, root) else REASON_OUTSIDE
                _skip(result, entry.path, rel, reason)
            else:
                _check_file(entry.path, rel, root, is_link, result, entry.stat)


def _check_file(
    path: str,
    rel: str,
    root: str,
    is_link: bool,
    result: Discovery,
    stat_of: Callable[[], os.stat_result] | None = None,
) -> None:
    """Add one file to ``files`` or to ``skipped``: one stat (the DirEntry's), no read."""
    if is_link and not _inside(path, root):
        _skip(result, path, rel, REASON_OUTSIDE)
        return
    suffix = os.path.splitext(rel)[1].lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        _skip(result, path, rel, f"unsupported file type {suffix or '(no extension)'}")
        return
    try:
        st = stat_of() if stat_of is not None else os.stat(path)
    except FileNotFoundError:
        _skip(result, path, rel, REASON_BROKEN_LINK if is_link else "file vanished")
        return
    except PermissionError:
        _skip(result, path, rel, REASON_UNREADABLE)
        return
    if not stat.S_ISREG(st.st_mode):
        _skip(result, path, rel, REASON_NOT_REGULAR)
    elif st.st_size == 0:
        _skip(result, path, rel, REASON_EMPTY)
    elif not st.st_mode & stat.S_IROTH and not os.access(path, os.R_OK):
        # World-readable files need no second system call; others are asked about.
        _skip(result, path, rel, REASON_UNREADABLE)
    else:
        file = SourceFile(path=Path(path), rel_path=rel, mtime=st.st_mtime, size=st.st_size)
        result.files.append(file)


def _inside(path: str, root: str) -> bool:
    """Whether the fully resolved ``path`` lies within ``root`` (itself resolved)."""
    target = os.path.realpath(path)
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def _skip(result: Discovery, path: str, rel: str, reason: str) -> None:
    """Record and log a skip, one WARNING line per entry, so the user sees every left-out file."""
    logger.warning("Skipped %s: %s", rel, reason)
    result.skipped.append(Skipped(path=Path(path), rel_path=rel, reason=reason))
