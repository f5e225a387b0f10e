"""The vector side of the SQLite index: the nearest chunks of a query vector.

Vectors are float32 BLOBs in the ``vectors`` table, searched with numpy: measured at 100k x
384 (benchmarks/README.md), a matrix-vector product over vectors loaded once is several times
faster than sqlite-vec's KNN and needs no SQLite extension. Each process loads a library's
vectors on its first search, then follows the ``changes`` log, so a search after an edit
reads only the rows that changed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from holodeck.vectorstore.adapters import sqlite_query
from holodeck.vectorstore.adapters.sqlite_query import (
    Reader,
    allowed_ids,
    records_by_id,
    scope_libs,
)
from holodeck.vectorstore.records import ChunkFilters, ChunkHit

#: Vectors read per block when a library's matrix is loaded.
LOAD_ROWS = 4096
#: The memory map a matrix is loaded through (the database's first bytes; the rest is read).
LOAD_MMAP_BYTES = 1 << 30


@dataclass
class _Matrix:
    """One library's vectors as loaded by this process: row i is chunk ``ids[i]``."""

    ids: np.ndarray  # int64
    vectors: np.ndarray  # float32, (n, dims)


class VectorIndex:
    """Nearest-vector search over one SQLite index, for one process.

    ``dims`` gives the index's vector length; ``on_rebuilt`` is called when another process
    rebuilt the index (another model, ``--force-ingest``), so the owner re-reads its info.
    """

    def __init__(
        self, reader: Reader, dims: Callable[[], int], on_rebuilt: Callable[[], None]
    ) -> None:
        self._reader = reader
        self._dims = dims
        self._on_rebuilt = on_rebuilt
        self._matrices: dict[int, _Matrix] = {}
        self._seen: tuple[int, int, str] | None = None  # chunks seq, changes seq, epoch
        self._lock = threading.Lock()

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """The ``k`` nearest chunks of the tenant's scope, best first, with their vectors."""
        with self._reader.reading() as db:
            libs = scope_libs(db, tenant_id, filters)
        if not libs or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        ids_parts, score_parts, vector_parts = [], [], []
        for lib in libs:
            matrix = self._matrix(lib)
            rows = np.arange(matrix.ids.size)
            with self._reader.reading() as db:
                allowed = allowed_ids(db, lib, filters)
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
        with self._reader.reading() as db:
            records = records_by_id(db, ids[best].tolist())
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
        parts = sqlite_query.id_ranges(0, vectors.shape[0] - 1, self._reader.read_workers())
        if len(parts) == 1:
            return vectors @ query
        found = self._reader.read_pool().map(
            lambda part: np.einsum("ij,j->i", vectors[part[0] : part[1] + 1], query), parts
        )
        return np.concatenate(list(found))

    def _matrix(self, lib: int) -> _Matrix:
        """The library's vectors in memory, brought up to date with what is committed."""
        with self._lock, self._reader.reading() as db:
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
            self._on_rebuilt()
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
        dims = self._dims()
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


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best scores, best first (ties: the earlier row first)."""
    cut = np.argpartition(-scores, k - 1)[:k] if scores.size > k else np.arange(scores.size)
    return cut[np.lexsort((cut, -scores[cut]))]
