"""The life of the files beside the database (a large library's vector index, the postings
file): each written whole or not at all, never trusted past what the database can bring it
up to, and the replaced and half-written ones removed."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("holodeck.vectorstore")

#: The last row id given in each table with one (``chunks``, ``changes``).
SEQS = "SELECT name, seq FROM sqlite_sequence"


def out_of_reach(db: sqlite3.Connection, chunk_seq: int, change_seq: int) -> str:
    """Why a file made at (``chunk_seq``, ``change_seq``) cannot be brought up to date from
    the database ('' when it can): the change log was trimmed past it, or it is newer."""
    oldest = db.execute("SELECT min(seq) FROM changes").fetchone()[0]
    seqs = dict(db.execute(SEQS).fetchall())
    if oldest is not None and oldest > change_seq + 1:
        return "the change log no longer reaches back to it"
    if chunk_seq > int(seqs.get("chunks", 0)):
        return "it is newer than the database"
    return ""


def save_whole(save: Callable[[str], None], folder: Path, name: str) -> None:
    """Write ``folder/name`` whole or not at all: ``save`` writes a temp file, which is
    synced and renamed (a kill leaves the temp file, which the next upkeep removes)."""
    temp = folder / f".{name}.tmp"
    try:
        save(str(temp))
        with open(temp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(temp, folder / name)
        fsync_folder(folder)
    finally:
        temp.unlink(missing_ok=True)


def remove_strays(folder: Path, prefix: str, suffix: str, named: set[str]) -> None:
    """Delete the files of a kind (``prefix``...``suffix``) that ``named`` does not hold:
    replaced ones, and the temp files a kill left."""
    for path in folder.iterdir():
        stray = path.name.startswith(f".{prefix}") and path.name.endswith(".tmp")
        stray |= path.name.startswith(prefix) and path.name.endswith(suffix)
        if stray and path.name not in named:
            path.unlink(missing_ok=True)


def fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    with contextlib.suppress(OSError):  # some file systems cannot open a folder
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
