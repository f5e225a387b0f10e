"""The life of the files beside the database (a large library's vector index, the postings
file): each written whole or not at all, never trusted past what the database can bring it
up to, never trusted when its bytes are not the ones written, and the replaced and
half-written ones removed.

A file's bytes are checked by its seal, recorded in its row when it is written: the CRC-32
of the file, and its stamp then (size, modification and change times, inode). A process
opening the file trusts it without reading it when its stamp is unchanged (any write to a
file changes its change time, which no program can set back); a changed stamp (a copy, a
restore, a write) has the whole file read and its CRC-32 compared: the same, it is trusted
(and the next ingest records its new stamp), else it is damaged: not trusted, rewritten by
the next ingest. A file without a seal (written by an earlier version) is never trusted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from holodeck.vectorstore.sqlite.write_failures import file_write_failure

log = logging.getLogger("holodeck.vectorstore")

#: Bytes read at a time while a file's CRC-32 is computed.
_READ_BLOCK = 1 << 22
#: How long after a file's last change a stamp is taken: past the file system's clock step,
#: so a later write cannot leave the same times (whole seconds: a file system keeping only
#: seconds, or two of them).
_SETTLE_NS = 20_000_000
_SETTLE_COARSE_NS = 2_000_000_000

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


@dataclass(frozen=True)
class Seal:
    """A side file as it was written: its CRC-32, and its stamp then (None: none could be
    taken, so every process reads it whole)."""

    checksum: int
    stamp: str | None


@dataclass(frozen=True)
class Checked:
    """What opening a sealed file found: ``why`` it is not the file written ('' when it
    is); the stamp it was found sound at (a process trusting it compares the file with it
    again before each search); the stamp to record when that is not the recorded one."""

    why: str = ""
    stamp: str | None = None
    restamp: str | None = None


#: Files this process read whole and found sound: (path, stamp) -> CRC-32.
_sound: dict[tuple[str, str], int] = {}
_sound_lock = threading.Lock()


def save_whole(save: Callable[[str], None], folder: Path, name: str) -> Seal:
    """Write ``folder/name`` whole or not at all: ``save`` writes a temp file, which is
    synced and renamed (a kill leaves the temp file, which the next upkeep removes). Its
    seal, for its row: the CRC-32 of the bytes written, and its stamp once it is in place."""
    temp = folder / f".{name}.tmp"
    try:
        save(str(temp))
        with open(temp, "rb") as fh:
            os.fsync(fh.fileno())
        written = checksum(temp)
        os.replace(temp, folder / name)
        fsync_folder(folder)
    except OSError as exc:  # a full disk, a read-only folder: the machine's, not a bug
        raise file_write_failure(folder, exc) from exc
    finally:
        temp.unlink(missing_ok=True)
    found, stamp = _settled_checksum(folder / name)
    return Seal(written, stamp if found == written else None)


def check_seal(path: Path, seal: Seal | None) -> Checked:
    """Whether the file at ``path`` holds the bytes its ``seal`` was taken of: trusted on
    its stamp alone when that is unchanged, else read whole (once a process and stamp)."""
    if seal is None:
        return Checked("an earlier version's kind of file (no checksum was recorded for it)")
    try:
        now = stamp_of(os.stat(path))
    except FileNotFoundError:
        return Checked(f"{path.name} is missing")
    if now == seal.stamp:
        return Checked(stamp=now)
    with _sound_lock:
        if _sound.get((str(path), now)) == seal.checksum:
            return Checked(stamp=now, restamp=now)
    found, settled = _settled_checksum(path)
    if found != seal.checksum:
        return Checked(f"{path.name} is damaged: its checksum is not the one it was written with")
    if settled is None:
        return Checked(f"{path.name} was written to while it was checked")
    with _sound_lock:
        _sound[(str(path), settled)] = seal.checksum
    return Checked(stamp=settled, restamp=settled)


def unchanged(path: Path, stamp: str | None) -> bool:
    """Whether the file at ``path`` still has ``stamp`` (one ``stat``): a file a process
    trusts is looked at again before each search, since a write would reach its mapped
    pages."""
    try:
        return stamp is not None and stamp_of(os.stat(path)) == stamp
    except OSError:
        return False


def checksum(path: Path) -> int:
    """The CRC-32 of the whole file at ``path``."""
    crc = 0
    block = bytearray(_READ_BLOCK)
    view = memoryview(block)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(block):
            crc = zlib.crc32(view[:n], crc)
    return crc


def stamp_of(st: os.stat_result) -> str:
    """A file's stamp: what any write to it changes (its size, modification and change
    times, and inode: another file put in its place)."""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def _settled_checksum(path: Path) -> tuple[int, str | None]:
    """The file's CRC-32 and its stamp while it was read (None: it changed meanwhile), the
    stamp taken once the clock has moved past the file's last change, so that any later
    write leaves other times than the stamp's."""
    st = os.stat(path)
    coarse = st.st_ctime_ns % 1_000_000_000 == 0 and st.st_mtime_ns % 1_000_000_000 == 0
    settle = _SETTLE_COARSE_NS if coarse else _SETTLE_NS
    wait = min(st.st_ctime_ns + settle - time.time_ns(), settle)
    if wait > 0:
        time.sleep(wait / 1e9)
    before = stamp_of(os.stat(path))
    found = checksum(path)
    after = stamp_of(os.stat(path))
    return found, before if before == after else None


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
