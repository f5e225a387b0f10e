"""The reranker hook: a reranker given to ``retrieve`` decides the order of the best chunks."""

from __future__ import annotations

import numpy as np

from holodeck.retrieval.hybrid import retrieve
from holodeck.retrieval.passages import Scored
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.store import VectorStore


def test_a_reranker_reorders_the_best_chunks() -> None:
    store = VectorStore(MemoryIndexAdapter())
    rng = np.random.default_rng(0)
    for word in ["alpha", "beta", "gamma"]:
        vec = rng.normal(size=8).astype(np.float32)
        rec = ChunkRecord(
            chunk_id=chunk_id_for("t", "kb", f"{word}.md", 0),
            tenant_id="t", library_id="kb", book_id=".", doc_id=f"{word}.md", chunk_index=0,
            content=f"{word} notes", vector=vec / np.linalg.norm(vec), embedding_model="m",
            source_path=f"{word}.md", mtime=1.0, content_hash=word, token_count=2,
        )  # fmt: skip
        store.write_document("t", "kb", rec.doc_id, [rec], DocState(rec.doc_id, 1, 1, word, 1))
    query = rng.normal(size=8).astype(np.float32)
    scope = ChunkFilters(library_ids=["kb"])
    plain, _ = retrieve(store, "t", "notes", query, 3, scope)
    seen: list[str] = []

    def backwards(text: str, ranked: list[Scored]) -> list[Scored]:
        seen.append(text)
        order = list(reversed(ranked))
        return [Scored(s.record, 1.0 - i / 10, s.similarity) for i, s in enumerate(order)]

    reranked, _ = retrieve(store, "t", "notes", query, 3, scope, rerank=backwards)
    assert seen == ["notes"]
    assert [p.best.record.doc_id for p in reranked] == [
        p.best.record.doc_id for p in reversed(plain)
    ]
