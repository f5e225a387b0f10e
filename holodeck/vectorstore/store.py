"""``VectorStore``: the tenant-filtered vector index of the knowledge-base chunks (seed 004).

It checks, the adapter stores. Nothing enters the index that cannot be compared with what is
there: a batch with a record of another tenant, or a vector of another model or length than
the index, is refused whole before any write. A search with a query vector of another length
is refused; an empty library scope finds nothing without asking the adapter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from holodeck.vectorstore.adapters.base import IndexAdapter
from holodeck.vectorstore.errors import (
    MODEL_MISMATCH,
    QUERY_DIMENSION_MISMATCH,
    TENANT_MISMATCH,
    StoreError,
)
from holodeck.vectorstore.records import ChunkFilters, ChunkHit, ChunkRecord, IndexInfo


class VectorStore:
    """Checks tenant, model and vector length, then passes through to the adapter."""

    def __init__(self, adapter: IndexAdapter) -> None:
        self.adapter = adapter

    def describe_index(self) -> IndexInfo | None:
        """The embedding model and vector length the index was created with (None if new)."""
        return self.adapter.describe()

    def upsert_chunks(self, tenant_id: str, records: Sequence[ChunkRecord]) -> None:
        """Store the chunks of a document; the whole batch is refused on any bad record."""
        if not records:
            return
        for rec in records:
            if rec.tenant_id != tenant_id:
                raise StoreError(
                    TENANT_MISMATCH,
                    f"chunk {rec.chunk_id} belongs to tenant {rec.tenant_id!r}, "
                    f"not {tenant_id!r}; nothing was written",
                )
        info = self.adapter.describe()
        if info is None:
            first = records[0]
            info = IndexInfo(first.embedding_model, int(np.asarray(first.vector).shape[-1]))
            self.adapter.create(info)
        for rec in records:
            length = int(np.asarray(rec.vector).shape[-1])
            if rec.embedding_model != info.embedding_model or length != info.dimensions:
                raise StoreError(
                    MODEL_MISMATCH,
                    f"chunk {rec.chunk_id} was embedded with {rec.embedding_model} "
                    f"({length} dims) but the index holds {info.embedding_model} "
                    f"({info.dimensions} dims); nothing was written",
                )
        self.adapter.upsert(records)

    def search(
        self,
        tenant_id: str,
        vector: np.ndarray,
        k: int,
        filters: ChunkFilters | None = None,
    ) -> list[ChunkHit]:
        """The ``k`` nearest chunks of ``tenant_id`` inside ``filters``, best first."""
        filters = filters or ChunkFilters()
        if filters.library_ids is not None and len(filters.library_ids) == 0:
            return []
        info = self.adapter.describe()
        length = int(np.asarray(vector).shape[-1])
        if info is not None and length != info.dimensions:
            raise StoreError(
                QUERY_DIMENSION_MISMATCH,
                f"query vector has {length} dims but the index holds {info.dimensions}",
            )
        if info is None or k <= 0:
            return []
        return self.adapter.search(tenant_id, np.asarray(vector, dtype=np.float32), k, filters)

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        """Remove every chunk of one document; 0 for an unknown document."""
        return self.adapter.delete_by_doc(tenant_id, library_id, doc_id)

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        """Move a book to another library: metadata only, the vectors stay."""
        return self.adapter.move_book(tenant_id, book_id, library_id)
