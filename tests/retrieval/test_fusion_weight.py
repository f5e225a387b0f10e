"""How much the keyword side counts in a hybrid answer follows how sure each side is: a
model whose best chunk stands out keeps it first; an unsure one lets a chunk holding every
word of the query come first. And the keyword side's scale (the summed IDFs of the query's
terms) is what BM25 gives a chunk holding each of them once, on both stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_hybrid_search import project, ready_tool

from holodeck.retrieval import fusion
from holodeck.retrieval.fusion import fuse, keyword_weight
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkHit,
    ChunkRecord,
    DocState,
    chunk_id_for,
)
from holodeck.vectorstore.store import VectorStore

QUERY = "kestrel falcon"


def note(doc: str, text: str, cos: float) -> ChunkRecord:
    """A one-chunk note whose vector has cosine ``cos`` with the query's (the x axis)."""
    return ChunkRecord(
        chunk_id=chunk_id_for("t", "kb", doc, 0), tenant_id="t", library_id="kb",
        book_id=".", doc_id=doc, chunk_index=0, content=text,
        vector=np.array([cos, np.sqrt(1 - cos**2), 0.0], dtype=np.float32),
        embedding_model="m", source_path=doc, mtime=1.0, content_hash=doc, token_count=6,
    )  # fmt: skip


def store_with(cosines: dict[str, float]) -> VectorStore:
    """Six-word notes whose vectors have the given cosine with the query's (the x axis)."""
    texts = {
        "birds.md": "notes on birds hunting in winter",
        "match.md": "kestrel falcon seen near the coast",
        **{f"bread{i}.md": f"bread recipe number {i} with rye" for i in range(10)},
    }
    store = VectorStore(MemoryIndexAdapter())
    for doc, text in texts.items():
        rec = note(doc, text, cosines.get(doc, cosines["other"]))
        store.write_document("t", "kb", doc, [rec], DocState(doc, 1.0, 1, doc, 1))
    return store


def first(store: VectorStore) -> str:
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    passages, _ = retrieve(store, "t", QUERY, query, 3, ChunkFilters(library_ids=["kb"]))
    return passages[0].best.record.doc_id


def test_a_sure_model_keeps_its_best_chunk_first() -> None:
    # the model's best stands out from the rest by 0.40: the keyword match counts little
    assert first(store_with({"birds.md": 0.70, "match.md": 0.45, "other": 0.30})) == "birds.md"


def test_a_model_sure_on_a_lower_scale_is_as_sure() -> None:
    # the same scores halved (a model whose cosines keep to a lower range): its best chunk
    # stands out as much, as a share of its best, and stays first
    assert first(store_with({"birds.md": 0.35, "match.md": 0.225, "other": 0.15})) == "birds.md"


def test_an_unsure_model_lets_a_full_keyword_match_come_first() -> None:
    # the model's top scores lie within 0.06 of each other: the keyword side decides
    assert first(store_with({"birds.md": 0.50, "match.md": 0.45, "other": 0.44})) == "match.md"


def test_a_chunk_the_cut_keyword_list_left_out_gets_half_its_lowest_score(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fusion, "FEEDBACK_WEIGHT", 0.0)  # the fusion's scores before feedback
    # the keyword side listed two chunks (BM25 10 and 8) and was cut there: the model's own
    # candidate may hold the words less, or not at all; it is scored half of the lowest
    listed = [ChunkHit(note(f"k{i}.md", "kestrel", 0.3), s) for i, s in enumerate((10.0, 8.0))]
    dense = [ChunkHit(note(f"d{i}.md", "bread", 0.6 - i / 100), 0.6 - i / 100) for i in range(10)]
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    weight = keyword_weight(dense, 10.0, 10.0)
    assert weight > 0
    scores = {s.record.doc_id: s.score for s in fuse(dense, listed, query, "hybrid", 2, scale=10.0)}
    for i in range(10):
        cos = 0.6 - i / 100
        assert scores[f"d{i}.md"] == pytest.approx((1 - weight) * cos + weight * 0.4, abs=1e-6)
    # a list that held every match: what it left out holds none of the words
    scores = {s.record.doc_id: s.score for s in fuse(dense, listed, query, "hybrid", 3, scale=10.0)}
    assert scores["d0.md"] == pytest.approx((1 - weight) * 0.6, abs=1e-6)


@pytest.mark.redis
def test_the_keyword_scale_is_the_bm25_of_a_chunk_holding_every_term(
    tmp_path: Path, backend: str, database: str
) -> None:
    # equal-length notes: a chunk holding each query term once scores the scale exactly
    docs = {f"n{i}.md": f"plain words about topic number {i}" for i in range(8)}
    docs["both.md"] = "kestrel falcon words about topic number"
    docs["one.md"] = "falcon plain words about topic number"
    docs["other.md"] = "falcon plain words about the topic"
    tool = ready_tool(project(tmp_path, docs, database))
    try:
        store, tenant = tool.store, tool.project.tenant_id
        scope = ChunkFilters(library_ids=[tool.name])
        scale = store.keyword_scale(QUERY)
        hits = {h.record.doc_id: h.score for h in store.keyword_search(tenant, QUERY, 10, scope)}
        # (the Query Engine's own statistics count replaced chunks until its garbage
        # collection runs, so its BM25 drifts from the live counts a little after rewrites)
        tolerance = 1e-6 if backend == "local" else 0.35
        assert hits["both.md"] == pytest.approx(scale, rel=tolerance)
        # "falcon" is held by three notes, "kestrel" by one: one word is far less of the query
        assert hits["one.md"] < 0.5 * scale
    finally:
        tool.close()
