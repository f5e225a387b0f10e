"""The life of the files beside the database (a large library's vector index, the postings
file): each written whole or not at all, never trusted past what the database can bring it
up to, the replaced and half-written ones removed, and the progress of a long build."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
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


@contextlib.contextmanager
def build_progress(
    label: str, total: int, least: int, unit: str = "vectors"
) -> Iterator[Callable[[int], None]]:
    """Progress of a long build: a bar on a terminal, a log line at every tenth otherwise;
    nothing for a build of fewer than ``least`` or under ``-q``."""
    if total < least or not log.isEnabledFor(logging.INFO):
        yield lambda n: None
        return
    if sys.stderr.isatty():
        from rich.progress import Progress

        from holodeck.console import make_console

        with Progress(console=make_console(stderr=True), transient=True) as bar:
            task = bar.add_task(f"Building the {label}", total=total)
            yield lambda n: bar.advance(task, n)
        return
    done, shown, started = 0, 0, time.monotonic()

    def advance(n: int) -> None:
        nonlocal done, shown
        done += n
        if done * 10 // total > shown:
            shown = done * 10 // total
            log.info("Building the %s: %d%% of %s %s", label, 10 * shown, f"{total:,}", unit)

    yield advance
    log.info("Built the %s in %.1f s", label, time.monotonic() - started)
