"""``VectorStore``: the tenant-filtered vector index of the knowledge-base chunks.

It checks, the adapter stores (the storage contract, docs/contract.md). Nothing enters the
index that cannot be compared with what is there: a batch with a record of another tenant,
or a vector of another model or length than the index, is refused whole before any write. A
search with a query vector of another length is refused; an empty library scope finds nothing
without asking the adapter. Who owns a library is ``holodeck.ownership``'s to decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

import numpy as np

from holodeck.vectorstore.adapter import IndexAdapter
from holodeck.vectorstore.errors import (
    MODEL_MISMATCH,
    QUERY_DIMENSION_MISMATCH,
    TENANT_MISMATCH,
    StoreError,
)
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkHit,
    ChunkRecord,
    DocState,
    IndexInfo,
)


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
        self._check(tenant_id, records)
        self.adapter.upsert(records)

    def write_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> int:
        """Replace one document: its state and old chunks go, ``records`` and ``state`` come in.

        One transaction where the backend has them (``local``, ``memory``); elsewhere in an
        order a re-run repairs (state last). ``records`` are checked like ``upsert_chunks``
        before anything changes. Returns the number of old chunks removed.
        """
        if records:
            self._check(tenant_id, records)
        return self.adapter.replace_document(tenant_id, library_id, doc_id, records, state)

    def append_to_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> None:
        """Add a later slice of a document written in slices; its earlier slices stay.

        A big file is stored slice by slice so a crash loses at most one slice: the first
        goes through ``write_document`` without a state (the old chunks go), later ones come
        here, and the last brings ``state``. Until then the document has no state, so a run
        after a crash redoes it, reusing the vectors of the slices already stored.
        """
        if records:
            self._check(tenant_id, records)
        self.adapter.append_to_document(tenant_id, library_id, doc_id, records, state)

    def remove_document(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        """Take a document out: its state and chunks go together. Returns chunks removed."""
        return self.adapter.replace_document(tenant_id, library_id, doc_id, [], None)

    def _check(self, tenant_id: str, records: Sequence[ChunkRecord]) -> None:
        """Refuse the batch on a record of another tenant, model or vector length."""
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

    def keyword_search(
        self, tenant_id: str, query: str, k: int, filters: ChunkFilters | None = None
    ) -> list[ChunkHit]:
        """The ``k`` best BM25 matches of ``query``'s words inside the tenant's scope.

        Scores are BM25 (higher is better, not bounded); an empty library scope finds nothing
        without asking the adapter, as in ``search``.
        """
        filters = filters or ChunkFilters()
        if filters.library_ids is not None and len(filters.library_ids) == 0:
            return []
        if k <= 0 or self.adapter.describe() is None:
            return []
        return self.adapter.keyword_search(tenant_id, query, k, filters)

    def keyword_scale(self, query: str) -> float:
        """What a chunk holding each of ``query``'s keyword terms once scores in BM25 (the
        sum of their IDFs); 0 for a new index or a query with nothing to ask."""
        return 0.0 if self.adapter.describe() is None else self.adapter.keyword_scale(query)

    def keyword_idfs(self, words: Sequence[str]) -> dict[str, float]:
        """Each word's IDF in the keyword side's BM25, keyed by ``casefold`` (empty for a new
        index)."""
        return {} if self.adapter.describe() is None else self.adapter.keyword_idfs(words)

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters | None = None
    ) -> list[ChunkHit]:
        """Chunks inside the tenant's scope that hold ``identifier`` (a compound such as
        ``max_retries``) whole, at most ``limit`` of them (score 0: a lookup, not a rank)."""
        filters = filters or ChunkFilters()
        if filters.library_ids is not None and len(filters.library_ids) == 0:
            return []
        if limit <= 0 or self.adapter.describe() is None:
            return []
        return self.adapter.identifier_holders(tenant_id, identifier, limit, filters)

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        """Remove every chunk of one document; 0 for an unknown document."""
        return self.adapter.delete_by_doc(tenant_id, library_id, doc_id)

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        """Move a book to another library: metadata only, the vectors stay."""
        return self.adapter.move_book(tenant_id, book_id, library_id)

    # -- pass-through: what the ingest pipeline reads and maintains ----------------------
    def rebuild(self, info: IndexInfo) -> None:
        """Drop the whole index and create it for ``info`` (a changed embedding model)."""
        self.adapter.recreate(info)

    def total_count(self) -> int:
        """Chunks in the whole index, every tenant and library."""
        return self.adapter.total_count()

    def count(self, tenant_id: str, library_id: str) -> int:
        """Chunks of one library."""
        return self.adapter.count(tenant_id, library_id)

    def doc_states(self, tenant_id: str, library_id: str) -> dict[str, DocState]:
        """What the index knows of each stored document of a library."""
        return self.adapter.doc_states(tenant_id, library_id)

    def doc_stats(self, tenant_id: str, library_id: str) -> dict[str, tuple[float, int]]:
        """Each stored document's (mtime, size), by id: what a check for changes compares."""
        return self.adapter.doc_stats(tenant_id, library_id)

    def set_doc_state(self, tenant_id: str, library_id: str, state: DocState) -> None:
        """Record a document whose chunks are already stored (a touched file)."""
        self.adapter.set_doc_state(tenant_id, library_id, state)

    def doc_chunks(self, tenant_id: str, library_id: str, doc_id: str) -> list[ChunkRecord]:
        """The stored chunks of one document with their vectors, in order (for reuse)."""
        return self.adapter.get_doc_chunks(tenant_id, library_id, doc_id)

    def doc_ids(self, tenant_id: str, library_id: str) -> set[str]:
        """Documents that have chunks in a library (to find orphans)."""
        return self.adapter.doc_ids(tenant_id, library_id)

    def library_lock(
        self, tenant_id: str, library_id: str, timeout: float
    ) -> AbstractContextManager[None]:
        """Held by an ingest: two ingests of one library never interleave."""
        return self.adapter.library_lock(tenant_id, library_id, timeout)

    def batch(self) -> AbstractContextManager[None]:
        """Writes of the block committed together (a window of files: one commit, not one
        per file); each document in it is still stored whole or not at all."""
        return self.adapter.batch()

    def flush(self) -> None:
        """End of an ingest: let the backend tidy up (nothing is left unsaved before)."""
        self.adapter.flush()
