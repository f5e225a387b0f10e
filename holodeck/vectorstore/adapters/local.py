"""``local``: the embedded default. The memory index, persisted under ``.holodeck/index/``.

The whole index is one ``index.npz`` file (vectors plus JSON metadata) replaced atomically,
so a reader never sees half a write and a crash leaves the previous snapshot: chunks and the
per-document state that says they are complete are always saved together, and a re-run
repairs whatever the crash cut short. A file lock keeps two writers apart.
"""

from __future__ import annotations

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
from holodeck.vectorstore.adapters.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import ChunkRecord, DocState, IndexInfo

INDEX_FILE = "index.npz"
FORMAT_VERSION = 1


class LocalIndexAdapter(MemoryIndexAdapter):
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
