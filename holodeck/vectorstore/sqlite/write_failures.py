"""Why a write in the index folder failed, as the one line a user can act on.

A full disk, a file-size limit and a folder that cannot be written are the machine's state,
not damage: the line names the folder and the fix, says that what is stored is kept, and never
sends the user to ``--force-ingest`` (a rebuild would need more room, not less). The database
(SQLite's result codes) and the files beside it (``OSError``) both come here.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

from holodeck.errors import IndexFull, IndexNotWritable, IngestError

#: Out of room: the disk, the user's quota, the size one file may have.
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
#: Not allowed to write: a read-only mount, no permission.
_NO_WRITE = {errno.EROFS, errno.EACCES, errno.EPERM}
#: Below this much free space a failed write is taken for a full disk.
_NEARLY_FULL = 64 * 1024 * 1024
_KEPT = "what is stored is kept as it was"


def read_only_error(folder: Path, why: str) -> IndexNotWritable:
    """The line for an index folder this process may not write (exit 2)."""
    return IndexNotWritable(
        f"cannot write the local index in {folder}: {why}; make the folder writable and run "
        f"again; {_KEPT}, and `holodeck search --no-ingest` answers from it"
    )


def _no_room(folder: Path, why: str) -> IndexFull:
    return IndexFull(
        f"cannot write the local index in {folder}: {why}; {_KEPT}: free space and run again"
    )


def _file_size_limit() -> int | None:
    """The largest file this process may write (``ulimit -f``), or None when unlimited."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _likely_cause(folder: Path) -> str | None:
    """What most likely stopped a write SQLite reports only as an I/O error."""
    limit = _file_size_limit()
    if limit is not None:
        return f"a file would pass the {limit}-byte limit on file size here (ulimit -f)"
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    return f"the disk is full ({free} bytes free)" if free < _NEARLY_FULL else None


def file_write_failure(folder: Path, exc: OSError) -> IngestError | IndexNotWritable:
    """The line for a file beside the database that could not be written."""
    why = exc.strerror or str(exc)
    if exc.errno in _NO_WRITE:
        return read_only_error(folder, why)
    if exc.errno in _NO_ROOM:
        limit = _file_size_limit() if exc.errno == errno.EFBIG else None
        if limit is not None:
            return _no_room(folder, f"{why}: files may not pass {limit} bytes here (ulimit -f)")
        return _no_room(folder, f"the disk is full ({why})")
    return IngestError(f"cannot write the local index in {folder}: {why}; {_KEPT}")


def sqlite_write_failure(folder: Path, exc: sqlite3.Error) -> IngestError | IndexNotWritable | None:
    """The line for a database write SQLite refused for want of room or permission, or
    None when its code says something else (locked, damaged)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc)
    if primary == sqlite3.SQLITE_FULL or (primary is None and "full" in text.lower()):
        return _no_room(folder, f"the disk is full ({text})")
    if primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN) and not os.access(
        folder, os.W_OK
    ):
        return read_only_error(folder, f"the folder cannot be written ({text})")
    if primary == sqlite3.SQLITE_READONLY:
        return read_only_error(folder, text)
    if primary == sqlite3.SQLITE_IOERR:
        cause = _likely_cause(folder)
        if cause is not None:
            return _no_room(folder, f"{cause} ({text})")
        return IngestError(
            f"cannot write the local index in {folder}: {text} (the disk may be failing); "
            f"{_KEPT}: check the disk and run again"
        )
    return None
