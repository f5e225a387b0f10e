"""``memory``: a volatile index (SQLite ``:memory:``), the reference other adapters are tested
against, and a store for callers that want nothing on disk.

It shares every line of SQL with ``local`` (``SqliteIndexAdapter``), so the two can never rank
or filter differently; one connection serves every thread, one call at a time.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from holodeck.errors import IngestRunning
from holodeck.vectorstore.sqlite.index import SqliteIndexAdapter
from holodeck.vectorstore.sqlite.schema import migrate


class MemoryIndexAdapter(SqliteIndexAdapter):
    """An index that lives as long as the object."""

    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._calls = threading.RLock()  # one connection: transactions must not interleave
        self._ingest = threading.Lock()
        migrate(self._conn)

    def _index_label(self) -> str:
        return "(in memory)"

    def _db(self) -> sqlite3.Connection:
        return self._conn

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        with self._calls, super().reading() as db:
            yield db

    @contextmanager
    def library_lock(self, tenant_id: str, library_id: str, timeout: float) -> Iterator[None]:
        """One ingest at a time in this process (a volatile index has no other writers)."""
        if not self._ingest.acquire(timeout=timeout):
            raise IngestRunning(
                f"another ingest of library {library_id!r} is running; waited {timeout:.0f} s"
            )
        try:
            yield
        finally:
            self._ingest.release()

    def close(self) -> None:
        """Nothing to release before the object goes (the data goes with it)."""
