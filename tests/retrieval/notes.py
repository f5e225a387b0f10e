"""One-chunk notes with vectors made by hand, written to a store as an ingest would: for
tests that need to place each note's cosine with the query exactly."""

from __future__ import annotations

import numpy as np

from holodeck.vectorstore.records import ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.store import VectorStore


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
