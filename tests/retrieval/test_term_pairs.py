"""Words the query says side by side count together in a hybrid answer: of two passages
holding as many of the query's words, the one holding words that stand next to each other
in the query comes first, even when the model slightly prefers the other. On the local index
and on a real Redis."""

from __future__ import annotations

import pytest
from notes import answer, fill, unit

from holodeck.retrieval import hybrid
from holodeck.retrieval.term_pairs import query_pairs
from holodeck.vectorstore.store import VectorStore

#: Two log entries of the same length, each holding two words of ``wind turbine blade
#: inspection`` once: ``together`` the query's neighbours ``turbine blade``, ``apart`` the
#: words at its two ends (the model prefers it: cosine 0.45 against 0.40); tide tables with
#: none of the query's words, so that its words are rare.
TIDE_TABLES = {f"tide{i}.md": (f"tide tables, page {i}", unit(0.2, 0.9, 0.0)) for i in range(6)}
NOTES = {
    "together.md": ("turbine blade wear noted by the crew", unit(0.40, 0.0, 0.9)),
    "apart.md": ("wind report and inspection notes by crew", unit(0.45, 0.0, 0.0)),
    **TIDE_TABLES,
}


@pytest.fixture
def store(empty_store: VectorStore) -> VectorStore:
    fill(empty_store, NOTES)
    return empty_store


@pytest.mark.redis
def test_words_the_query_says_together_rank_their_holder_first(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranked = answer(store, "wind turbine blade inspection", 8)
    assert ranked[:2] == ["together.md", "apart.md"]
    # the same search scoring each word alone: the model's preference decides
    monkeypatch.setattr(hybrid, "PAIRS", False)
    assert answer(store, "wind turbine blade inspection", 8)[:2] == ["apart.md", "together.md"]


@pytest.mark.redis
def test_the_query_s_word_order_decides_which_words_are_a_pair(store: VectorStore) -> None:
    # said in this order, ``inspection wind`` is the pair and ``turbine blade`` are apart
    assert answer(store, "blade inspection wind turbine", 8)[:2] == ["apart.md", "together.md"]


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
