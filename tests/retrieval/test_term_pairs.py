"""Words the query says side by side count together in a hybrid answer: of two passages
holding as many of the query's words, the one holding words that stand next to each other
in the query comes first, even when the model slightly prefers the other. On the local index
and on a real Redis."""

from __future__ import annotations

import numpy as np
import pytest
from notes import fill

from holodeck.retrieval import hybrid
from holodeck.retrieval.hybrid import retrieve
from holodeck.retrieval.term_pairs import query_pairs
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore

#: The query's vector: the first axis. Vectors are unit vectors in four dimensions.
QUERY_VECTOR = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def unit(x: float, y: float, z: float) -> np.ndarray:
    return np.array([x, y, z, np.sqrt(max(0.0, 1 - x * x - y * y - z * z))], dtype=np.float32)


#: Two log entries of the same length, each holding two words of ``wind turbine blade
#: inspection`` once: ``together`` the query's neighbours ``turbine blade``, ``apart`` the
#: words at its two ends (the model prefers it: cosine 0.45 against 0.40); tide tables with
#: none of the query's words, so that its words are rare.
NOTES = {
    "together.md": ("turbine blade wear noted by the crew", unit(0.40, 0.0, 0.9)),
    "apart.md": ("wind report and inspection notes by crew", unit(0.45, 0.0, 0.0)),
    **{
        f"tide{i}.md": (f"tide tables for the harbour, page {i}", unit(0.2, 0.9, 0.0))
        for i in range(6)
    },
}


@pytest.fixture
def store(empty_store: VectorStore) -> VectorStore:
    fill(empty_store, NOTES)
    return empty_store


def ranking(store: VectorStore, query: str) -> list[str]:
    scope = ChunkFilters(library_ids=["kb"])
    passages, _ = retrieve(store, "t", query, QUERY_VECTOR, 8, scope, "hybrid")
    return [p.best.record.doc_id for p in passages]


@pytest.mark.redis
def test_words_the_query_says_together_rank_their_holder_first(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranked = ranking(store, "wind turbine blade inspection")
    assert ranked[:2] == ["together.md", "apart.md"]
    # the same search scoring each word alone: the model's preference decides
    monkeypatch.setattr(hybrid, "PAIRS", False)
    assert ranking(store, "wind turbine blade inspection")[:2] == ["apart.md", "together.md"]


@pytest.mark.redis
def test_the_query_s_word_order_decides_which_words_are_a_pair(store: VectorStore) -> None:
    # said in this order, ``inspection wind`` is the pair and ``turbine blade`` are apart
    assert ranking(store, "blade inspection wind turbine")[:2] == ["apart.md", "together.md"]


def test_pairs_are_neighbours_among_the_query_s_keyword_terms() -> None:
    assert query_pairs("measurement of dielectric constant of liquids") == [
        ("measur", "dielectr"),
        ("dielectr", "constant"),
        ("constant", "liquid"),
    ]
    # a word said twice in a row is no pair with itself; an identifier counts by its parts
    assert query_pairs("Retry retries of the max_retries setting") == [
        ("retri", "max"),
        ("max", "retri"),
        ("retri", "set"),
    ]
    assert query_pairs("kestrel") == []
    assert query_pairs("how did it") == []
