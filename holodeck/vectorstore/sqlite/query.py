"""The SQL both search sides of the SQLite index share: the tenant's scope, the filters, rows
read back as records, and how a large search is cut into parts.

Every read starts from ``scope_libs``: the integer ids of the tenant's libraries inside the
filters. Nothing here writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

import numpy as np

from holodeck.text.analysis import idents_text, words_text
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, indexed_text

#: A search is cut into parts worked on at once by the read threads (the keyword side in
#: ranges of row ids, each on its own connection; the vector product in ranges of matrix
#: rows) when each part would span at least this many rows.
PARALLEL_MIN_ROWS = 20_000

T = TypeVar("T")

CHUNK_COLUMNS = (
    "c.id, c.chunk_id, l.tenant_id, l.library_id, c.book_id, c.doc_id, c.chunk_index, "
    "c.content, c.embedding_model, c.source_path, c.mtime, c.content_hash, c.token_count, "
    "c.tags, c.language, c.location, c.section"
)
#: The vector of a record read without one (shared: read-only, and replaced, never changed).
_NO_VECTOR = np.zeros(0, dtype=np.float32)
_NO_VECTOR.flags.writeable = False
#: Position of the vector's bytes in a row of ``CHUNK_COLUMNS`` followed by ``v.vector``.
VECTOR_COLUMN = 17


class Reader(Protocol):
    """What a search side needs from the index: this thread's connection, and threads
    that read parts of one search, each on its own connection."""

    def reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def read_pool(self) -> ThreadPoolExecutor: ...

    def read_workers(self) -> int: ...


def in_snapshot(reader: Reader, read: Callable[[sqlite3.Connection], T]) -> T:
    """``read`` inside one read transaction: every look it takes sees the same commit."""
    with reader.reading() as db:
        db.execute("BEGIN")
        try:
            return read(db)
        finally:
            db.execute("COMMIT")


def scope_libs(db: sqlite3.Connection, tenant_id: str, filters: ChunkFilters) -> list[int]:
    """The tenant's libraries inside ``filters``: every search starts from these."""
    if filters.library_ids is not None and not filters.library_ids:
        return []
    rows = db.execute(
        "SELECT id, library_id FROM libraries WHERE tenant_id = ? ORDER BY id", (tenant_id,)
    ).fetchall()
    wanted = None if filters.library_ids is None else set(filters.library_ids)
    return [lib for lib, name in rows if wanted is None or name in wanted]


def library_count(db: sqlite3.Connection) -> int:
    """Libraries of every tenant in the index."""
    return int(db.execute("SELECT count(*) FROM libraries").fetchone()[0])


def filter_sql(f: ChunkFilters) -> tuple[str, list[Any]]:
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


def allowed_ids(db: sqlite3.Connection, lib: int, f: ChunkFilters) -> np.ndarray | None:
    """Row ids of a library that pass the book, tag and language filters (None: all)."""
    where, args = filter_sql(f)
    if not where:
        return None
    rows = db.execute(f"SELECT id FROM chunks c WHERE c.lib = ?{where}", (lib, *args))
    return np.array([r[0] for r in rows], dtype=np.int64)


def records_by_id(
    db: sqlite3.Connection, ids: list[int], with_vectors: bool = False
) -> dict[int, ChunkRecord]:
    """Records by row id; vectors only when asked (a dense search has them already)."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    vector, join = (", v.vector", " JOIN vectors v ON v.id = c.id") if with_vectors else ("", "")
    rows = db.execute(
        f"SELECT {CHUNK_COLUMNS}{vector} FROM chunks c "
        f"JOIN libraries l ON l.id = c.lib{join} WHERE c.id IN ({marks})",
        ids,
    ).fetchall()
    return {row[0]: record(row, row[VECTOR_COLUMN] if with_vectors else None) for row in rows}


def record(row: Sequence[Any], blob: bytes | None) -> ChunkRecord:
    """A ChunkRecord from a row of ``CHUNK_COLUMNS`` (and its vector's bytes, if read)."""
    vector = np.frombuffer(blob, dtype=np.float32).copy() if blob is not None else _NO_VECTOR
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
        tags=json.loads(row[13]) if row[13] != "[]" else [],  # most chunks: no tags
        language=row[14],
        location=row[15],
        section=row[16],
    )


def keyword_columns(content: str, section: str) -> tuple[str, str]:
    """The ``words`` and ``idents`` a chunk is indexed by: those of its heading path and
    text (``indexed_text``)."""
    text = indexed_text(content, section)
    return words_text(text), " ".join(idents_text(text))


def id_ranges(first: int, last: int, parts: int) -> list[tuple[int, int]]:
    """``[first, last]`` (row ids, or matrix rows) cut into at most ``parts`` ranges of at
    least PARALLEL_MIN_ROWS (one range when it is small)."""
    parts = max(1, min(parts, (last - first + 1) // PARALLEL_MIN_ROWS))
    step = (last - first + 1 + parts - 1) // parts
    return [(lo, min(lo + step - 1, last)) for lo in range(first, last + 1, step)]
