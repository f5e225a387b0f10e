"""A library's vectors read out of SQLite into one matrix, in blocks through a memory map:
what exact search scans, what a vector index file is trained on and filled from."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Vectors read per block when a library's matrix is loaded.
LOAD_ROWS = 4096
#: The memory map a matrix is loaded through (the database's first bytes; the rest is read).
LOAD_MMAP_BYTES = 1 << 30


@dataclass
class Matrix:
    """Vectors loaded by this process: row i is chunk ``ids[i]``."""

    ids: np.ndarray  # int64
    vectors: np.ndarray  # float32, (n, dims)
    _order: np.ndarray | None = None  # ids' sorting positions, made when first asked

    def rows_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``ids`` this matrix holds (a mask), and their rows."""
        if self.ids.size == 0 or ids.size == 0:
            return np.zeros(ids.size, dtype=bool), np.zeros(0, dtype=np.int64)
        if self._order is None:
            self._order = np.argsort(self.ids)
        at = np.minimum(np.searchsorted(self.ids, ids, sorter=self._order), self.ids.size - 1)
        rows = self._order[at]
        held = self.ids[rows] == ids
        return held, rows[held]


def load(
    db: sqlite3.Connection, lib: int, dims: int, where: str = "", args: tuple[Any, ...] = ()
) -> Matrix:
    """Read vectors of one library into a preallocated matrix (no per-row copies kept).
    Counted on the chunks' index (one row per vector) so the vectors are read once."""
    count = f"SELECT count(*) FROM chunks WHERE lib = ? {where}"
    n = db.execute(count, (lib, *args)).fetchone()[0]
    ids = np.empty(n, dtype=np.int64)
    vectors = np.empty((n, dims), dtype=np.float32)
    end = 0
    for block in blocks(
        db, f"SELECT id, vector FROM vectors WHERE lib = ? {where}", (lib, *args), n
    ):
        start, end = end, end + len(block)
        ids[start:end] = [row_id for row_id, _ in block]
        data = b"".join(blob for _, blob in block)
        vectors[start:end] = np.frombuffer(data, dtype=np.float32).reshape(-1, dims)
    return Matrix(ids[:end], vectors[:end])


def blocks(
    db: sqlite3.Connection, sql: str, args: tuple[Any, ...], n: int, rows: int = LOAD_ROWS
) -> Iterator[list[tuple[int, bytes]]]:
    """The rows of ``sql`` (at most ``n``) in blocks, read through a memory map (no read
    call per page), unmapped after: the mapped pages would stay counted in the process's
    memory beside the matrix."""
    db.execute(f"PRAGMA mmap_size = {LOAD_MMAP_BYTES}")
    try:
        cursor = db.execute(sql, args)
        done = 0
        while done < n:
            block = cursor.fetchmany(min(rows, n - done))
            if not block:
                break
            done += len(block)
            yield block
        cursor.close()
    finally:
        db.execute("PRAGMA mmap_size = 0")
