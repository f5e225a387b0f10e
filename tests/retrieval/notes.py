"""One-chunk notes with vectors made by hand, written to a store as an ingest would: for
tests that need to place each note's cosine with the query exactly."""

from __future__ import annotations

import numpy as np

from holodeck.retrieval.fusion import SearchMode
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.store import VectorStore

#: The query's vector: the first axis. Vectors are unit vectors in four dimensions.
QUERY_VECTOR = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def unit(x: float, y: float, z: float) -> np.ndarray:
    """The unit vector with these first three coordinates (the fourth makes up the rest)."""
    return np.array([x, y, z, np.sqrt(max(0.0, 1 - x * x - y * y - z * z))], dtype=np.float32)


def answer(
    store: VectorStore,
    query: str,
    k: int,
    mode: SearchMode = "hybrid",
    min_similarity: float | None = None,
) -> list[str]:
    """The documents of the ``k`` best passages for ``query`` (its vector ``QUERY_VECTOR``)
    in library ``kb`` of tenant ``t``, best first."""
    scope = ChunkFilters(library_ids=["kb"])
    passages, _ = retrieve(store, "t", query, QUERY_VECTOR, k, scope, mode, min_similarity)
    return [p.best.record.doc_id for p in passages]


def note(doc: str, text: str, vector: np.ndarray) -> ChunkRecord:
    """A one-chunk document of tenant ``t``, library ``kb``."""
    return ChunkRecord(
        chunk_id=chunk_id_for("t", "kb", doc, 0), tenant_id="t", library_id="kb",
        book_id=".", doc_id=doc, chunk_index=0, content=text, vector=vector,
        embedding_model="m", source_path=f"docs/{doc}", mtime=1.0, content_hash=doc,
        token_count=10,
    )  # fmt: skip


def fill(store: VectorStore, notes: dict[str, tuple[str, np.ndarray]]) -> None:
    """Each ``doc -> (text, vector)`` written as ``note`` makes it."""
    for doc, (text, vector) in notes.items():
        store.write_document(
            "t", "kb", doc, [note(doc, text, vector)], DocState(doc, 1.0, 1, doc, 1)
        )
