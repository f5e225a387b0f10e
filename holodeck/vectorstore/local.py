"""``local``: the embedded default, one SQLite database (WAL) under ``.holodeck/index/<tool>/``.

In WAL mode readers (``search``, ``chat``, ``test``, ``serve``) answer from what is committed
while an ingest writes, without waiting for it. Each thread has its own connection (a reader
never sees another thread's open transaction); a file lock beside the database keeps two
ingests apart. Opening reads only the schema version and the index's model: vectors load on
the first search. An ``index.npz`` of earlier releases is imported once (``sqlite.legacy``
reads it; this module writes it, a one-way step).

A database SQLite finds damaged is one line naming it and ``holodeck ingest --force-ingest``
(``DamagedIndex``, exit 2); that ingest checks the database's pages first (``quick_check``),
and a database found damaged then, or while it rebuilds, is moved aside (kept as
``index.db.damaged-<time>``) and the tool ingested anew into a new one.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from holodeck.errors import (
    ConfigError,
    DamagedIndex,
    HoloDeckError,
    IndexFull,
    IndexNotWritable,
    IngestError,
    IngestRunning,
)
from holodeck.vectorstore.sqlite.index import SqliteIndexAdapter
from holodeck.vectorstore.sqlite.legacy import LEGACY_FILE, mark_imported, read_npz
from holodeck.vectorstore.sqlite.schema import NewerIndexError, migrate
from holodeck.vectorstore.sqlite.write_failures import sqlite_write_failure

log = logging.getLogger("holodeck.vectorstore")

DB_FILE = "index.db"
#: SQLite's result codes for a damaged database: malformed, not a database at all.
_DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def is_damage(exc: BaseException) -> bool:
    """Whether a failed SQLite call means the database file is damaged: SQLite found it
    malformed or not a database, or a text in it (or SQLite's message quoting one) is not the
    UTF-8 holodeck wrote."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):  # SQLite's own failure: its code says (extended codes too)
        return code & 0xFF in _DAMAGE_CODES
    text = str(exc).lower()  # raised by Python's sqlite3 module, or by the checks here
    return any(sign in text for sign in ("malformed", "not a database", "decode to utf-8"))


def _damage_reason(exc: BaseException) -> str:
    """What SQLite found, in words (a text that is not UTF-8 is not quoted)."""
    text = str(exc)
    if isinstance(exc, UnicodeDecodeError) or "decode to utf-8" in text.lower():
        return "a text stored in it is not valid UTF-8"
    return text


class LocalIndexAdapter(SqliteIndexAdapter):
    """The index of one tool in one SQLite file."""

    backend = "local"

    def __init__(self, folder: Path, *, rebuild_unreadable: bool = False) -> None:
        super().__init__(folder)
        self.folder = folder
        self.path = folder / DB_FILE
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        #: Set when the database is open to read only (``_open_read_only``): what stops a
        #: write, raised by the first one.
        self._read_only: IndexFull | IndexNotWritable | None = None
        self._uri: str | None = None
        self._open(rebuild_unreadable)

    def _index_label(self) -> str:
        return str(self.path)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(
                self._uri or self.path,
                isolation_level=None,
                check_same_thread=False,
                uri=self._uri is not None,
            )
            db.execute("PRAGMA busy_timeout = 30000")
            db.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across process crashes
            self._local.db = db
            with self._conn_lock:
                self._connections.append(db)
        return db

    def _failure(self, exc: Exception) -> HoloDeckError:
        """One line naming the index and the fix."""
        if is_damage(exc):
            return self._damaged(exc)
        if self._read_only is not None:
            return self._read_only
        text = str(exc)
        if "locked" in text.lower() or "busy" in text.lower():
            return IngestError(
                f"{self.path}: the local index stayed locked by another process for 30 s "
                f"({text}); try again when it is done"
            )
        if isinstance(exc, sqlite3.Error):
            refused = sqlite_write_failure(self.folder, exc)
            if refused is not None:
                return refused
        return IngestError(
            f"{self.path}: the local index cannot be used ({text}); run "
            f"`holodeck ingest --force-ingest` to rebuild it"
        )

    def _open(self, rebuild_unreadable: bool) -> None:
        """Create or upgrade the database; import a legacy ``index.npz`` once."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where a folder must be, no permission
            blocker = next((p for p in (self.folder, *self.folder.parents) if p.is_file()), None)
            why = (
                f"{blocker} is a file, not a folder; rename or remove it"
                if blocker is not None
                else f"{exc.strerror or exc}; make it writable"
            )
            raise ConfigError(f"{self.folder}: cannot make the local index here: {why}") from None
        try:
            self._prepare()
            if rebuild_unreadable:  # a forced rebuild must not stop on a damaged page later
                self._check_pages()
        except (sqlite3.DatabaseError, UnicodeDecodeError, NewerIndexError) as exc:
            if not (isinstance(exc, NewerIndexError) or is_damage(exc)):
                refused = self._failure(exc)  # locked, no room, no permission: not the file's
                if rebuild_unreadable or not self._open_read_only(refused):
                    raise refused from exc
                return
            if not rebuild_unreadable:
                raise self._unreadable(exc) from exc
            with self._file_lock(60.0, "another holodeck process using this index"):
                self._set_aside(exc)
                self._prepare()
        legacy = self.folder / LEGACY_FILE
        if legacy.is_file():
            with self._file_lock(60.0, "another holodeck process using this index"):
                if legacy.is_file():
                    self._import_npz(legacy, rebuild_unreadable)
        self._info = self._read_info()

    def _import_npz(self, path: Path, set_aside_unreadable: bool) -> None:
        """Copy every chunk and document state of an earlier release's ``index.npz`` in, in
        one transaction, into an index that holds no chunk yet."""
        snapshot = read_npz(path, set_aside_unreadable)
        if snapshot is None:
            return
        with self._writing() as db:
            if db.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0:
                if snapshot.info is not None:
                    db.executemany(
                        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        [
                            ("embedding_model", snapshot.info.embedding_model),
                            ("dimensions", str(snapshot.info.dimensions)),
                        ],
                    )
                self._insert(db, snapshot.records)
                for (tenant, library), states in snapshot.states.items():
                    lib = self._lib(db, tenant, library, create=True)
                    assert lib is not None
                    for state in states:
                        self._set_state(db, lib, state)
        mark_imported(path, len(snapshot.records), self.path.name)

    def _open_read_only(self, refused: HoloDeckError) -> bool:
        """Open the database to read only, when what stopped opening it to write is the
        machine's (a full disk, a read-only folder): searches answer from what is stored, and
        the first write raises ``refused``. False when it cannot be read that way safely:
        no database, or a write-ahead log holding commits that only a writable folder lets
        SQLite read (``immutable`` would skip them)."""
        if not isinstance(refused, (IndexFull, IndexNotWritable)) or not self.path.is_file():
            return False
        wal = Path(f"{self.path}-wal")
        for query in ("mode=ro", "immutable=1"):
            if query == "immutable=1" and wal.exists() and wal.stat().st_size > 0:
                break
            self.close()
            self._uri = f"file:{quote(str(self.path))}?{query}"
            try:
                migrate(self._db())  # reads only, on an index this release wrote
                self._info = self._read_info()
            except (sqlite3.Error, NewerIndexError):
                continue
            self._read_only = refused
            log.debug("%s: opened to read only (%s)", self.path, refused)
            return True
        self.close()
        self._uri = None
        return False

    def _prepare(self) -> None:
        """WAL mode and the schema migrations (a no-op read when up to date)."""
        db = self._db()
        db.execute("PRAGMA journal_mode = WAL")
        migrate(db)

    def _check_pages(self) -> None:
        """SQLite's check of every page of the database (``PRAGMA quick_check``); raises
        ``sqlite3.DatabaseError`` when it finds one damaged."""
        found = [row[0] for row in self._db().execute("PRAGMA quick_check")]
        if found != ["ok"]:
            raise sqlite3.DatabaseError(f"database disk image is malformed ({found[0]})")

    def _unreadable(self, exc: Exception) -> IngestError | DamagedIndex:
        if not isinstance(exc, NewerIndexError):
            return self._damaged(exc)
        why = f"it was written by a newer holodeck (schema {exc})"
        fix = "upgrade holodeck, or run `holodeck ingest --force-ingest` to rebuild it"
        return IngestError(f"{self.path}: the local index is unusable: {why}; {fix}")

    def _damaged(self, exc: BaseException) -> DamagedIndex:
        return DamagedIndex(
            f"{self.path}: the local index is damaged ({_damage_reason(exc)}); run "
            "`holodeck ingest --force-ingest` to move it aside and rebuild it from the "
            "source files"
        )

    def start_anew(self, damaged: DamagedIndex) -> None:
        """Move the database aside (kept) and continue on a new, empty one in its place:
        what ``--force-ingest`` does with a database found damaged while it rebuilds."""
        with self._file_lock(60.0, "another holodeck process using this index"):
            self._set_aside(damaged.__cause__ or damaged)
            self._prepare()
        self._forget_searches()
        self._info = self._read_info()

    def _set_aside(self, exc: BaseException) -> None:
        """Move an unusable database out of the way (kept, never deleted) to start anew: as
        ``index.db.damaged-<time>``, or ``.unusable-<time>`` when a newer holodeck wrote it."""
        self.close()
        kind = "unusable" if isinstance(exc, NewerIndexError) else "damaged"
        stem = f"{DB_FILE}.{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
        aside = self.path.with_name(stem)
        n = 1
        while any(Path(f"{aside}{suffix}").exists() for suffix in ("", "-wal", "-shm")):
            n += 1  # never over one set aside before
            aside = self.path.with_name(f"{stem}-{n}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.rename(f"{aside}{suffix}")
        if kind == "damaged":
            log.warning(
                "The local index %s is damaged (%s); moved it to %s and rebuilding it from "
                "the source files",
                self.path,
                _damage_reason(exc),
                aside,
            )
        else:
            log.warning(
                "The local index %s was unusable (%s); moved it to %s", self.path, exc, aside
            )

    @contextmanager
    def _file_lock(self, timeout: float, holder: str) -> Iterator[None]:
        from filelock import FileLock, Timeout  # writers only: a search never locks

        lock = FileLock(str(self.folder / ".lock"))
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise IngestRunning(
                f"{holder} is running (lock {lock.lock_file}); waited {timeout:.0f} s"
            ) from None
        try:
            yield
        finally:
            lock.release()

    @contextmanager
    def library_lock(self, tenant_id: str, library_id: str, timeout: float) -> Iterator[None]:
        """A file lock beside the database: one writing process at a time."""
        if self._read_only is not None:
            raise self._read_only
        with self._file_lock(timeout, f"another ingest of library {library_id!r}"):
            self._info = self._read_info()  # another writer may have rebuilt the index
            yield

    def read_workers(self) -> int:
        """One reader per core (up to 4): each part of a search is one core's work."""
        return max(1, min(4, os.cpu_count() or 1))

    def close(self) -> None:
        """Stop the search threads; close every thread's connection."""
        self._stop_pool()
        with self._conn_lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()
