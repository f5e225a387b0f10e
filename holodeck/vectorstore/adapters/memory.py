"""``memory``: a volatile index in numpy; the reference every other adapter is tested against.

Brute-force cosine over L2-normalised vectors: exact, and at the sizes a project folder
produces (tens of thousands of chunks) a matrix-vector product is milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from holodeck.errors import IngestError
from holodeck.vectorstore.records import ChunkFilters, ChunkHit, ChunkRecord, DocState, IndexInfo


class MemoryIndexAdapter:
    """Chunks in a dict, vectors stacked into one matrix on demand for search."""

    backend = "memory"

    def __init__(self) -> None:
        self._info: IndexInfo | None = None
        self._records: dict[str, ChunkRecord] = {}
        self._states: dict[tuple[str, str], dict[str, DocState]] = {}
        self._matrix: np.ndarray | None = None
        self._order: list[str] = []
        self._tenants = np.array([], dtype=object)
        self._libraries = np.array([], dtype=object)
        self._lock = threading.Lock()

    # -- index -------------------------------------------------------------------------
    def describe(self) -> IndexInfo | None:
        return self._info

    def create(self, info: IndexInfo) -> None:
        if self._info is None:
            self._info = info

    def recreate(self, info: IndexInfo) -> None:
        self._records.clear()
        self._states.clear()
        self._info = info
        self._dirty()

    def total_count(self) -> int:
        return len(self._records)

    # -- chunks ------------------------------------------------------------------------
    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        for rec in records:
            vec = np.asarray(rec.vector, dtype=np.float32)
            self._records[rec.chunk_id] = replace(rec, vector=vec)
        self._dirty()

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        if self._matrix is None:
            self._rebuild()
        assert self._matrix is not None
        mask = self._tenants == tenant_id
        if filters.library_ids is not None:
            mask &= np.isin(self._libraries, filters.library_ids)
        if filters.book_ids is not None or filters.tags is not None or filters.language:
            for i in np.flatnonzero(mask):
                mask[i] = _matches(self._records[self._order[i]], tenant_id, filters)
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return []
        scores = self._matrix[idx] @ np.asarray(vector, dtype=np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        return [
            ChunkHit(self._records[self._order[idx[i]]], float(np.clip(scores[i], 0.0, 1.0)))
            for i in top
        ]

    def _rebuild(self) -> None:
        """Stack the vectors and the tenant/library columns searched by every query."""
        self._order = list(self._records)
        records = [self._records[c] for c in self._order]
        dims = self._info.dimensions if self._info else 0
        self._matrix = (
            np.stack([r.vector for r in records])
            if records
            else np.zeros((0, dims), dtype=np.float32)
        )
        self._tenants = np.array([r.tenant_id for r in records], dtype=object)
        self._libraries = np.array([r.library_id for r in records], dtype=object)

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        doomed = [
            c
            for c, r in self._records.items()
            if r.tenant_id == tenant_id and r.library_id == library_id and r.doc_id == doc_id
        ]
        for c in doomed:
            del self._records[c]
        if doomed:
            self._dirty()
        return len(doomed)

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        moved = 0
        for c, r in self._records.items():
            if r.tenant_id == tenant_id and r.book_id == book_id and r.library_id != library_id:
                self._records[c] = replace(r, library_id=library_id)
                moved += 1
        if moved:
            self._dirty()
        return moved

    def get_doc_chunks(self, tenant_id: str, library_id: str, doc_id: str) -> list[ChunkRecord]:
        found = [
            r
            for r in self._records.values()
            if r.tenant_id == tenant_id and r.library_id == library_id and r.doc_id == doc_id
        ]
        return sorted(found, key=lambda r: r.chunk_index)

    def count(self, tenant_id: str, library_id: str) -> int:
        return sum(
            1
            for r in self._records.values()
            if r.tenant_id == tenant_id and r.library_id == library_id
        )

    def drop_library(self, tenant_id: str, library_id: str) -> int:
        doomed = [
            c
            for c, r in self._records.items()
            if r.tenant_id == tenant_id and r.library_id == library_id
        ]
        for c in doomed:
            del self._records[c]
        self._states.pop((tenant_id, library_id), None)
        self._dirty()
        return len(doomed)

    # -- document state ----------------------------------------------------------------
    def doc_states(self, tenant_id: str, library_id: str) -> dict[str, DocState]:
        return dict(self._states.get((tenant_id, library_id), {}))

    def set_doc_state(self, tenant_id: str, library_id: str, state: DocState) -> None:
        self._states.setdefault((tenant_id, library_id), {})[state.doc_id] = state

    def delete_doc_state(self, tenant_id: str, library_id: str, doc_id: str) -> None:
        self._states.get((tenant_id, library_id), {}).pop(doc_id, None)

    def doc_ids(self, tenant_id: str, library_id: str) -> set[str]:
        return {
            r.doc_id
            for r in self._records.values()
            if r.tenant_id == tenant_id and r.library_id == library_id
        }

    def stats(self, tenant_id: str, library_id: str) -> dict[str, Any]:
        """Documents and chunks of one library; exact brute-force cosine search."""
        return {
            "backend": self.backend,
            "url": None,
            "index": self._index_label(),
            "algorithm": "FLAT",
            "metric": "COSINE",
            "embedding_model": self._info.embedding_model if self._info else None,
            "dimensions": self._info.dimensions if self._info else None,
            "documents": len(self._states.get((tenant_id, library_id), {})),
            "chunks": self.count(tenant_id, library_id),
        }

    def _index_label(self) -> str:
        return "(in memory)"

    @contextmanager
    def library_lock(self, tenant_id: str, library_id: str, timeout: float) -> Iterator[None]:
        """One ingest at a time in this process (a volatile index has no other writers)."""
        if not self._lock.acquire(timeout=timeout):
            raise IngestError(
                f"another ingest of library {library_id!r} is running; waited {timeout:.0f} s"
            )
        try:
            yield
        finally:
            self._lock.release()

    def flush(self) -> None:
        """Nothing to persist: memory is volatile by contract."""

    def close(self) -> None:
        """Nothing to release."""

    def _dirty(self) -> None:
        self._matrix = None


def _matches(rec: ChunkRecord, tenant_id: str, f: ChunkFilters) -> bool:
    """Whether a record is inside a tenant's search scope."""
    if rec.tenant_id != tenant_id:
        return False
    if f.library_ids is not None and rec.library_id not in f.library_ids:
        return False
    if f.book_ids is not None and rec.book_id not in f.book_ids:
        return False
    if f.tags is not None and not set(f.tags).intersection(rec.tags):
        return False
    return f.language is None or rec.language == f.language
