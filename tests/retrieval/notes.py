"""One-chunk notes with vectors made by hand, written to a store as an ingest would: for
tests that need to place each note's cosine with the query exactly."""

from __future__ import annotations

import numpy as np

from holodeck.vectorstore.records import ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.store import VectorStore


def fill(store: VectorStore, notes: dict[str, tuple[str, np.ndarray]]) -> None:
    """Each ``doc -> (text, vector)`` as a one-chunk document of tenant ``t``, library ``kb``."""
    for doc, (text, vector) in notes.items():
        rec = ChunkRecord(
            chunk_id=chunk_id_for("t", "kb", doc, 0), tenant_id="t", library_id="kb",
            book_id=".", doc_id=doc, chunk_index=0, content=text, vector=vector,
            embedding_model="m", source_path=f"docs/{doc}", mtime=1.0, content_hash=doc,
            token_count=10,
        )  # fmt: skip
        store.write_document("t", "kb", doc, [rec], DocState(doc, 1.0, 1, doc, 1))
