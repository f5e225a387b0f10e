"""The local index's keyword side scores only the rows that can reach the top k (MaxScore):
its answer is the one scoring every match gives, row for row and score for score, on a
corpus where a question's common words match most rows and many rows tie."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.sqlite import fulltext as sqlite_fulltext
from holodeck.vectorstore.store import VectorStore

#: Words by how common they are: the first in most chunks, the last in a few.
WORDS = [f"w{i}" for i in range(60)]
WEIGHTS = [1.0 / (i + 1) ** 1.1 for i in range(60)]
QUESTIONS = [
    "w0 w1 w2 w40",
    "w0 w3 w5 w8 w13 w21 w34 w55",
    "w1 w1 w2 w50 w59",  # a repeated word counts twice
    "w2 w7 w30 w31 w32 w33",
    "w0 w1 w2 w3 w4 w5",  # only common words: nothing to prune, still the same
    "w45 max_retries w0 w6",  # a compound (its own column, weight 2)
]


def record(library: str, doc: str, text: str, seed: int) -> ChunkRecord:
    vector = np.random.default_rng(seed).normal(size=4).astype(np.float32)
    return ChunkRecord(
        chunk_id=chunk_id_for("t", library, doc, 0), tenant_id="t", library_id=library,
        book_id=f"b{seed % 3}", doc_id=doc, chunk_index=0, content=text,
        vector=vector / np.linalg.norm(vector), embedding_model="m", source_path=doc,
        mtime=1.0, content_hash=doc, token_count=len(text.split()),
    )  # fmt: skip


@pytest.fixture(autouse=True)
def prune_small_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    """This corpus is small: prune it all the same (a real index prunes from 50,000 rows)."""
    monkeypatch.setattr(sqlite_fulltext, "PRUNE_MIN_ROWS", 0)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    rng = random.Random(5)
    texts = []
    for _ in range(1500):
        words = rng.choices(WORDS, WEIGHTS, k=rng.randint(5, 40))
        if rng.random() < 0.05:
            words.append("max_retries")
        texts.append(" ".join(words))
    texts += texts[:300]  # copies: rows that tie
    store = VectorStore(LocalIndexAdapter(Path(tmp_path_factory.mktemp("pruning"))))
    with store.batch():
        for i, text in enumerate(texts):
            library = "kb" if i % 4 else "other"
            rec = record(library, f"d{i}.md", text, i)
            state = DocState(rec.doc_id, 1.0, 1, "h", 1)
            store.write_document("t", library, rec.doc_id, [rec], state)
    return store


def ranking(store: VectorStore, query: str, k: int, filters: ChunkFilters, prune: bool):
    adapter = store.adapter
    assert isinstance(adapter, LocalIndexAdapter)
    counts = sqlite_fulltext.TermCounts()
    hits = sqlite_fulltext.keyword_search(
        adapter, counts, None, "t", query, k, filters, prune=prune
    )
    return [h.record.chunk_id for h in hits], [h.score for h in hits]


@pytest.mark.parametrize(
    "filters",
    [
        ChunkFilters(library_ids=["kb", "other"]),
        ChunkFilters(library_ids=["kb"]),
        ChunkFilters(library_ids=["kb", "other"], book_ids=["b1", "b2"]),
    ],
    ids=["whole index", "one library", "filtered"],
)
@pytest.mark.parametrize("k", [5, 50])
def test_pruned_keyword_search_returns_what_scoring_every_match_returns(
    store: VectorStore, filters: ChunkFilters, k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    split: list[str] = []
    best = sqlite_fulltext._Ranking.best

    def spy(self: sqlite_fulltext._Ranking, *expressions: str) -> list[tuple[int, float]]:
        if len(expressions) > 1:
            split.append(expressions[0])
        return best(self, *expressions)

    monkeypatch.setattr(sqlite_fulltext._Ranking, "best", spy)
    for query in QUESTIONS:
        pruned_ids, pruned_scores = ranking(store, query, k, filters, prune=True)
        full_ids, full_scores = ranking(store, query, k, filters, prune=False)
        assert pruned_ids == full_ids, query
        assert pruned_scores == pytest.approx(full_scores, rel=1e-12, abs=0.0), query
        assert len(full_ids) == k
    # the common words were left out of the candidates for most questions: the test ran
    # the pruned path, not the full one under another name
    assert len(split) >= len(QUESTIONS) // 2


def test_a_new_chunk_is_found_and_counted_straight_after_its_write(store: VectorStore) -> None:
    # the term counts a search keeps must follow a write (here: a word no chunk held)
    scope = ChunkFilters(library_ids=["kb"])
    assert store.keyword_search("t", "zebrafish", 5, scope) == []
    rec = record("kb", "zebra.md", "zebrafish w0 w1", 99_999)
    store.write_document("t", "kb", rec.doc_id, [rec], DocState(rec.doc_id, 1.0, 1, "h", 1))
    try:
        hits = store.keyword_search("t", "zebrafish", 5, scope)
        assert [h.record.doc_id for h in hits] == ["zebra.md"]
        assert store.keyword_scale("zebrafish") > store.keyword_scale("w0")
    finally:
        store.write_document("t", "kb", rec.doc_id, [], None)
    assert store.keyword_search("t", "zebrafish", 5, scope) == []
