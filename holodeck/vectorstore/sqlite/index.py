"""The SQL every SQLite-backed index shares: ``local`` (a file) and ``memory`` (volatile).

A document's old chunks, vectors, full-text rows and state change in one transaction
(``replace_document``), so an interruption leaves the last committed documents intact and the
next run repairs the rest, and a write costs that document's rows, never a rewrite.

This module holds the connections, the transactions and the writes; the two search sides
live beside it (``vectors``: nearest vectors, from the files ``vector_upkeep`` writes;
``fulltext``: BM25, from ``postings``' file on a large index), on the query building they
share (``query``), and the schema in ``schema``. Every read filters by the tenant's library
ids. It stays one module past 500 lines because it is one class, ``SqliteIndexAdapter``,
implementing the whole ``IndexAdapter`` interface, each method a few statements over the
connections and transactions it shares with the others.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from holodeck.errors import IngestError
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkHit,
    ChunkRecord,
    DocState,
    IndexInfo,
    chunk_id_for,
)
from holodeck.vectorstore.sqlite import fulltext as sqlite_fulltext
from holodeck.vectorstore.sqlite.postings import KeywordFile
from holodeck.vectorstore.sqlite.query import CHUNK_COLUMNS, keyword_columns, record
from holodeck.vectorstore.sqlite.vectors import VectorIndex

#: The chunk with a derived id at a place (library, document, position).
_DERIVED_AT = "lib = ? AND doc_id = ? AND chunk_index = ? AND derived = 1"


def _looks_derived(chunk_id: str) -> bool:
    """Whether an id could be ``chunk_id_for``'s for some place (a SHA-1 in hex)."""
    return len(chunk_id) == 40 and all(c in "0123456789abcdef" for c in chunk_id)


#: Entries of the ``changes`` log kept after an ingest; a reader further behind reloads.
CHANGES_KEPT = 100_000


class SqliteIndexAdapter:
    """``IndexAdapter`` on SQLite; subclasses say where the database is and who may write."""

    backend = "sqlite"

    def __init__(self, folder: Path | None = None) -> None:
        """``folder``: where approximate vector index files may live (None: exact only)."""
        self._info: IndexInfo | None = None
        self._side_folder = folder
        self._batching = threading.local()  # .active: this thread is inside batch()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._forget_searches()

    def _forget_searches(self) -> None:
        """Start the search sides' per-process state anew (what they loaded, opened and
        counted): for a database replaced under this adapter."""
        self._vectors = VectorIndex(self, self._dims, self._reread_info, self._side_folder)
        self._term_counts = sqlite_fulltext.TermCounts()
        self._keywords = KeywordFile(self, self._side_folder)

    def library_lock(
        self, tenant_id: str, library_id: str, timeout: float
    ) -> AbstractContextManager[None]:
        """Held by an ingest so two ingests of one library never interleave."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the connections."""
        raise NotImplementedError

    # -- connections -------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection; SQLite failures become one line naming the index."""
        try:
            yield self._db()
        except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged text, or a message
            raise self._failure(exc) from exc

    def _db(self) -> sqlite3.Connection:
        """The connection of the calling thread."""
        raise NotImplementedError

    def read_workers(self) -> int:
        """How many connections may read at once for one search (1: no pool)."""
        return 1

    def read_pool(self) -> ThreadPoolExecutor:
        """Threads that read parts of one search, each on its own connection."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.read_workers(), thread_name_prefix="holodeck-read"
                )
            return self._pool

    def _stop_pool(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def _failure(self, exc: Exception) -> Exception:
        """The error a user sees for a failed SQLite call."""
        return IngestError(f"the index failed: {exc}")

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction: everything in the block is committed together, or nothing.

        Inside ``batch`` it joins the batch's transaction (begun by the first write), and a
        failure rolls the whole batch back. Not a savepoint per document: FTS5 writes its
        pending rows out at every savepoint, which made each file its own index segment.
        """
        with self.reading() as db:
            batching = getattr(self._batching, "active", False)
            if batching and db.in_transaction:
                try:
                    yield db
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:  # SQLite rolls back by itself on some errors (disk full)
                    db.execute("ROLLBACK")
                raise
            if not batching:
                db.execute("COMMIT")

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Writes of the block in one transaction: one commit for a window of small files
        instead of one per file (see benchmarks/README.md, 'The local index'). Every
        document in it is whole or not there: a failure rolls the batch back, and the next
        ingest redoes its files. Nothing is locked until the first write."""
        with self.reading() as db:
            if getattr(self._batching, "active", False):
                yield
                return
            self._batching.active = True
            try:
                yield
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            finally:
                self._batching.active = False
            if db.in_transaction:
                db.execute("COMMIT")

    # -- index -------------------------------------------------------------------------
    def describe(self) -> IndexInfo | None:
        """From memory once known; until then asked again (another process may create it)."""
        if self._info is None:
            self._info = self._read_info()
        return self._info

    def _dims(self) -> int:
        return self._info.dimensions if self._info else 0

    def _reread_info(self) -> None:
        self._info = self._read_info()

    def _read_info(self) -> IndexInfo | None:
        with self.reading() as db:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if "embedding_model" not in meta:
            return None
        return IndexInfo(meta["embedding_model"], int(meta["dimensions"]))

    def create(self, info: IndexInfo) -> None:
        with self._writing() as db:
            if db.execute("SELECT 1 FROM meta WHERE key = 'embedding_model'").fetchone():
                return
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("embedding_model", info.embedding_model), ("dimensions", str(info.dimensions))],
            )
        self._info = self._read_info()

    def recreate(self, info: IndexInfo) -> None:
        with self._writing() as db:
            db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')")
            for table in (
                "documents",
                "vectors",
                "chunks",
                "changes",
                "vector_files",
                "keyword_files",
                "meta",
            ):
                db.execute(f"DELETE FROM {table}")
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [
                    ("embedding_model", info.embedding_model),
                    ("dimensions", str(info.dimensions)),
                    ("epoch", uuid.uuid4().hex),
                ],
            )
        self._info = info

    def total_count(self) -> int:
        with self.reading() as db:
            return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    # -- chunks ------------------------------------------------------------------------
    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        with self._writing() as db:
            self._insert(db, records)

    def replace_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> int:
        """In one transaction: the document's state and chunks go, ``records`` and ``state``
        come in. Returns the number of old chunks removed."""
        with self._writing() as db:
            lib = self._lib(db, tenant_id, library_id, create=bool(records) or state is not None)
            if lib is None:
                return 0
            db.execute("DELETE FROM documents WHERE lib = ? AND doc_id = ?", (lib, doc_id))
            removed = self._delete_doc(db, lib, doc_id)
            known = {(tenant_id, library_id): lib}
            self._insert(db, records, cleared=(tenant_id, library_id, doc_id), libs=known)
            if state is not None:
                self._set_state(db, lib, state)
            return removed

    def append_to_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> None:
        """In one transaction: ``records`` (a later slice of ``doc_id``) in, then ``state``."""
        with self._writing() as db:
            lib = self._lib(db, tenant_id, library_id, create=True)
            assert lib is not None
            self._insert(db, records, libs={(tenant_id, library_id): lib})
            if state is not None:
                self._set_state(db, lib, state)

    def _insert(
        self,
        db: sqlite3.Connection,
        records: Sequence[ChunkRecord],
        cleared: tuple[str, str, str] | None = None,
        libs: dict[tuple[str, str], int] | None = None,
    ) -> None:
        """Insert or replace by chunk id (a replaced chunk gets a new row id). ``cleared``:
        a document whose chunks were just deleted; its own chunks (ids derived from it)
        cannot exist, so they skip the look for one to replace. ``libs``: library ids the
        caller has looked up already.

        An id derived from the chunk's place is looked up by that place (``m007``); an id
        the caller chose, in the unique index of chosen ids, and, when it looks like a
        derived id (another place's), among every chunk's ids (a scan: the price of
        choosing such ids)."""
        libs = dict(libs or {})
        for rec in records:
            key = (rec.tenant_id, rec.library_id)
            if key not in libs:
                lib = self._lib(db, *key, create=True)
                assert lib is not None
                libs[key] = lib
            place = (libs[key], rec.doc_id, int(rec.chunk_index))
            derived = rec.chunk_id == chunk_id_for(*key, rec.doc_id, rec.chunk_index)
            if derived and (*key, rec.doc_id) != cleared:
                self._delete_chunks(db, _DERIVED_AT, place)
            elif not derived and _looks_derived(rec.chunk_id):
                self._delete_chunks(db, "chunk_id = ? AND derived = 1", (rec.chunk_id,))
            self._delete_chunks(db, "chunk_id = ? AND derived = 0", (rec.chunk_id,))
            cur = db.execute(
                "INSERT INTO chunks (chunk_id, lib, book_id, doc_id, chunk_index, content, "
                "embedding_model, source_path, mtime, content_hash, token_count, tags, language, "
                "location, section, derived) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rec.chunk_id, libs[key], rec.book_id, rec.doc_id, int(rec.chunk_index),
                    rec.content, rec.embedding_model, rec.source_path, float(rec.mtime),
                    rec.content_hash, int(rec.token_count), json.dumps(rec.tags), rec.language,
                    rec.location, rec.section, int(derived),
                ),
            )  # fmt: skip
            vector = np.asarray(rec.vector, dtype=np.float32).tobytes()
            db.execute("INSERT INTO vectors VALUES (?, ?, ?)", (cur.lastrowid, libs[key], vector))
            db.execute(
                "INSERT INTO chunks_fts (rowid, words, idents) VALUES (?, ?, ?)",
                (cur.lastrowid, *keyword_columns(rec.content, rec.section)),
            )

    def _delete_doc(self, db: sqlite3.Connection, lib: int, doc_id: str) -> int:
        return self._delete_chunks(db, "lib = ? AND doc_id = ?", (lib, doc_id))

    def _delete_chunks(self, db: sqlite3.Connection, where: str, args: tuple[Any, ...]) -> int:
        """Delete the chunks matching ``where`` with their vectors and full-text rows (the
        contentless full-text table forgets a row only when told the words it indexed)."""
        rows = db.execute(f"SELECT id, content, section FROM chunks WHERE {where}", args).fetchall()
        for row_id, content, section in rows:
            db.execute(
                "INSERT INTO chunks_fts (chunks_fts, rowid, words, idents) "
                "VALUES ('delete', ?, ?, ?)",
                (row_id, *keyword_columns(content, section)),
            )
        ids = [(row_id,) for row_id, _, _ in rows]
        db.executemany("DELETE FROM vectors WHERE id = ?", ids)
        db.executemany("DELETE FROM chunks WHERE id = ?", ids)
        return len(rows)

    def preload(self, tenant_id: str, filters: ChunkFilters) -> None:
        self._vectors.preload(tenant_id, filters)

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        return self._vectors.search(tenant_id, vector, k, filters)

    def keyword_search(
        self, tenant_id: str, query: str, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        return sqlite_fulltext.keyword_search(
            self, self._term_counts, self._keywords, tenant_id, query, k, filters,
            vectors_of=self._vectors.vectors_of,
        )  # fmt: skip

    def keyword_scale(self, query: str) -> float:
        return sqlite_fulltext.keyword_scale(self, self._term_counts, self._keywords, query)

    def keyword_idfs(self, words: Sequence[str]) -> dict[str, float]:
        return sqlite_fulltext.keyword_idfs(self, self._term_counts, self._keywords, words)

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        return sqlite_fulltext.identifier_holders(
            self, tenant_id, identifier, limit, filters, self._vectors.vectors_of
        )

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        with self._writing() as db:
            lib = self._lib(db, tenant_id, library_id)
            return 0 if lib is None else self._delete_doc(db, lib, doc_id)

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        with self._writing() as db:
            target = self._lib(db, tenant_id, library_id, create=True)
            moving = (
                "SELECT c.id FROM chunks c JOIN libraries l ON l.id = c.lib "
                "WHERE l.tenant_id = ? AND c.book_id = ? AND c.lib != ?"
            )
            args = (tenant_id, book_id, target)
            db.execute(f"UPDATE vectors SET lib = ? WHERE id IN ({moving})", (target, *args))
            return db.execute(
                f"UPDATE chunks SET lib = ? WHERE id IN ({moving})",
                (target, *args),
            ).rowcount

    def get_doc_chunks(self, tenant_id: str, library_id: str, doc_id: str) -> list[ChunkRecord]:
        with self.reading() as db:
            rows = db.execute(
                f"SELECT {CHUNK_COLUMNS}, v.vector FROM chunks c "
                "JOIN libraries l ON l.id = c.lib JOIN vectors v ON v.id = c.id "
                "WHERE l.tenant_id = ? AND l.library_id = ? AND c.doc_id = ? "
                "ORDER BY c.chunk_index",
                (tenant_id, library_id, doc_id),
            ).fetchall()
        return [record(row, row[-1]) for row in rows]

    def count(self, tenant_id: str, library_id: str) -> int:
        with self.reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is None:
                return 0
            return int(
                db.execute("SELECT count(*) FROM chunks WHERE lib = ?", (lib,)).fetchone()[0]
            )

    def drop_library(self, tenant_id: str, library_id: str) -> int:
        with self._writing() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is None:
                return 0
            db.execute("DELETE FROM documents WHERE lib = ?", (lib,))
            return self._delete_chunks(db, "lib = ?", (lib,))

    def doc_ids(self, tenant_id: str, library_id: str) -> set[str]:
        with self.reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is None:
                return set()
            rows = db.execute("SELECT DISTINCT doc_id FROM chunks WHERE lib = ?", (lib,))
            return {row[0] for row in rows}

    # -- ownership ---------------------------------------------------------------------
    def library_owner(self, tenant_id: str, library_id: str) -> dict[str, str] | None:
        """Which source fills a library (None: nobody has claimed it yet)."""
        with self.reading() as db:
            row = db.execute(
                "SELECT owner FROM libraries WHERE tenant_id = ? AND library_id = ?",
                (tenant_id, library_id),
            ).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def set_library_owner(self, tenant_id: str, library_id: str, owner: dict[str, str]) -> None:
        """Record which source fills a library."""
        with self._writing() as db:
            lib = self._lib(db, tenant_id, library_id, create=True)
            db.execute("UPDATE libraries SET owner = ? WHERE id = ?", (json.dumps(owner), lib))

    # -- document state ----------------------------------------------------------------
    def doc_states(self, tenant_id: str, library_id: str) -> dict[str, DocState]:
        with self.reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is None:
                return {}
            rows = db.execute(
                "SELECT doc_id, mtime, size, content_hash, chunk_count FROM documents "
                "WHERE lib = ?",
                (lib,),
            )
            return {row[0]: DocState(*row) for row in rows}

    def doc_stats(self, tenant_id: str, library_id: str) -> dict[str, tuple[float, int]]:
        with self.reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is None:
                return {}
            sql = "SELECT doc_id, mtime, size FROM documents WHERE lib = ?"
            return {doc: (mtime, size) for doc, mtime, size in db.execute(sql, (lib,))}

    def set_doc_state(self, tenant_id: str, library_id: str, state: DocState) -> None:
        with self._writing() as db:
            lib = self._lib(db, tenant_id, library_id, create=True)
            assert lib is not None
            self._set_state(db, lib, state)

    def _set_state(self, db: sqlite3.Connection, lib: int, state: DocState) -> None:
        db.execute(
            "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?)",
            (lib, state.doc_id, state.mtime, state.size, state.content_hash, state.chunk_count),
        )

    def delete_doc_state(self, tenant_id: str, library_id: str, doc_id: str) -> None:
        with self._writing() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is not None:
                db.execute("DELETE FROM documents WHERE lib = ? AND doc_id = ?", (lib, doc_id))

    def _index_label(self) -> str:
        """What ``store info`` shows as the index."""
        raise NotImplementedError

    def stats(self, tenant_id: str, library_id: str) -> dict[str, Any]:
        """Documents and chunks of one library; exact cosine search (FLAT), or IVF once the
        library has an approximate index file its searches trust (its candidates re-scored
        exactly)."""
        with self.reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            documents = 0
            if lib is not None:
                documents = db.execute(
                    "SELECT count(*) FROM documents WHERE lib = ?", (lib,)
                ).fetchone()[0]
        approximate = lib is not None and self._vectors.file_in_use(lib) is not None
        return {
            "backend": self.backend,
            "url": None,
            "index": self._index_label(),
            "algorithm": "IVF" if approximate else "FLAT",
            "metric": "COSINE",
            "embedding_model": self._info.embedding_model if self._info else None,
            "dimensions": self._info.dimensions if self._info else None,
            "documents": int(documents),
            "chunks": self.count(tenant_id, library_id),
        }

    def flush(self) -> None:
        """Every document is committed as it is written; this brings the vector and keyword
        index files in step (``VectorIndex.upkeep``, ``KeywordFile.upkeep``) and trims the
        ``changes`` log, keeping what the files do not cover yet."""
        self._vectors.upkeep(self._writing)
        self._keywords.upkeep(self._writing)
        with self._writing() as db:
            db.execute(
                "DELETE FROM changes WHERE seq <= min((SELECT max(seq) FROM changes) - ?, "
                "(SELECT coalesce(min(change_seq), 1 << 62) FROM vector_files), "
                "(SELECT coalesce(min(change_seq), 1 << 62) FROM keyword_files))",
                (CHANGES_KEPT,),
            )

    # -- internals ---------------------------------------------------------------------
    def _lib(
        self, db: sqlite3.Connection, tenant_id: str, library_id: str, create: bool = False
    ) -> int | None:
        """The integer id of a tenant's library (made on first write when ``create``)."""
        sql = "SELECT id FROM libraries WHERE tenant_id = ? AND library_id = ?"
        row = db.execute(sql, (tenant_id, library_id)).fetchone()
        if row is None and create:
            db.execute(
                "INSERT INTO libraries (tenant_id, library_id) VALUES (?, ?)",
                (tenant_id, library_id),
            )
            row = db.execute(sql, (tenant_id, library_id)).fetchone()
        return None if row is None else int(row[0])
