"""The interface an index backend implements. Adapters store; ``VectorStore`` checks.

Adapters trust their caller: tenant, model and vector-length checks happen in the store.
Every method that reads or removes chunks filters by tenant (and library where given): the
index is shared, and an adapter that drops the tenant filter leaks data.
Scores returned by ``search`` are cosine similarities of the (L2-normalised) vectors,
clamped to [0, 1], whatever the backend's distance metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from holodeck.vectorstore.records import ChunkFilters, ChunkHit, ChunkRecord, DocState, IndexInfo


class IndexAdapter(Protocol):
    """Storage of chunk records and per-document state for one index."""

    #: Short name shown to users: ``memory``, ``local`` or ``redis``.
    backend: str

    def describe(self) -> IndexInfo | None:
        """Model and vector length the index was created with; ``None`` for a new index.

        Called before every write and search: answer from memory.
        """
        ...

    def create(self, info: IndexInfo) -> None:
        """Create the (empty) index for ``info``; a no-op when it exists with the same info."""
        ...

    def recreate(self, info: IndexInfo) -> None:
        """Drop the whole index (every tenant's chunks and states) and create it for ``info``."""
        ...

    def total_count(self) -> int:
        """Number of chunks in the whole index, all tenants and libraries."""
        ...

    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Insert or replace ``records`` by chunk id."""
        ...

    def replace_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> int:
        """The document's state and chunks go, ``records`` and ``state`` come in.

        In one transaction where the backend has them; otherwise state first out, last in, so
        an interruption leaves a document without state that the next run re-ingests.
        Returns the number of old chunks removed.
        """
        ...

    def append_to_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> None:
        """Add ``records`` (a later slice of ``doc_id``) without removing any chunk; then
        record ``state`` when given. In one transaction where the backend has them."""
        ...

    def preload(self, tenant_id: str, filters: ChunkFilters) -> None:
        """Read now what a search of this scope will need (a shell search does it while its
        model opens); nothing for a store that keeps nothing in the process."""
        ...

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """The ``k`` nearest chunks of ``tenant_id`` inside ``filters``, best first."""
        ...

    def keyword_search(
        self, tenant_id: str, query: str, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """The ``k`` best BM25 matches of ``query``'s words (``holodeck.text.analysis``
        builds the backend's expression) inside ``filters``, best first, records with their
        vectors. Scores are BM25, higher is better."""
        ...

    def keyword_scale(self, query: str) -> float:
        """The BM25 a chunk of average length gets for holding each of ``query``'s terms once
        (as often as ``query_terms`` asks them): the sum of their IDFs as this backend's BM25
        computes them (over the whole index). 0 when nothing is asked. Fusion divides the
        best match's BM25 by it to see how much of the query that match covers."""
        ...

    def keyword_idfs(self, words: Sequence[str]) -> dict[str, float]:
        """Each word's IDF as this backend's BM25 computes it (over the whole index), keyed
        by ``casefold``: what keyword feedback and term pairs weigh a word by, asked at once."""
        ...

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """At most ``limit`` chunks inside ``filters`` holding the compound ``identifier``
        whole (case-insensitive), records with their vectors."""
        ...

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        """Remove every chunk of one document; returns how many were removed."""
        ...

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        """Set ``library_id`` on every chunk of the book; returns how many changed."""
        ...

    def get_doc_chunks(self, tenant_id: str, library_id: str, doc_id: str) -> list[ChunkRecord]:
        """The stored chunks of one document (with vectors), in chunk order."""
        ...

    def doc_states(self, tenant_id: str, library_id: str) -> dict[str, DocState]:
        """State of every document of one library, by document id."""
        ...

    def doc_stats(self, tenant_id: str, library_id: str) -> dict[str, tuple[float, int]]:
        """Each document's stored (mtime, size), by document id: ``doc_states`` cut to what
        a check for changed files compares (a shell search checks every file against it)."""
        ...

    def set_doc_state(self, tenant_id: str, library_id: str, state: DocState) -> None:
        """Record a document as fully stored. Written only after its chunks."""
        ...

    def delete_doc_state(self, tenant_id: str, library_id: str, doc_id: str) -> None:
        """Forget a document's state. Done before its chunks change, so a crash re-ingests it."""
        ...

    def count(self, tenant_id: str, library_id: str) -> int:
        """Number of chunks stored for one library of one tenant."""
        ...

    def drop_library(self, tenant_id: str, library_id: str) -> int:
        """Remove every chunk and document state of one library; returns chunks removed."""
        ...

    def doc_ids(self, tenant_id: str, library_id: str) -> set[str]:
        """Ids of every document that has chunks in one library (to find orphans)."""
        ...

    def library_owner(self, tenant_id: str, library_id: str) -> dict[str, str] | None:
        """Who fills one library (as ``set_library_owner`` recorded it); None if unrecorded."""
        ...

    def set_library_owner(self, tenant_id: str, library_id: str, owner: dict[str, str]) -> None:
        """Record (replace) who fills one library; kept by ``recreate``, which drops chunks."""
        ...

    def stats(self, tenant_id: str, library_id: str) -> dict[str, Any]:
        """What ``holodeck store info`` shows for one library, with the same keys everywhere.

        ``backend``, ``url`` (redacted; None when local), ``index`` (name or folder),
        ``algorithm``, ``metric``, ``embedding_model``, ``dimensions`` (None for a new index),
        ``documents`` (with a stored state) and ``chunks`` of this tenant and library.
        """
        ...

    def library_lock(
        self, tenant_id: str, library_id: str, timeout: float
    ) -> AbstractContextManager[None]:
        """Held by an ingest so two ingests of one library never interleave.

        Waits at most ``timeout`` seconds, then raises ``IngestError`` saying who holds it.
        """
        ...

    def batch(self) -> AbstractContextManager[None]:
        """Writes of the block committed together where the backend has transactions (each
        document still whole or not at all); write-through backends just run the block."""
        ...

    def flush(self) -> None:
        """Make what was written durable (a no-op for backends that write through)."""
        ...

    def close(self) -> None:
        """Release connections, locks and files."""
        ...
