"""The keyword side of the SQLite index: FTS5 ranks by BM25 and returns its best rows itself.

``holodeck.vectorstore.keywords`` says what a query asks (terms, identifiers); this module
says how FTS5 is asked for it: inside the tenant's scope, ``ORDER BY`` the BM25 score with a
``LIMIT``, so only the best rows leave SQLite and only those are read back as records.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from holodeck.vectorstore.adapters import sqlite_query
from holodeck.vectorstore.adapters.sqlite_query import (
    Reader,
    filter_sql,
    library_count,
    records_by_id,
    scope_libs,
)
from holodeck.vectorstore.keywords import (
    fts5_expression,
    fts5_identifier,
    fts5_phrase,
    is_compound,
    query_terms,
)
from holodeck.vectorstore.records import ChunkFilters, ChunkHit

#: Column weights of ``bm25()``: ``words``, then ``idents`` (a compound counts twice).
_BM25 = "bm25(chunks_fts, 1.0, 2.0)"


def keyword_search(
    reader: Reader, tenant_id: str, query: str, k: int, filters: ChunkFilters
) -> list[ChunkHit]:
    """BM25 over the full-text index inside the tenant's scope (score: higher is better).

    A large index is searched in parts of its row ids at once, each on its own
    connection: FTS5 scores every row a query's words match (a third of a 100,000-chunk
    index for a long question), and on its own it uses one core.
    """
    expression = fts5_expression(query)
    if k <= 0 or expression is None:
        return []
    with reader.reading() as db:
        scope_of = _scope(db, tenant_id, filters)
        if scope_of is None:
            return []
        libs, where, args = scope_of
        if not where and len(libs) == library_count(db):
            # The usual case, one library per index: no join to filter by library.
            sql = (
                f"SELECT rowid, -{_BM25} AS score FROM chunks_fts "
                "WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? "
                "ORDER BY score DESC, rowid LIMIT ?"
            )
            scope: tuple[Any, ...] = ()
        else:
            sql = (
                f"SELECT c.id, -{_BM25} AS score FROM chunks_fts "
                "JOIN chunks c ON c.id = chunks_fts.rowid "
                f"WHERE chunks_fts MATCH ? AND c.lib IN ({','.join('?' * len(libs))}){where} "
                "AND chunks_fts.rowid BETWEEN ? AND ? ORDER BY score DESC, c.id LIMIT ?"
            )
            scope = (*libs, *args)
        first, last = db.execute("SELECT min(id), max(id) FROM chunks").fetchone()
    if first is None:
        return []

    def ranked_part(lo: int, hi: int) -> list[tuple[int, float]]:
        with reader.reading() as part_db:
            return part_db.execute(sql, (expression, *scope, lo, hi, k)).fetchall()

    parts = sqlite_query.id_ranges(first, last, reader.read_workers())
    if len(parts) == 1:
        ranked = ranked_part(*parts[0])
    else:
        found = reader.read_pool().map(lambda part: ranked_part(*part), parts)
        ranked = sorted((row for rows in found for row in rows), key=_best_first)[:k]
    with reader.reading() as db:
        records = records_by_id(db, [row_id for row_id, _ in ranked], with_vectors=True)
    return [ChunkHit(records[i], float(score)) for i, score in ranked if i in records]


def keyword_scale(reader: Reader, query: str) -> float:
    """The sum of the query terms' IDFs as FTS5's ``bm25()`` computes them (each phrase's
    matching rows over all rows), a compound weighed as its column (``idents``: 2)."""
    terms = query_terms(query)
    if not terms:
        return 0.0
    with reader.reading() as db:
        total = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        hits = {
            t.casefold(): int(
                db.execute(
                    "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (fts5_phrase(t),)
                ).fetchone()[0]
            )
            for t in terms
        }
    return sum((2.0 if is_compound(t) else 1.0) * _idf(total, hits[t.casefold()]) for t in terms)


def _idf(total: int, hits: int) -> float:
    """FTS5's BM25 IDF (fts5_aux.c): never below a millionth, even for a word most rows hold."""
    return max(1e-6, math.log((total - hits + 0.5) / (hits + 0.5)))


def identifier_holders(
    reader: Reader, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
) -> list[ChunkHit]:
    """Chunks of the tenant's scope holding ``identifier`` whole (at most ``limit``)."""
    if limit <= 0:
        return []
    with reader.reading() as db:
        scope_of = _scope(db, tenant_id, filters)
        if scope_of is None:
            return []
        libs, where, args = scope_of
        sql = (
            "SELECT c.id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? AND c.lib IN ({','.join('?' * len(libs))}){where} "
            "ORDER BY c.id LIMIT ?"
        )
        ids = [r[0] for r in db.execute(sql, (fts5_identifier(identifier), *libs, *args, limit))]
        records = records_by_id(db, ids, with_vectors=True)
    return [ChunkHit(records[i], 0.0) for i in ids if i in records]


def _scope(
    db: sqlite3.Connection, tenant_id: str, filters: ChunkFilters
) -> tuple[list[int], str, list[Any]] | None:
    """The tenant's libraries inside ``filters`` and the filters' SQL (None: no library)."""
    libs = scope_libs(db, tenant_id, filters)
    if not libs:
        return None
    where, args = filter_sql(filters)
    return libs, where, args


def _best_first(row: tuple[int, float]) -> tuple[float, int]:
    """Order of ranked rows: best score first, ties by row id (as the SQL orders them)."""
    return -row[1], row[0]
