"""The npz index of release 0.1.0 (memory + local adapters, verbatim), kept only so
`bench_local_index.py` can measure the SQLite index against it side by side in one run.
Not part of the product. The classes are renamed (0.1.0 called them ``MemoryIndexAdapter``
and ``LocalIndexAdapter``) so no name means two things."""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations


import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from holodeck.errors import IngestError
from holodeck.vectorstore.records import ChunkFilters, ChunkHit, ChunkRecord, DocState, IndexInfo


class NpzMemoryIndex:
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
    return rec.tenant_id == tenant_id and f.admits(rec)


import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock, Timeout

from holodeck.errors import IngestError
from holodeck.vectorstore.records import ChunkRecord, DocState, IndexInfo

INDEX_FILE = "index.npz"
FORMAT_VERSION = 1


class NpzIndex(NpzMemoryIndex):
    """A memory index loaded from and saved to one folder."""

    backend = "local"

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self._dirty_since_flush = False
        self._load()

    @property
    def path(self) -> Path:
        """The index file."""
        return self.folder / INDEX_FILE

    def _index_label(self) -> str:
        return str(self.folder)

    # Every write marks the index dirty so ``flush`` knows there is something to save.
    def create(self, info: IndexInfo) -> None:
        if self._info is None:
            self._dirty_since_flush = True
        super().create(info)

    def recreate(self, info: IndexInfo) -> None:
        super().recreate(info)
        self._dirty_since_flush = True

    def upsert(self, records: Any) -> None:
        super().upsert(records)
        self._dirty_since_flush = True

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        removed = super().delete_by_doc(tenant_id, library_id, doc_id)
        self._dirty_since_flush |= removed > 0
        return removed

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        moved = super().move_book(tenant_id, book_id, library_id)
        self._dirty_since_flush |= moved > 0
        return moved

    def drop_library(self, tenant_id: str, library_id: str) -> int:
        self._dirty_since_flush = True
        return super().drop_library(tenant_id, library_id)

    def set_doc_state(self, tenant_id: str, library_id: str, state: DocState) -> None:
        super().set_doc_state(tenant_id, library_id, state)
        self._dirty_since_flush = True

    def delete_doc_state(self, tenant_id: str, library_id: str, doc_id: str) -> None:
        super().delete_doc_state(tenant_id, library_id, doc_id)
        self._dirty_since_flush = True

    @contextmanager
    def library_lock(self, tenant_id: str, library_id: str, timeout: float) -> Iterator[None]:
        """A file lock beside the index: one writing process at a time."""
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.folder / ".lock"))
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise IngestError(
                f"another ingest of library {library_id!r} is running (lock {lock.lock_file}); "
                f"waited {timeout:.0f} s"
            ) from None
        try:
            self._load()  # the other writer may have saved while we waited
            yield
        finally:
            lock.release()

    def flush(self) -> None:
        """Save a new snapshot atomically (write a temp file, fsync, rename)."""
        if not self._dirty_since_flush:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        ids = list(self._records)
        dims = self._info.dimensions if self._info else 0
        vectors = (
            np.stack([self._records[c].vector for c in ids])
            if ids
            else np.zeros((0, dims), dtype=np.float32)
        )
        meta = {
            "version": FORMAT_VERSION,
            "info": asdict(self._info) if self._info else None,
            "records": [_record_meta(self._records[c]) for c in ids],
            "states": [
                {"tenant": t, "library": lib, "docs": [asdict(s) for s in docs.values()]}
                for (t, lib), docs in self._states.items()
            ],
        }
        blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
        tmp = self.folder / f".{INDEX_FILE}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            np.savez(fh, vectors=vectors, meta=blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        self._dirty_since_flush = False

    def _load(self) -> None:
        """Read the last snapshot, if any (a missing folder is an empty index)."""
        self._records.clear()
        self._states.clear()
        self._info = None
        self._dirty()
        if not self.path.is_file():
            return
        try:
            with np.load(self.path, allow_pickle=False) as data:
                vectors = data["vectors"].astype(np.float32, copy=False)
                meta = json.loads(data["meta"].tobytes().decode("utf-8"))
        except (OSError, ValueError, KeyError) as exc:
            raise IngestError(
                f"{self.path}: the local index cannot be read ({exc}); delete the folder "
                f"{self.folder} and run `holodeck ingest --force-ingest` to rebuild it"
            ) from exc
        if meta.get("info"):
            self._info = IndexInfo(**meta["info"])
        for i, rec in enumerate(meta["records"]):
            self._records[rec["chunk_id"]] = ChunkRecord(vector=vectors[i], **rec)
        for group in meta["states"]:
            self._states[(group["tenant"], group["library"])] = {
                d["doc_id"]: DocState(**d) for d in group["docs"]
            }
        self._dirty_since_flush = False


def _record_meta(rec: ChunkRecord) -> dict[str, Any]:
    """A record's fields without its vector (the vector goes into the matrix)."""
    return {f.name: getattr(rec, f.name) for f in fields(rec) if f.name != "vector"}
