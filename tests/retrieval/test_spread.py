"""A hybrid answer covers the question, not one file: a file's further passages give way to
another file's passage that scores nearly as well, and keep their places when they score
clearly better; the pure modes keep their own ranking. On the local index and on Redis."""

from __future__ import annotations

import dataclasses

import pytest
from notes import QUERY_VECTOR, note, unit

from holodeck.retrieval.fusion import SearchMode
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.records import ChunkFilters, DocState
from holodeck.vectorstore.store import VectorStore

QUERY = "quagga grazing"


def write(store: VectorStore, doc: str, cosines: list[float], text: str = QUERY) -> None:
    """``doc`` with one chunk per cosine, far enough apart never to merge into a passage."""
    records = [
        dataclasses.replace(
            note(doc, f"{text} notes, part {i}", unit(c, (1 - c * c) ** 0.5, 0.0)),
            chunk_index=10 * i,
            chunk_id=f"{doc}#{10 * i}",
        )
        for i, c in enumerate(cosines)
    ]
    store.write_document("t", "kb", doc, records, DocState(doc, 1.0, len(records), doc, 1))


def top5(store: VectorStore, mode: SearchMode = "hybrid") -> list[str]:
    scope = ChunkFilters(library_ids=["kb"])
    passages, _ = retrieve(store, "t", QUERY, QUERY_VECTOR, 5, scope, mode)
    return [p.best.record.doc_id for p in passages]


@pytest.mark.redis
def test_a_near_answer_from_another_file_gets_a_place(empty_store: VectorStore) -> None:
    write(empty_store, "manual.md", [0.80, 0.795, 0.79, 0.785, 0.78])
    write(empty_store, "faq.md", [0.77])
    assert top5(empty_store, "semantic") == ["manual.md"] * 5  # the model alone: one file
    hybrid = top5(empty_store)
    assert hybrid[0] == "manual.md" and "faq.md" in hybrid


@pytest.mark.redis
def test_a_file_that_holds_the_best_answers_keeps_its_places(empty_store: VectorStore) -> None:
    write(empty_store, "manual.md", [0.95, 0.93, 0.91, 0.89, 0.87])
    write(empty_store, "faq.md", [0.45], "striped equids")
    assert top5(empty_store) == ["manual.md"] * 5
