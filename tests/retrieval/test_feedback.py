"""Pseudo-relevance feedback in a hybrid answer: a passage that says what the best matches
say, in none of the query's words, comes before passages that resemble the query only in
passing, and every result still reports its own cosine with the query (what
``min_similarity`` filters by). On the local index and on a real Redis."""

from __future__ import annotations

import pytest
from notes import QUERY_VECTOR, answer, fill, unit

from holodeck.retrieval.fusion import SearchMode
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore

QUERY = "kestrel hovering"
#: Five notes on the query's subject in its words (cosine 0.80 with the query, leaning to
#: the second axis: the subject's other words); the answer written without any of the
#: query's words (cosine 0.55, near the five: 0.94 with each); eight notes that resemble
#: the query a little more (0.60) in another direction (the third axis: 0.48 with the five).
NOTES = {
    **{
        f"kestrel{i}.md": (f"kestrel hovering note {i} over the field", unit(0.8, 0.6, 0.0))
        for i in range(5)
    },
    "answer.md": ("small falcons hang in the wind, wings beating, watching for voles",
                  unit(0.55, 0.835, 0.0)),
    **{
        f"other{i}.md": (f"tide tables for the harbour, page {i}", unit(0.6, 0.0, 0.8))
        for i in range(8)
    },
}  # fmt: skip


@pytest.fixture
def store(empty_store: VectorStore) -> VectorStore:
    fill(empty_store, NOTES)
    return empty_store


def ranking(store: VectorStore, mode: SearchMode, min_similarity: float | None = None) -> list[str]:
    return answer(store, QUERY, 14, mode, min_similarity)


@pytest.mark.redis
def test_an_answer_in_other_words_near_the_best_matches_comes_before_passing_likeness(
    store: VectorStore,
) -> None:
    # the model alone ranks the eight passing likenesses (0.60) over the answer (0.55)
    semantic = ranking(store, "semantic")
    assert semantic.index("answer.md") > max(semantic.index(f"other{i}.md") for i in range(8))
    # hybrid moves the query toward its best matches: the answer comes right after them
    hybrid = ranking(store, "hybrid")
    assert set(hybrid[:5]) == {f"kestrel{i}.md" for i in range(5)}
    assert hybrid[5] == "answer.md"


@pytest.mark.redis
def test_feedback_keeps_each_results_own_cosine_with_the_query(store: VectorStore) -> None:
    scope = ChunkFilters(library_ids=["kb"])
    passages, _ = retrieve(store, "t", QUERY, QUERY_VECTOR, 14, scope, "hybrid")
    cosines = {p.best.record.doc_id: p.similarity for p in passages}
    assert cosines["answer.md"] == pytest.approx(0.55, abs=1e-3)
    assert cosines["other0.md"] == pytest.approx(0.60, abs=1e-3)
    # so min_similarity still means a result's own likeness to the query, not the feedback's
    assert "answer.md" not in ranking(store, "hybrid", min_similarity=0.57)
    assert "other0.md" in ranking(store, "hybrid", min_similarity=0.57)
