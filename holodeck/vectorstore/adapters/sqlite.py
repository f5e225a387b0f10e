"""The SQL every SQLite-backed index shares: ``local`` (a file) and ``memory`` (volatile).

A document's old chunks, vectors, full-text rows and state change in one transaction
(``replace_document``), so an interruption leaves the last committed documents intact and the
next run repairs the rest, and a write costs that document's rows, never a rewrite.

Vectors are float32 BLOBs searched with numpy: measured at 100k x 384 (benchmarks/README.md),
a matrix-vector product over vectors loaded once is several times faster than sqlite-vec's
KNN and needs no SQLite extension (many Pythons cannot load one). Each process loads a
library's vectors on its first search, then follows the ``changes`` log, so a search after an
edit reads only the rows that changed. Every read filters by the tenant's library ids.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from holodeck.errors import IngestError
from holodeck.vectorstore.keywords import (
    fts5_expression,
    fts5_identifier,
    idents_text,
    words_text,
)
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkHit,
    ChunkRecord,
    DocState,
    IndexInfo,
    chunk_id_for,
)

#: A search is cut into parts worked on at once by the read threads (the keyword side in
#: ranges of row ids, each on its own connection; the vector product in ranges of matrix
#: rows) when each part would span at least this many rows.
PARALLEL_MIN_ROWS = 20_000
#: Entries of the ``changes`` log kept after an ingest; a reader further behind reloads.
CHANGES_KEPT = 100_000
#: Vectors read per block when a library's matrix is loaded.
LOAD_ROWS = 4096
#: The memory map a matrix is loaded through (the database's first bytes; the rest is read).
LOAD_MMAP_BYTES = 1 << 30

_CHUNK_COLUMNS = (
    "c.id, c.chunk_id, l.tenant_id, l.library_id, c.book_id, c.doc_id, c.chunk_index, "
    "c.content, c.embedding_model, c.source_path, c.mtime, c.content_hash, c.token_count, "
    "c.tags, c.language, c.location"
)


@dataclass
class _Matrix:
    """One library's vectors as loaded by this process: row i is chunk ``ids[i]``."""

    ids: np.ndarray  # int64
    vectors: np.ndarray  # float32, (n, dims)


class SqliteIndexAdapter:
    """``IndexAdapter`` on SQLite; subclasses say where the database is and who may write."""

    backend = "sqlite"

    def __init__(self) -> None:
        self._info: IndexInfo | None = None
        self._matrices: dict[int, _Matrix] = {}
        self._seen: tuple[int, int, str] | None = None  # chunks seq, changes seq, epoch
        self._cache_lock = threading.Lock()
        self._batching = threading.local()  # .active: this thread is inside batch()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

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
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection; SQLite failures become one line naming the index."""
        try:
            yield self._db()
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    def _db(self) -> sqlite3.Connection:
        """The connection of the calling thread."""
        raise NotImplementedError

    def _read_workers(self) -> int:
        """How many connections may read at once for one search (1: no pool)."""
        return 1

    def _read_pool(self) -> ThreadPoolExecutor:
        """Threads that read parts of one search, each on its own connection."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._read_workers(), thread_name_prefix="holodeck-read"
                )
            return self._pool

    def _stop_pool(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def _failure(self, exc: sqlite3.Error) -> Exception:
        """The error a user sees for a failed SQLite call."""
        return IngestError(f"the index failed: {exc}")

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction: everything in the block is committed together, or nothing.

        Inside ``batch`` it joins the batch's transaction (begun by the first write), and a
        failure rolls the whole batch back. Not a savepoint per document: FTS5 writes its
        pending rows out at every savepoint, which made each file its own index segment.
        """
        with self._reading() as db:
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
        instead of one per file (benchmarks/README.md). Every document in it is whole or
        not there: a failure rolls the batch back, and the next ingest redoes its files.
        Nothing is locked until the first write."""
        with self._reading() as db:
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

    def _read_info(self) -> IndexInfo | None:
        with self._reading() as db:
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
            for table in ("documents", "vectors", "chunks", "changes", "meta"):
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
        with self._reading() as db:
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
        caller has looked up already."""
        libs = dict(libs or {})
        for rec in records:
            key = (rec.tenant_id, rec.library_id)
            if key not in libs:
                lib = self._lib(db, *key, create=True)
                assert lib is not None
                libs[key] = lib
            own = (rec.tenant_id, rec.library_id, rec.doc_id) == cleared and rec.chunk_id == (
                chunk_id_for(rec.tenant_id, rec.library_id, rec.doc_id, rec.chunk_index)
            )
            if not own:
                self._delete_chunks(db, "chunk_id = ?", (rec.chunk_id,))
            cur = db.execute(
                "INSERT INTO chunks (chunk_id, lib, book_id, doc_id, chunk_index, content, "
                "embedding_model, source_path, mtime, content_hash, token_count, tags, language, "
                "location) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    rec.chunk_id, libs[key], rec.book_id, rec.doc_id, int(rec.chunk_index),
                    rec.content, rec.embedding_model, rec.source_path, float(rec.mtime),
                    rec.content_hash, int(rec.token_count), json.dumps(rec.tags), rec.language,
                    rec.location,
                ),
            )  # fmt: skip
            vector = np.asarray(rec.vector, dtype=np.float32).tobytes()
            db.execute("INSERT INTO vectors VALUES (?, ?, ?)", (cur.lastrowid, libs[key], vector))
            db.execute(
                "INSERT INTO chunks_fts (rowid, words, idents) VALUES (?, ?, ?)",
                (cur.lastrowid, *_keyword_columns(rec.content)),
            )

    def _delete_doc(self, db: sqlite3.Connection, lib: int, doc_id: str) -> int:
        return self._delete_chunks(db, "lib = ? AND doc_id = ?", (lib, doc_id))

    def _delete_chunks(self, db: sqlite3.Connection, where: str, args: tuple[Any, ...]) -> int:
        """Delete the chunks matching ``where`` with their vectors and full-text rows (the
        contentless full-text table forgets a row only when told the words it indexed)."""
        rows = db.execute(f"SELECT id, content FROM chunks WHERE {where}", args).fetchall()
        for row_id, content in rows:
            db.execute(
                "INSERT INTO chunks_fts (chunks_fts, rowid, words, idents) "
                "VALUES ('delete', ?, ?, ?)",
                (row_id, *_keyword_columns(content)),
            )
        ids = [(row_id,) for row_id, _ in rows]
        db.executemany("DELETE FROM vectors WHERE id = ?", ids)
        db.executemany("DELETE FROM chunks WHERE id = ?", ids)
        return len(rows)

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        libs = self._scope_libs(tenant_id, filters)
        if not libs or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        ids_parts, score_parts, vector_parts = [], [], []
        for lib in libs:
            matrix = self._matrix(lib)
            rows = np.arange(matrix.ids.size)
            allowed = self._allowed_ids(lib, filters)
            if allowed is not None:
                rows = rows[np.isin(matrix.ids, allowed)]
            if rows.size == 0:
                continue
            scores = self._similarities(
                matrix.vectors[rows] if allowed is not None else matrix.vectors, query
            )
            top = _top(scores, k)
            ids_parts.append(matrix.ids[rows[top]])
            score_parts.append(scores[top])
            vector_parts.append(matrix.vectors[rows[top]])
        if not ids_parts:
            return []
        ids = np.concatenate(ids_parts)
        scores = np.concatenate(score_parts)
        vectors = np.concatenate(vector_parts)
        best = _top(scores, k)
        records = self._records(ids[best].tolist())
        hits = []
        for i in best:
            rec = records.get(int(ids[i]))
            if rec is not None:  # deleted since the matrix was read
                rec.vector = vectors[i].copy()
                hits.append(ChunkHit(rec, float(np.clip(scores[i], 0.0, 1.0))))
        return hits

    def _similarities(self, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
        """``vectors @ query``; a large matrix in parts on the read threads.

        Not OpenBLAS's own threads: they spin on the cores for a while after each product,
        which slowed the keyword side of a hybrid search running beside it by a fifth.
        """
        parts = _id_ranges(0, vectors.shape[0] - 1, self._read_workers())
        if len(parts) == 1:
            return vectors @ query
        found = self._read_pool().map(
            lambda part: np.einsum("ij,j->i", vectors[part[0] : part[1] + 1], query), parts
        )
        return np.concatenate(list(found))

    def keyword_search(
        self, tenant_id: str, query: str, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """BM25 over the full-text index inside the tenant's scope (score: higher is better).

        A large index is searched in parts of its row ids at once, each on its own
        connection: FTS5 scores every row a query's words match (a third of a 100,000-chunk
        index for a long question), and on its own it uses one core.
        """
        libs = self._scope_libs(tenant_id, filters)
        expression = fts5_expression(query)
        if not libs or k <= 0 or expression is None:
            return []
        with self._reading() as db:
            where, args = _filter_sql(filters)
            if not where and len(libs) == self._library_count(db):
                # The usual case, one library per index: no join to filter by library.
                sql = (
                    "SELECT rowid, -bm25(chunks_fts, 1.0, 2.0) AS score FROM chunks_fts "
                    "WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? "
                    "ORDER BY score DESC, rowid LIMIT ?"
                )
                scope: tuple[Any, ...] = ()
            else:
                sql = (
                    "SELECT c.id, -bm25(chunks_fts, 1.0, 2.0) AS score FROM chunks_fts "
                    "JOIN chunks c ON c.id = chunks_fts.rowid "
                    f"WHERE chunks_fts MATCH ? AND c.lib IN ({','.join('?' * len(libs))}){where} "
                    "AND chunks_fts.rowid BETWEEN ? AND ? ORDER BY score DESC, c.id LIMIT ?"
                )
                scope = (*libs, *args)
            first, last = db.execute("SELECT min(id), max(id) FROM chunks").fetchone()
        if first is None:
            return []

        def ranked_part(lo: int, hi: int) -> list[tuple[int, float]]:
            with self._reading() as part_db:
                return part_db.execute(sql, (expression, *scope, lo, hi, k)).fetchall()

        parts = _id_ranges(first, last, self._read_workers())
        if len(parts) == 1:
            ranked = ranked_part(*parts[0])
        else:
            found = self._read_pool().map(lambda part: ranked_part(*part), parts)
            ranked = sorted((row for rows in found for row in rows), key=_best_first)[:k]
        records = self._records([row_id for row_id, _ in ranked], with_vectors=True)
        return [ChunkHit(records[i], float(score)) for i, score in ranked if i in records]

    def _library_count(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT count(*) FROM libraries").fetchone()[0])

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """Chunks of the tenant's scope holding ``identifier`` whole (at most ``limit``)."""
        libs = self._scope_libs(tenant_id, filters)
        if not libs or limit <= 0:
            return []
        where, args = _filter_sql(filters)
        sql = (
            "SELECT c.id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? AND c.lib IN ({','.join('?' * len(libs))}){where} "
            "ORDER BY c.id LIMIT ?"
        )
        with self._reading() as db:
            ids = [
                r[0] for r in db.execute(sql, (fts5_identifier(identifier), *libs, *args, limit))
            ]
        records = self._records(ids, with_vectors=True)
        return [ChunkHit(records[i], 0.0) for i in ids if i in records]

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
        with self._reading() as db:
            rows = db.execute(
                f"SELECT {_CHUNK_COLUMNS}, v.vector FROM chunks c "
                "JOIN libraries l ON l.id = c.lib JOIN vectors v ON v.id = c.id "
                "WHERE l.tenant_id = ? AND l.library_id = ? AND c.doc_id = ? "
                "ORDER BY c.chunk_index",
                (tenant_id, library_id, doc_id),
            ).fetchall()
        return [_record(row, row[-1]) for row in rows]

    def count(self, tenant_id: str, library_id: str) -> int:
        with self._reading() as db:
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
        with self._reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is None:
                return set()
            rows = db.execute("SELECT DISTINCT doc_id FROM chunks WHERE lib = ?", (lib,))
            return {row[0] for row in rows}

    # -- ownership ---------------------------------------------------------------------
    def library_owner(self, tenant_id: str, library_id: str) -> dict[str, str] | None:
        """Which source fills a library (None: nobody has claimed it yet)."""
        with self._reading() as db:
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
        with self._reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            if lib is None:
                return {}
            rows = db.execute(
                "SELECT doc_id, mtime, size, content_hash, chunk_count FROM documents "
                "WHERE lib = ?",
                (lib,),
            )
            return {row[0]: DocState(*row) for row in rows}

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
        """Documents and chunks of one library; exact brute-force cosine search."""
        with self._reading() as db:
            lib = self._lib(db, tenant_id, library_id)
            documents = 0
            if lib is not None:
                documents = db.execute(
                    "SELECT count(*) FROM documents WHERE lib = ?", (lib,)
                ).fetchone()[0]
        return {
            "backend": self.backend,
            "url": None,
            "index": self._index_label(),
            "algorithm": "FLAT",
            "metric": "COSINE",
            "embedding_model": self._info.embedding_model if self._info else None,
            "dimensions": self._info.dimensions if self._info else None,
            "documents": int(documents),
            "chunks": self.count(tenant_id, library_id),
        }

    def flush(self) -> None:
        """Every document is committed as it is written; this trims the ``changes`` log."""
        with self._writing() as db:
            db.execute(
                "DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?",
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

    def _scope_libs(self, tenant_id: str, filters: ChunkFilters) -> list[int]:
        """The tenant's libraries inside ``filters``: every search starts from these."""
        if filters.library_ids is not None and not filters.library_ids:
            return []
        with self._reading() as db:
            rows = db.execute(
                "SELECT id, library_id FROM libraries WHERE tenant_id = ? ORDER BY id",
                (tenant_id,),
            ).fetchall()
        wanted = None if filters.library_ids is None else set(filters.library_ids)
        return [lib for lib, name in rows if wanted is None or name in wanted]

    def _allowed_ids(self, lib: int, f: ChunkFilters) -> np.ndarray | None:
        """Row ids of a library that pass the book, tag and language filters (None: all)."""
        where, args = _filter_sql(f)
        if not where:
            return None
        with self._reading() as db:
            rows = db.execute(f"SELECT id FROM chunks c WHERE c.lib = ?{where}", (lib, *args))
            return np.array([r[0] for r in rows], dtype=np.int64)

    def _matrix(self, lib: int) -> _Matrix:
        """The library's vectors in memory, brought up to date with what is committed."""
        with self._cache_lock, self._reading() as db:
            db.execute("BEGIN")  # one snapshot for the look at the log and the reads after it
            try:
                self._follow_changes(db)
                matrix = self._matrices.get(lib)
                if matrix is None:
                    matrix = self._load(db, lib)
                    self._matrices[lib] = matrix
            finally:
                db.execute("COMMIT")
            return matrix

    def _follow_changes(self, db: sqlite3.Connection) -> None:
        """Apply what other connections committed since the last look (cheap when nothing)."""
        seqs = dict(db.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        epoch = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
        now = (int(seqs.get("chunks", 0)), int(seqs.get("changes", 0)), epoch[0] if epoch else "")
        seen, self._seen = self._seen, now
        if seen is None or seen == now:
            return
        if seen[2] != now[2]:  # rebuilt (another model, --force-ingest): start over
            self._matrices.clear()
            self._info = self._read_info()
            return
        if not self._matrices:
            return
        oldest = db.execute("SELECT min(seq) FROM changes").fetchone()[0]
        if now[1] > seen[1] and (oldest if oldest is not None else now[1] + 1) > seen[1] + 1:
            self._matrices.clear()  # the log was trimmed past what we saw: reload
            return
        changed = np.array(
            [r[0] for r in db.execute("SELECT id FROM changes WHERE seq > ?", (seen[1],))],
            dtype=np.int64,
        )
        for lib, matrix in self._matrices.items():
            keep = ~np.isin(matrix.ids, changed) if changed.size else slice(None)
            fresh = self._load(
                db, lib, "AND (id > ? OR id IN (SELECT id FROM changes WHERE seq > ?))",
                (seen[0], seen[1]),
            )  # fmt: skip
            self._matrices[lib] = _Matrix(
                np.concatenate([matrix.ids[keep], fresh.ids]),
                np.concatenate([matrix.vectors[keep], fresh.vectors]),
            )

    def _load(
        self, db: sqlite3.Connection, lib: int, where: str = "", args: tuple[Any, ...] = ()
    ) -> _Matrix:
        """Read vectors of one library into a preallocated matrix (no per-row copies kept).
        Counted on the chunks' index (one row per vector) so the vectors are read once."""
        dims = self._info.dimensions if self._info else 0
        count = f"SELECT count(*) FROM chunks WHERE lib = ? {where}"
        n = db.execute(count, (lib, *args)).fetchone()[0]
        sql = f"FROM vectors WHERE lib = ? {where}"
        ids = np.empty(n, dtype=np.int64)
        vectors = np.empty((n, dims), dtype=np.float32)
        end = 0
        # read through a memory map (no read call per page), unmapped after: the mapped
        # pages would stay counted in the process's memory beside the matrix
        db.execute(f"PRAGMA mmap_size = {LOAD_MMAP_BYTES}")
        try:
            rows = db.execute(f"SELECT id, vector {sql}", (lib, *args))
            while end < n:  # in blocks: one copy per block, not one per row
                block = rows.fetchmany(min(LOAD_ROWS, n - end))
                if not block:
                    break
                start, end = end, end + len(block)
                ids[start:end] = [row_id for row_id, _ in block]
                data = b"".join(blob for _, blob in block)
                vectors[start:end] = np.frombuffer(data, dtype=np.float32).reshape(-1, dims)
            rows.close()
        finally:
            db.execute("PRAGMA mmap_size = 0")
        return _Matrix(ids[:end], vectors[:end])

    def _records(self, ids: list[int], with_vectors: bool = False) -> dict[int, ChunkRecord]:
        """Records by row id; vectors only when asked (a dense search has them in memory)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        vector, join = (
            (", v.vector", " JOIN vectors v ON v.id = c.id") if with_vectors else ("", "")
        )
        with self._reading() as db:
            rows = db.execute(
                f"SELECT {_CHUNK_COLUMNS}{vector} FROM chunks c "
                f"JOIN libraries l ON l.id = c.lib{join} WHERE c.id IN ({marks})",
                ids,
            ).fetchall()
        return {row[0]: _record(row, row[16] if with_vectors else None) for row in rows}


def _keyword_columns(content: str) -> tuple[str, str]:
    """The ``words`` and ``idents`` a chunk's text is indexed by."""
    return words_text(content), " ".join(idents_text(content))


def _filter_sql(f: ChunkFilters) -> tuple[str, list[Any]]:
    """``AND ...`` clauses on chunks ``c`` for the book, tag and language filters."""
    clauses, args = [], []
    if f.book_ids is not None:
        clauses.append(f"c.book_id IN ({','.join('?' * len(f.book_ids))})")
        args += list(f.book_ids)
    if f.tags is not None:
        marks = ",".join("?" * len(f.tags))
        clauses.append(f"EXISTS (SELECT 1 FROM json_each(c.tags) WHERE value IN ({marks}))")
        args += list(f.tags)
    if f.language is not None:
        clauses.append("c.language = ?")
        args.append(f.language)
    return "".join(f" AND {c}" for c in clauses), args


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best scores, best first (ties: the earlier row first)."""
    cut = np.argpartition(-scores, k - 1)[:k] if scores.size > k else np.arange(scores.size)
    return cut[np.lexsort((cut, -scores[cut]))]


def _record(row: Sequence[Any], blob: bytes | None) -> ChunkRecord:
    """A ChunkRecord from a row of ``_CHUNK_COLUMNS`` (and its vector's bytes, if read)."""
    vector = (
        np.frombuffer(blob, dtype=np.float32).copy()
        if blob is not None
        else np.zeros(0, dtype=np.float32)
    )
    return ChunkRecord(
        chunk_id=row[1],
        tenant_id=row[2],
        library_id=row[3],
        book_id=row[4],
        doc_id=row[5],
        chunk_index=int(row[6]),
        content=row[7],
        vector=vector,
        embedding_model=row[8],
        source_path=row[9],
        mtime=float(row[10]),
        content_hash=row[11],
        token_count=int(row[12]),
        tags=json.loads(row[13]),
        language=row[14],
        location=row[15],
    )


def _id_ranges(first: int, last: int, parts: int) -> list[tuple[int, int]]:
    """``[first, last]`` (row ids, or matrix rows) cut into at most ``parts`` ranges of at
    least PARALLEL_MIN_ROWS (one range when it is small)."""
    parts = max(1, min(parts, (last - first + 1) // PARALLEL_MIN_ROWS))
    step = (last - first + 1 + parts - 1) // parts
    return [(lo, min(lo + step - 1, last)) for lo in range(first, last + 1, step)]


def _best_first(row: tuple[int, float]) -> tuple[float, int]:
    """Order of ranked rows: best score first, ties by row id (as the SQL orders them)."""
    return -row[1], row[0]
